"""The names `oboyu.documents` exports, for type checkers (`X as X`: re-exported); loaded when first asked for (`__init__.py`)."""

from .chunking import Chunk as Chunk
from .chunking import Chunker as Chunker
from .crawl import FileEntry as FileEntry
from .crawl import Skipped as Skipped
from .crawl import crawl as crawl
from .crawl import crawl_part as crawl_part
from .decoding import decode as decode
from .extract import extract as extract
from .extract import extract_file as extract_file
from .extracted import Extracted as Extracted
from .extracted import Unextractable as Unextractable
from .extracted import split_lines as split_lines
from .filetypes import file_type_for as file_type_for
from .keywords import match_spans as match_spans
from .keywords import term_counts as term_counts
from .keywords import words as words
from .viewing import Shown as Shown
from .viewing import read_document as read_document
