"""Which reader each file type gets: bytes and the file's name in, text and structure out, with
the encoding (or the format's name where the file is not text)."""

from __future__ import annotations

from collections.abc import Callable

from oboyu.documents.extract import Extracted
from oboyu.documents.formats import data, epub, html, mail, pdf, sheets, slides, word

Reader = Callable[[bytes, str], tuple[Extracted, str]]


def _named(read: Callable[[bytes], Extracted], label: str) -> Reader:
    return lambda content, _name: (read(content), label)


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
    "email": _named(mail.extract_eml, "email"),
    "mbox": _named(mail.extract_mbox, "mbox"),
    "json": lambda content, _name: data.extract_json(content),
    "notebook": lambda content, _name: data.extract_notebook(content),
    "rtf": lambda content, _name: data.extract_rtf(content),
}


def _extension(name: str, default: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else default
