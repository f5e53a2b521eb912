"""Word processor documents: .docx (WordprocessingML) and .odt (OpenDocument Text), read from
their XML with lxml.

Read directly rather than through python-docx or odfpy: python-docx's paragraph text leaves out
runs nested in ruby (the base text of 漢字 with a reading vanishes along with the reading) and
has no footnotes; odfpy builds a slow object tree and is GPL/Apache dual-licensed. Both formats
are a few elements deep: paragraphs with heading levels (→ heading paths, like Markdown), tables
as rows, footnotes and comments placed after the paragraph they belong to, ruby readings and
deleted tracked changes left out. Each paragraph is a part, for the `¶` a result shows.
"""

from __future__ import annotations

import re
import zipfile

from lxml import etree

from oboyu.documents.extracted import Extracted, Unextractable
from oboyu.documents.formats.builder import TextBuilder
from oboyu.documents.formats.containers import local_name, open_zip, parse_side_xml, parse_xml, read_member

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_NAME = re.compile(r"(?i)^heading\s*(\d)$")
# subtrees whose text is not the document's: readings, deletions, field codes, fallback copies
_DOCX_SKIP = {"rt", "delText", "instrText", "Fallback", "footnoteReference", "endnoteReference", "commentReference"}


MAX_SPACES = 1_000  # text:s c="…": a run of spaces; a count in the millions is a memory bomb, not layout


def attribute_number(value: str | None, most: int) -> int | None:
    """An attribute's whole number, at most `most`; None where it is none: `abc`, `1.5`, `-1`, or
    `²`, which passes str.isdigit() but not int(), or more digits than int() converts."""
    value = (value or "").strip()
    if not (value.isascii() and value.isdigit()):
        return None
    digits = value.lstrip("0") or "0"
    return most if len(digits) > len(str(most)) else min(int(digits), most)


def core_title(archive: zipfile.ZipFile, member: str, kind: str) -> str | None:
    """dc:title of docProps/core.xml (Office) or meta.xml (OpenDocument)."""
    data = read_member(archive, member, kind)
    properties = parse_side_xml(data) if data else None
    if properties is None:
        return None
    for element in properties.iter():
        if local_name(element) == "title" and (element.text or "").strip():
            return element.text.strip()
    return None


def extract_docx(data: bytes) -> Extracted:
    archive = open_zip(data, ".docx")
    body_xml = read_member(archive, "word/document.xml", ".docx")
    if body_xml is None:
        raise Unextractable("corrupt .docx file: no word/document.xml")
    styles = _docx_styles(archive)
    notes = {
        **_docx_notes(archive, "word/footnotes.xml", "footnote"),
        **_docx_notes(archive, "word/endnotes.xml", "endnote"),
        **_docx_notes(archive, "word/comments.xml", "comment"),
    }
    out = TextBuilder(core_title(archive, "docProps/core.xml", ".docx"))
    body = parse_xml(body_xml, ".docx", "word/document.xml").find(f"{W}body")
    paragraphs = 0
    for element in _docx_blocks(body if body is not None else etree.Element("body")):
        paragraphs += 1
        out.part(paragraphs)
        if local_name(element) == "tbl":
            for row in element.iter(f"{W}tr"):
                cells = [_docx_text(cell) for cell in row.iter(f"{W}tc")]
                out.paragraph(" | ".join(c.replace("\n", " ") for c in cells if c), kind="row")
            continue
        text = _docx_text(element)
        level = _docx_level(element, styles)
        if level and text:
            out.heading(text, level)
            if out.title is None and level == 1:
                out.title = text
        else:
            out.paragraph(text)
        for ref in element.iter(f"{W}footnoteReference", f"{W}endnoteReference", f"{W}commentReference"):
            kind, number = local_name(ref).removesuffix("Reference"), ref.get(f"{W}id")
            label = "[comment]" if kind == "comment" else f"[^{number}]"
            out.paragraph(f"{label} {notes.get((kind, number), '')}")
    margins = _docx_margins(archive)
    if margins:  # after the body, so that its paragraphs keep their numbers
        out.part(paragraphs + 1)
        for text in margins:
            out.paragraph(text)
    return out.build()


