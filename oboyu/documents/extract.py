"""Text and structure out of a file: blocks (headings, paragraphs, code, rows) with their lines.

`extract_file` is the one dispatch from a file's bytes and type to its text, for every format.
For the source types (Markdown, plain text, reStructuredText, Org and source code) the text is
the decoded file, so offsets and lines are the file's own. Every other format (`documents.formats`)
is rendered to text whose lines are what previews, `read` and results' lines show.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
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


# the other formats, by extension; each type has one reader in `extract_file`
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
    ext = path.suffix.lower()
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
    return OLD_BINARY.get(path.suffix.lower(), "unsupported file type")


def part_location(file_type: str, first: int | None, last: int | None) -> str:
    """`p. 3`, `slides 4-6`, `rows 12-30`: where a passage is in a paged or tabular format."""
    if first is None:
        return ""
    one, several = PART_UNITS.get(file_type, ("p.", "pp."))
    return f"{one} {first}" if last in (None, first) else f"{several} {first}-{last}"


@dataclass
class Block:
    text: str
    start_char: int
    end_char: int
    start_line: int
    end_line: int
    heading_level: int = 0  # > 0 for a heading of that level
    kind: str = "text"  # text | heading | code
    exact: bool = True  # text is source[start_char:end_char], so sentence lines can be computed


@dataclass
class Extracted:
    text: str  # what character offsets refer to
    blocks: list[Block] = field(default_factory=list)
    title: str | None = None
    # (offset in `text`, number) where each page, slide, row, chapter, ... begins
    parts: list[tuple[int, int]] = field(default_factory=list)

    @functools.cached_property
    def _part_offsets(self) -> list[int]:
        return [offset for offset, _ in self.parts]

    def parts_between(self, start: int, end: int) -> tuple[int | None, int | None]:
        """The numbers of the parts the text from `start` to `end` spans (None, None: no parts)."""
        if not self.parts:
            return None, None
        offsets = self._part_offsets
        first = max(0, bisect.bisect_right(offsets, start) - 1)
        last = max(0, bisect.bisect_right(offsets, max(start, end - 1)) - 1)
        return self.parts[first][1], self.parts[last][1]


class Unextractable(Exception):
    """A file whose text cannot be had; the message says why (for the skipped list)."""


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


def extract_file(data: bytes, file_type: str, name: str = "") -> tuple[Extracted, str]:
    """A file's text and structure from its bytes, and its encoding (the format's name for
    formats that are not text). `name` is the file's name, for readers that look at it."""
    from oboyu.documents.formats.readers import READERS  # imported here: the readers build on this module

    reader = READERS.get(file_type)
    if reader is not None:
        if not data:  # a new, never-saved document (Windows' New > Word Document makes 0 bytes): empty, not corrupt
            return Extracted("", []), file_type
        return reader(data, name)
    if looks_binary(data):
        raise Unextractable("binary file")
    try:
        decoded = decode(data)
    except UndecodableError as exc:
        raise Unextractable(f"cannot decode: {exc}") from exc
    return extract(decoded.text, file_type), decoded.encoding


def extract(text: str, file_type: str) -> Extracted:
    """The structure of a decoded text file (or web page)."""
    if file_type == "markdown":
        return _markdown(text)
    if file_type == "rst":
        return _rst(text)
    if file_type == "org":
        return _org(text)
    if file_type == "html":
        from oboyu.documents.formats.html import html_document  # imported here: it builds on this module

        return html_document(text)
    return Extracted(text, _paragraphs(text, 0, _lines_with_offsets(text), kind="code" if file_type == "code" else "text"))


LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what editors count as lines (not \f, \x85, \u2028)


def split_lines(text: str) -> list[str]:
    """The lines of a text, as line numbers in results count them."""
    lines = LINE_BREAK.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def plain_blocks(text: str) -> list[Block]:
    """Paragraphs (separated by blank lines) of plain text."""
    return _paragraphs(text, 0, _lines_with_offsets(text))


