"""Documents: finding files (crawl), decoding them, their text and structure (extract, one
dispatch for every format; the readers of each format in `formats`), passages (chunking), the
words keyword search reads (keywords) and the text a person is shown (viewing)."""

from oboyu.documents.chunking import Chunk, Chunker
from oboyu.documents.crawl import FileEntry, Skipped, crawl, crawl_part
from oboyu.documents.decoding import decode
from oboyu.documents.extract import extract, extract_file
from oboyu.documents.extracted import Extracted, Unextractable, split_lines
from oboyu.documents.filetypes import file_type_for
from oboyu.documents.keywords import match_spans, term_counts, words
from oboyu.documents.viewing import Shown, read_document

__all__ = [
    "Chunk", "Chunker", "Extracted", "FileEntry", "Shown", "Skipped", "Unextractable", "crawl", "crawl_part", "decode",
    "extract", "extract_file", "file_type_for", "match_spans", "read_document", "split_lines", "term_counts", "words",
]