def _docx_margins(archive: zipfile.ZipFile) -> list[str]:
    """The headers' and footers' text, each once (a section's first-page, even and default ones
    often say the same), marked as such: a title, a project's name or a classification is often
    there alone (a user trial's "Confidential: project Nightingale" was found nowhere)."""
    texts: list[str] = []
    for kind in ("header", "footer"):
        members = sorted(name for name in archive.namelist() if re.fullmatch(rf"word/{kind}\d*\.xml", name))
        for member in members:
            data = read_member(archive, member, ".docx")
            margin = parse_side_xml(data) if data else None
            if margin is None:
                continue
            for block in _docx_blocks(margin):
                text = " ".join(_docx_text(block).split())
                if text and not text.isdigit() and f"[{kind}] {text}" not in texts:  # a page number alone says nothing
                    texts.append(f"[{kind}] {text}")
    return texts


def _docx_blocks(parent: etree._Element):
    """Paragraphs and tables in reading order, through content controls (w:sdt) and the like."""
    for child in parent:
        name = local_name(child)
        if name in ("p", "tbl"):
            yield child
        elif name in ("sdt", "sdtContent", "customXml", "ins", "smartTag"):
            yield from _docx_blocks(child)


def _docx_text(element: etree._Element) -> str:
    parts: list[str] = []

    def walk(node: etree._Element) -> None:
        for child in node:
            name = local_name(child)
            if name in _DOCX_SKIP or name == "del":
                continue
            if name == "t":
                parts.append(child.text or "")
            elif name == "tab":
                parts.append("\t")
            elif name in ("br", "cr"):
                parts.append("\n")
            elif name == "noBreakHyphen":
                parts.append("-")
            elif name == "p" and parts:  # a paragraph inside (a text box, a table cell)
                parts.append("\n")
                walk(child)
            else:
                walk(child)

    walk(element)
    return "".join(parts).strip()


def _docx_styles(archive: zipfile.ZipFile) -> dict[str, int]:
    """Heading level (1-9) of each paragraph style that is a heading: by its outline level, its
    built-in name (`heading 1`, stored in English whatever the Word's language), or its base."""
    data = read_member(archive, "word/styles.xml", ".docx")
    style_sheet = parse_side_xml(data) if data else None
    if style_sheet is None:
        return {}
    own: dict[str, int] = {}
    based_on: dict[str, str] = {}
    for style in style_sheet.iter(f"{W}style"):
        style_id = style.get(f"{W}styleId") or ""
        name = style.find(f"{W}name")
        outline = style.find(f"{W}pPr/{W}outlineLvl")
        match = _HEADING_NAME.match(name.get(f"{W}val", "") if name is not None else "")
        outline_level = attribute_number(outline.get(f"{W}val"), 9) if outline is not None else None
        if outline_level is not None and outline_level < 9:
            own[style_id] = outline_level + 1
        elif match:
            own[style_id] = int(match.group(1))
        elif name is not None and name.get(f"{W}val", "").lower() == "title":
            own[style_id] = 1
        base = style.find(f"{W}basedOn")
        if base is not None:
            based_on[style_id] = base.get(f"{W}val") or ""
    levels = {}
    for style_id in set(own) | set(based_on):
        seen, current = set(), style_id
        while current and current not in own and current not in seen:
            seen.add(current)
            current = based_on.get(current, "")
        if current in own:
            levels[style_id] = own[current]
    return levels


def _docx_level(paragraph: etree._Element, styles: dict[str, int]) -> int:
    outline = paragraph.find(f"{W}pPr/{W}outlineLvl")
    value = attribute_number(outline.get(f"{W}val"), 9) if outline is not None else None
    if value is not None:
        return value + 1 if value < 9 else 0
    style = paragraph.find(f"{W}pPr/{W}pStyle")
    return styles.get(style.get(f"{W}val") or "", 0) if style is not None else 0


