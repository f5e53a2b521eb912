"""Documents: finding files (crawl), decoding them, their text and structure (extract, one
dispatch for every format), passages (chunking) and the words keyword search reads (keywords)."""

from oboyu.documents.chunking import Chunk, Chunker
from oboyu.documents.crawl import FileEntry, Skipped, crawl, crawl_part
from oboyu.documents.decoding import decode, read_text_file
from oboyu.documents.extract import Extracted, Unextractable, extract, extract_file, file_type_for, split_lines
from oboyu.documents.keywords import match_spans, term_counts, words

__all__ = [
    "Chunk", "Chunker", "Extracted", "FileEntry", "Skipped", "Unextractable", "crawl", "crawl_part", "decode",
    "extract", "extract_file", "file_type_for", "match_spans", "read_text_file", "split_lines", "term_counts", "words",
]
