"""Text and structure out of a file: blocks (headings, paragraphs, code) with their lines.

`extract_file` is the one dispatch from a file's bytes and type to its text, for every format.
For Markdown, plain text, reStructuredText and source code a block's text is a slice of the
decoded file, so its character offsets and lines are exact. HTML keeps only visible text; its
blocks carry the source lines the parser saw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from oboyu.config import settings
from oboyu.documents.decoding import UndecodableError, decode

MARKDOWN_EXT = {".md", ".markdown", ".mdown", ".mkd", ".mdx"}
TEXT_EXT = {".txt", ".text"}
RST_EXT = {".rst", ".rest"}
HTML_EXT = {".html", ".htm", ".xhtml"}
CODE_EXT = {
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt",
    ".kts", ".scala", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".m", ".mm",
    ".swift", ".rb", ".php", ".pl", ".pm", ".lua", ".r", ".jl", ".hs", ".ml", ".ex", ".exs",
    ".erl", ".clj", ".dart", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql", ".vue", ".svelte",
    ".css", ".scss", ".toml", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".tex", ".el", ".vim",
}


def file_type_for(path: Path) -> str | None:
    """The extractor a file gets by its name (the user's `file_types` setting first), or None
    when we do not index it."""
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
    if ext in HTML_EXT:
        return "html"
    if ext == ".pdf":
        return "pdf"
    if ext in CODE_EXT or path.name in {"Makefile", "Dockerfile", "CMakeLists.txt"}:
        return "code"
    return None


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
    page_starts: list[int] = field(default_factory=list)  # PDF: offset in `text` where each page begins


class Unextractable(Exception):
    """A file whose text cannot be had; the message says why (for the skipped list)."""


def looks_binary(data: bytes) -> bool:
    """A NUL anywhere (not only in the first blocks) outside UTF-16/32 text marked by its BOM."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf", b"\x00\x00\xfe\xff")):
        return False
    return b"\x00" in data


def extract_file(data: bytes, file_type: str) -> tuple[Extracted, str]:
    """A file's text and structure from its bytes, and its encoding ("pdf" for a PDF)."""
    if file_type == "pdf":
        from oboyu.documents.pdf import PdfSkipped, extract_pdf  # imported here: pdf builds on this module

        try:
            return extract_pdf(data), "pdf"
        except PdfSkipped as exc:
            raise Unextractable(str(exc)) from exc
    if looks_binary(data):
        raise Unextractable("binary file")
    try:
        decoded = decode(data)
    except UndecodableError as exc:
        raise Unextractable(f"cannot decode: {exc}") from exc
    return extract(decoded.text, file_type), decoded.encoding


def extract(text: str, file_type: str) -> Extracted:
    """The structure of a decoded text file."""
    if file_type == "markdown":
        return _markdown(text)
    if file_type == "rst":
        return _rst(text)
    if file_type == "html":
        return _html(text)
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


# <head> is not skipped as a whole: its end tag is optional, and its only text is the <title>
_HTML_SKIP = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas"}
_HTML_BLOCK = {
    "p", "div", "section", "article", "header", "footer", "nav", "aside", "main", "li", "ul", "ol",
    "table", "tr", "td", "th", "thead", "tbody", "br", "pre", "blockquote", "dl", "dt", "dd",
    "figure", "figcaption", "hr", "form", "fieldset", "details", "summary", "caption", "address",
    "h1", "h2", "h3", "h4", "h5", "h6", "body", "html",
}


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, int, int, int, str]] = []  # text, first line, last line, level, kind
        self.parts: list[str] = []
        self.first_line = 0
        self.skip_depth = 0
        self.pre_depth = 0
        self.heading = 0
        self.title: str | None = None
        self.title_parts: list[str] | None = None  # collecting the document's <title>

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title" and not self.skip_depth and self.title is None:
            self.title_parts = []
            return
        if tag in _HTML_SKIP:
            self.skip_depth += 1
            return
        if tag in _HTML_BLOCK:
            self.flush()
        if tag == "pre":
            self.pre_depth += 1
        if re.fullmatch(r"h[1-6]", tag):
            self.heading = int(tag[1])

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title_parts is not None:
            self.title = re.sub(r"\s+", " ", "".join(self.title_parts)).strip() or None
            self.title_parts = None
            return
        if tag in _HTML_SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if tag in _HTML_BLOCK:
            self.flush()
        if tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
        if re.fullmatch(r"h[1-6]", tag):
            self.heading = 0

    def handle_data(self, data: str) -> None:
        if self.title_parts is not None:
            self.title_parts.append(data)
            return
        if self.skip_depth:
            return
        if not self.parts:
            self.first_line = self.getpos()[0]
        self.parts.append(data)

    def flush(self) -> None:
        raw = "".join(self.parts)
        self.parts = []
        if self.pre_depth:
            body = raw.strip("\n")
        else:
            body = re.sub(r"\s+", " ", raw).strip()
        if body.strip():
            last = self.getpos()[0]
            kind = "heading" if self.heading else ("code" if self.pre_depth else "text")
            self.blocks.append((body, self.first_line, max(last, self.first_line), self.heading, kind))


def _html(source: str) -> Extracted:
    parser = _VisibleText()
    parser.feed(source)
    parser.close()
    parser.flush()
    pieces, blocks, pos = [], [], 0
    for body, first, last, level, kind in parser.blocks:
        blocks.append(Block(body, pos, pos + len(body), first, last, level, kind, exact=False))
        pieces.append(body)
        pos += len(body) + 2
    return Extracted("\n\n".join(pieces), blocks, parser.title or _first_h1(blocks))