def _docx_notes(archive: zipfile.ZipFile, member: str, tag: str) -> dict[tuple[str, str | None], str]:
    """Footnote, endnote or comment texts by id (separators left out)."""
    data = read_member(archive, member, ".docx")
    part = parse_side_xml(data) if data else None
    if part is None:
        return {}
    notes = {}
    for note in part.iter(f"{W}{tag}"):
        if note.get(f"{W}type") in ("separator", "continuationSeparator", "continuationNotice"):
            continue
        author = note.get(f"{W}author")
        text = " ".join(t for t in (_docx_text(p) for p in note.iter(f"{W}p")) if t)
        notes[(tag, note.get(f"{W}id"))] = f"{author}: {text}" if author else text
    return notes


TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
# inside a paragraph: readings, notes and comments (placed after it), tracked deletions
_ODF_INLINE_SKIP = {"ruby-text", "note", "annotation", "tracked-changes", "note-citation", "bookmark", "soft-page-break"}


def odf_content(data: bytes, kind: str) -> tuple[etree._Element, str | None]:
    """The content.xml root and the title of an OpenDocument file."""
    archive = open_zip(data, kind)
    content = read_member(archive, "content.xml", kind)
    if content is None:
        raise Unextractable(f"corrupt {kind} file: no content.xml")
    return parse_xml(content, kind, "content.xml"), core_title(archive, "meta.xml", kind)


def odf_text(element: etree._Element) -> str:
    """A paragraph's visible text: spaces (text:s), tabs and line breaks as written."""
    parts: list[str] = []

    def walk(node: etree._Element) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            name = local_name(child)
            if name == "s":
                count = attribute_number(child.get(f"{TEXT}c"), MAX_SPACES)
                parts.append(" " * (1 if count is None else count))
            elif name == "tab":
                parts.append("\t")
            elif name == "line-break":
                parts.append("\n")
            elif name not in _ODF_INLINE_SKIP:
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    return "".join(parts).strip()


def odf_asides(element: etree._Element) -> list[str]:
    """Footnotes and comments anchored in a paragraph, as paragraphs of their own."""
    out = []
    for note in element.iter(f"{TEXT}note"):
        citation = note.find(f"{TEXT}note-citation")
        body = note.find(f"{TEXT}note-body")
        text = " ".join(odf_text(p) for p in body.iter(f"{TEXT}p")) if body is not None else ""
        out.append(f"[^{(citation.text or '').strip() if citation is not None else ''}] {text}")
    for comment in element.iter(f"{OFFICE}annotation"):
        author = next((c.text for c in comment if local_name(c) == "creator"), None)
        text = " ".join(odf_text(p) for p in comment.iter(f"{TEXT}p"))
        out.append(f"[comment] {author}: {text}" if author else f"[comment] {text}")
    return out


def extract_odt(data: bytes) -> Extracted:
    root, title = odf_content(data, ".odt")
    out = TextBuilder(title)
    body = root.find(f"{OFFICE}body/{OFFICE}text")
    counter = [0]

    def walk(parent: etree._Element) -> None:
        for child in parent:
            name = local_name(child)
            if name in ("h", "p"):
                counter[0] += 1
                out.part(counter[0])
                text = odf_text(child)
                if name == "h":
                    out.heading(text, attribute_number(child.get(f"{TEXT}outline-level"), 10) or 1)
                else:
                    out.paragraph(text)
                for aside in odf_asides(child):
                    out.paragraph(aside)
            elif name == "table":
                counter[0] += 1
                out.part(counter[0])
                for row in child.iter(f"{TABLE}table-row"):
                    cells = [" ".join(odf_text(p) for p in cell.iter(f"{TEXT}p")) for cell in row.iter(f"{TABLE}table-cell")]
                    out.paragraph(" | ".join(c for c in cells if c), kind="row")
            elif name in ("list", "list-item", "list-header", "section", "index-body", "frame", "text-box",
                          "table-of-content", "illustration-index", "alphabetical-index"):
                walk(child)

    if body is not None:
        walk(body)
    return out.build()