def _lines_with_offsets(text: str) -> list[tuple[int, str]]:
    """(offset, line without its line break) for every line."""
    out, pos = [], 0
    for match in LINE_BREAK.finditer(text):
        out.append((pos, text[pos : match.start()]))
        pos = match.end()
    if pos < len(text):
        out.append((pos, text[pos:]))
    return out


def _first_h1(blocks: list[Block]) -> str | None:
    return next((b.text for b in blocks if b.heading_level == 1), None)


def _block(text: str, lines: list[tuple[int, str]], first: int, last: int, **kw) -> Block:
    """A block spanning lines first..last (0-based, inclusive), trimmed of outer whitespace."""
    start = lines[first][0]
    end = lines[last][0] + len(lines[last][1])
    raw = text[start:end]
    lead = len(raw) - len(raw.lstrip())
    body = raw.strip()
    return Block(body, start + lead, start + lead + len(body), first + 1, last + 1, **kw)


def _paragraphs(text: str, begin: int, lines: list[tuple[int, str]], kind: str = "text", end: int | None = None) -> list[Block]:
    """Blocks separated by blank lines, over lines[begin:end]."""
    blocks, first = [], None
    stop = len(lines) if end is None else end
    for i in range(begin, stop):
        if lines[i][1].strip():
            if first is None:
                first = i
        elif first is not None:
            blocks.append(_block(text, lines, first, i - 1, kind=kind))
            first = None
    if first is not None:
        blocks.append(_block(text, lines, first, stop - 1, kind=kind))
    return blocks


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])( *\1){2,} *$")
_YAML_KEY = re.compile(r"^[\w-]+\s*:")
_TITLE = re.compile(r"""^title\s*:\s*(?P<q>["']?)(?P<title>.*?)(?P=q)\s*$""", re.IGNORECASE)


def _markdown(text: str) -> Extracted:
    lines = _lines_with_offsets(text)
    doc = Extracted(text)
    i = 0
    if lines and lines[0][1].strip() == "---":  # YAML front matter (not a leading rule)
        for j in range(1, len(lines)):
            if lines[j][1].strip() in ("---", "...") and j > 1 and _YAML_KEY.match(lines[1][1]):
                for _, line in lines[1:j]:
                    match = _TITLE.match(line)
                    if match and doc.title is None:
                        doc.title = match.group("title").strip() or None
                i = j + 1
                break
    para_first: int | None = None

    def flush(upto: int) -> None:
        nonlocal para_first
        if para_first is not None and upto >= para_first:
            doc.blocks.append(_block(text, lines, para_first, upto))
        para_first = None

    while i < len(lines):
        line = lines[i][1]
        fence = _FENCE.match(line)
        if fence:
            flush(i - 1)
            marker = fence.group(1)
            j = i + 1  # a closing fence is the marker (or longer) alone on its line
            while j < len(lines) and not re.fullmatch(rf" {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}\s*", lines[j][1]):
                j += 1
            last = min(j, len(lines) - 1)
            doc.blocks.append(_block(text, lines, i, last, kind="code"))
            i = last + 1
            continue
        heading = _ATX.match(line)
        if heading:
            flush(i - 1)
            doc.blocks.append(_heading(text, lines, i, i, len(heading.group(1)), heading.group(2) or ""))
            i += 1
            continue
        if para_first is not None and para_first == i - 1 and _SETEXT.match(line):
            level = 1 if line.strip()[0] == "=" else 2
            doc.blocks.append(_heading(text, lines, i - 1, i, level, lines[i - 1][1].strip()))
            para_first = None
            i += 1
            continue
        if _RULE.match(line) and para_first is None:  # a thematic break separates, holds no text
            i += 1
            continue
        if line.strip():
            if para_first is None:
                para_first = i
        else:
            flush(i - 1)
        i += 1
    flush(len(lines) - 1)
    if doc.title is None:
        doc.title = _first_h1(doc.blocks)
    return doc


