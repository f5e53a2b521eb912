"""Text and structure out of a file: the one dispatch from a file's bytes and type to its text,
for every format.

For the source types (Markdown, plain text, reStructuredText, Org and source code) the text is
the decoded file, so offsets and lines are the file's own (`markup`). Every other format has a
reader in `formats`, which renders it to text whose lines are what previews, `read` and results'
lines show.
"""

from __future__ import annotations

from collections.abc import Callable

from oboyu.documents.decoding import Decoded, UndecodableError, bomless_utf16, decode
from oboyu.documents.extracted import Extracted, Unextractable, lines_with_offsets, paragraphs
from oboyu.documents.filetypes import looks_binary
from oboyu.documents.formats import data, epub, html, mail, pdf, sheets, slides, word
from oboyu.documents.markup import parse_markdown, parse_org, parse_rst

# bytes and the file's name in; text and structure out, with the encoding (or the format's name
# where the file is not text)
Reader = Callable[[bytes, str], tuple[Extracted, str]]


def _named(read: Callable[[bytes], Extracted], label: str) -> Reader:
    return lambda content, _name: (read(content), label)


def _extension(name: str, default: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else default


def extract_file(data: bytes, file_type: str, name: str = "") -> tuple[Extracted, str]:
    """A file's text and structure from its bytes, and its encoding (the format's name for
    formats that are not text), as valid Unicode whatever the reader handed on. `name` is the
    file's name, for readers that look at it."""
    extracted, encoding = _read(data, file_type, name)
    return extracted.made_valid(), encoding


def _read(data: bytes, file_type: str, name: str) -> tuple[Extracted, str]:
    reader = READERS.get(file_type)
    if reader is not None:
        if not data:  # a new, never-saved document (Windows' New > Word Document makes 0 bytes): empty, not corrupt
            return Extracted("", []), file_type
        return reader(data, name)
    try:
        decoded = (bomless_utf16(data) or _binary()) if looks_binary(data) else decode(data)
    except UndecodableError as exc:
        raise Unextractable(f"cannot decode: {exc}") from exc
    return extract(decoded.text, file_type), decoded.encoding


def _binary() -> Decoded:
    raise Unextractable("binary file")


def extract(text: str, file_type: str) -> Extracted:
    """The structure of a decoded text file (or web page)."""
    if file_type == "markdown":
        return parse_markdown(text)
    if file_type == "rst":
        return parse_rst(text)
    if file_type == "org":
        return parse_org(text)
    if file_type == "html":
        return html.html_document(text)
    return Extracted(text, paragraphs(text, 0, lines_with_offsets(text), kind="code" if file_type == "code" else "text"))


# mail hands its attachments back to this dispatch, so that an attached PDF is read as any PDF
READERS: dict[str, Reader] = {
    "html": lambda content, _name: html.extract_html(content),
    "pdf": _named(pdf.extract_pdf, "pdf"),
    "docx": _named(word.extract_docx, "docx"),
    "odt": _named(word.extract_odt, "odt"),
    "pptx": _named(slides.extract_pptx, "pptx"),
    "odp": _named(slides.extract_odp, "odp"),
    "spreadsheet": lambda content, name: (sheets.extract_workbook(content, _extension(name, ".xlsx")), "spreadsheet"),
    "csv": lambda content, name: sheets.extract_delimited(content, name),
    "epub": _named(epub.extract_epub, "epub"),
    "email": lambda content, _name: (mail.extract_eml(content, extract_file), "email"),
    "mbox": lambda content, _name: (mail.extract_mbox(content, extract_file), "mbox"),
    "json": lambda content, _name: data.extract_json(content),
    "notebook": lambda content, _name: data.extract_notebook(content),
    "rtf": lambda content, _name: data.extract_rtf(content),
}
