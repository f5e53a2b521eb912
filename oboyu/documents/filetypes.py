"""What a file is, by its name or its first bytes: the reader each type gets, why a file has none,
whether bytes are text, and what a part (page, slide, row) is called in each format."""

from __future__ import annotations

import re
from pathlib import PurePath

from oboyu.config import settings
from oboyu.documents.decoding import UndecodableError, decode

MARKDOWN_EXT = {".md", ".markdown", ".mdown", ".mkd", ".mdx"}
TEXT_EXT = {".txt", ".text"}
RST_EXT = {".rst", ".rest"}
CODE_EXT = {
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt",
    ".kts", ".scala", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".m", ".mm",
    ".swift", ".rb", ".php", ".pl", ".pm", ".lua", ".r", ".jl", ".hs", ".ml", ".ex", ".exs",
    ".erl", ".clj", ".dart", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql", ".vue", ".svelte",
    ".css", ".scss", ".toml", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".tex", ".el", ".vim",
}

# the other formats, by extension; each type has one reader in `extract.READERS`
FORMAT_EXT = {
    ".html": "html", ".htm": "html", ".xhtml": "html", ".pdf": "pdf",
    ".docx": "docx", ".docm": "docx", ".dotx": "docx", ".odt": "odt", ".ott": "odt",
    ".pptx": "pptx", ".pptm": "pptx", ".ppsx": "pptx", ".odp": "odp",
    ".xlsx": "spreadsheet", ".xlsm": "spreadsheet", ".xlsb": "spreadsheet", ".xls": "spreadsheet", ".ods": "spreadsheet",
    ".csv": "csv", ".tsv": "csv", ".tab": "csv", ".epub": "epub", ".eml": "email", ".mbox": "mbox",
    ".rtf": "rtf", ".json": "json", ".ipynb": "notebook", ".org": "org",
}
OLD_BINARY = {
    ".doc": "old binary Word format: save it as .docx to index it",
    ".dot": "old binary Word format: save it as .docx to index it",
    ".ppt": "old binary PowerPoint format: save it as .pptx to index it",
    ".pps": "old binary PowerPoint format: save it as .pptx to index it",
}
UNSUPPORTED = "unsupported file type"
SOURCE_TYPES = {"markdown", "text", "rst", "code", "org"}  # the text is the file; an editor opens it at a line
CODE_NAMES = {"Makefile", "Dockerfile", "CMakeLists.txt", "Gemfile", "Rakefile", "Justfile", "Vagrantfile"}
# what a part is in each format, for locations: (one, several)
PART_UNITS = {
    "pdf": ("p.", "pp."), "pptx": ("slide", "slides"), "odp": ("slide", "slides"), "spreadsheet": ("row", "rows"),
    "csv": ("row", "rows"), "docx": ("¶", "¶"), "odt": ("¶", "¶"), "epub": ("chapter", "chapters"),
    "mbox": ("message", "messages"), "notebook": ("cell", "cells"),
}


def file_type_for(path: PurePath) -> str | None:
    """The reader a file gets by its name (the user's `file_types` setting first), or None
    when we do not index it. A name without an extension (`README`, `memo`) is read as text
    when its first bytes are text (`looks_like_text`)."""
    ext = path.suffix.lower().rstrip()  # `memo.txt ` (a trailing space Windows would have dropped) is a .txt
    extra = settings().file_types.get(ext)
    if extra is not None:
        return extra
    if ext in MARKDOWN_EXT:
        return "markdown"
    if ext in TEXT_EXT:
        return "text"
    if ext in RST_EXT:
        return "rst"
    if ext in FORMAT_EXT:
        return FORMAT_EXT[ext]
    if ext in CODE_EXT or path.name in CODE_NAMES:
        return "code"
    if not ext and path.name:
        return "text"
    return None


def unsupported_reason(path: PurePath) -> str:
    """Why a file with no reader is not indexed."""
    return OLD_BINARY.get(path.suffix.lower(), UNSUPPORTED)


def part_location(file_type: str, first: int | None, last: int | None) -> str:
    """`p. 3`, `slides 4-6`, `rows 12-30`: where a passage is in a paged or tabular format."""
    if first is None:
        return ""
    one, several = PART_UNITS.get(file_type, ("p.", "pp."))
    return f"{one} {first}" if last in (None, first) else f"{several} {first}-{last}"


def looks_binary(data: bytes) -> bool:
    """A NUL anywhere (not only in the first blocks) outside UTF-16/32 text marked by its BOM."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf", b"\x00\x00\xfe\xff")):
        return False
    return b"\x00" in data


SNIFF_BYTES = 4096
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")


def looks_like_text(sample: bytes) -> bool:
    """The first bytes of a file without an extension: text when they hold no NUL, decode, and
    at most 1% of their characters are control characters."""
    if looks_binary(sample):
        return False
    try:
        text = decode(sample).text
    except UndecodableError:
        return False
    return len(_CONTROL.findall(text)) <= 0.01 * max(1, len(text))


def sniffed_type(sample: bytes) -> str | None:
    """The type of a file without an extension from its first bytes: a mailbox (as Thunderbird
    keeps them, `Inbox`), text, or None (not text)."""
    if sample.startswith(b"From ") and re.search(rb"\n(?:From|Subject|Date|Message-ID):", sample[:SNIFF_BYTES], re.IGNORECASE):
        return "mbox"
    return "text" if looks_like_text(sample) else None