def _heading(text: str, lines: list[tuple[int, str]], first: int, last: int, level: int, title: str) -> Block:
    block = _block(text, lines, first, last, heading_level=level, kind="heading")
    block.text = title.strip()
    return block


_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:.<>_])\1{2,}\s*$")


def _rst(text: str) -> Extracted:
    lines = _lines_with_offsets(text)
    doc = Extracted(text)
    styles: list[tuple[str, bool]] = []  # heading levels in order of first appearance
    heading_lines: dict[int, tuple[int, int, int]] = {}  # title line -> (first, last, level)
    for i in range(len(lines) - 1):
        title, under = lines[i][1], lines[i + 1][1]
        match = _RST_ADORNMENT.match(under)
        if not title.strip() or _RST_ADORNMENT.match(title) or not match:
            continue
        if i > 0 and lines[i - 1][1].strip() and not _RST_ADORNMENT.match(lines[i - 1][1]):
            continue  # an underline must follow a title standing alone
        over = i > 0 and lines[i - 1][1].strip() == under.strip()
        style = (match.group(1), over)
        if style not in styles:
            styles.append(style)
        heading_lines[i] = (i - 1 if over else i, i + 1, styles.index(style) + 1)
    skip_until = -1
    para_start = 0
    for i in sorted(heading_lines):
        first, last, level = heading_lines[i]
        doc.blocks.extend(_paragraphs(text, max(para_start, skip_until + 1), lines, end=first))
        doc.blocks.append(_heading(text, lines, first, last, level, lines[i][1]))
        skip_until = last
        para_start = last + 1
    doc.blocks.extend(_paragraphs(text, para_start, lines))
    doc.title = _first_h1(doc.blocks)
    return doc


_ORG_HEADING = re.compile(r"^(\*+)[ \t]+(?:(?:TODO|DONE|NEXT|WAITING)[ \t]+)?(?:\[#[A-C]\][ \t]+)?(.*?)(?:[ \t]+:[\w@#%:]+:)?[ \t]*$")
_ORG_BLOCK = re.compile(r"^[ \t]*#\+BEGIN_(\w+)", re.IGNORECASE)
_ORG_KEYWORD = re.compile(r"^[ \t]*#\+(\w+):[ \t]*(.*)$")


def _org(text: str) -> Extracted:
    """Org mode: `*` headings by depth, #+BEGIN_SRC blocks as code, #+TITLE as the title;
    other #+ keyword lines are settings, not text."""
    lines = _lines_with_offsets(text)
    doc = Extracted(text)
    para: int | None = None

    def flush(upto: int) -> None:
        nonlocal para
        if para is not None and upto >= para:
            doc.blocks.append(_block(text, lines, para, upto))
        para = None

    i = 0
    while i < len(lines):
        line = lines[i][1]
        heading = _ORG_HEADING.match(line)
        block = _ORG_BLOCK.match(line)
        keyword = _ORG_KEYWORD.match(line)
        if heading:
            flush(i - 1)
            doc.blocks.append(_heading(text, lines, i, i, len(heading.group(1)), heading.group(2)))
        elif block:
            flush(i - 1)
            end = re.compile(rf"^[ \t]*#\+END_{re.escape(block.group(1))}\b", re.IGNORECASE)
            j = next((k for k in range(i + 1, len(lines)) if end.match(lines[k][1])), len(lines) - 1)
            if j > i + 1:
                doc.blocks.append(_block(text, lines, i + 1, j - 1, kind="code" if block.group(1).upper() == "SRC" else "text"))
            i = j
        elif keyword:
            flush(i - 1)
            if keyword.group(1).upper() == "TITLE" and doc.title is None:
                doc.title = keyword.group(2).strip() or None
        elif line.strip():
            if para is None:
                para = i
        else:
            flush(i - 1)
        i += 1
    flush(len(lines) - 1)
    if doc.title is None:
        doc.title = _first_h1(doc.blocks)
    return doc
