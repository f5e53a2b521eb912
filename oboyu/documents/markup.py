"""The markup parsers for text files whose structure is in their lines: Markdown (ATX and setext
headings, fences, YAML front matter), reStructuredText (adornment headings) and Org mode. Offsets
and lines are the file's own."""

from __future__ import annotations

import re

from oboyu.documents.extracted import Block, Extracted, first_h1, line_block, lines_with_offsets, paragraphs

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])( *\1){2,} *$")
_YAML_KEY = re.compile(r"^[\w-]+\s*:")
_TITLE = re.compile(r"""^title\s*:\s*(?P<q>["']?)(?P<title>.*?)(?P=q)\s*$""", re.IGNORECASE)


def parse_markdown(text: str) -> Extracted:
    lines = lines_with_offsets(text)
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
            doc.blocks.append(line_block(text, lines, para_first, upto))
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
            doc.blocks.append(line_block(text, lines, i, last, kind="code"))
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
        doc.title = first_h1(doc.blocks)
    return doc


def _heading(text: str, lines: list[tuple[int, str]], first: int, last: int, level: int, title: str) -> Block:
    block = line_block(text, lines, first, last, heading_level=level, kind="heading")
    block.text = title.strip()
    return block


_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:.<>_])\1{2,}\s*$")


def parse_rst(text: str) -> Extracted:
    lines = lines_with_offsets(text)
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
        doc.blocks.extend(paragraphs(text, max(para_start, skip_until + 1), lines, end=first))
        doc.blocks.append(_heading(text, lines, first, last, level, lines[i][1]))
        skip_until = last
        para_start = last + 1
    doc.blocks.extend(paragraphs(text, para_start, lines))
    doc.title = first_h1(doc.blocks)
    return doc


_ORG_HEADING = re.compile(r"^(\*+)[ \t]+(?:(?:TODO|DONE|NEXT|WAITING)[ \t]+)?(?:\[#[A-C]\][ \t]+)?(.*?)(?:[ \t]+:[\w@#%:]+:)?[ \t]*$")
_ORG_BLOCK = re.compile(r"^[ \t]*#\+BEGIN_(\w+)", re.IGNORECASE)
_ORG_KEYWORD = re.compile(r"^[ \t]*#\+(\w+):[ \t]*(.*)$")


def parse_org(text: str) -> Extracted:
    """Org mode: `*` headings by depth, #+BEGIN_SRC blocks as code, #+TITLE as the title;
    other #+ keyword lines are settings, not text."""
    lines = lines_with_offsets(text)
    doc = Extracted(text)
    para: int | None = None

    def flush(upto: int) -> None:
        nonlocal para
        if para is not None and upto >= para:
            doc.blocks.append(line_block(text, lines, para, upto))
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
                doc.blocks.append(line_block(text, lines, i + 1, j - 1, kind="code" if block.group(1).upper() == "SRC" else "text"))
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
        doc.title = first_h1(doc.blocks)
    return doc
