"""Text out of PDF files with PDFium (pypdfium2, Apache-2.0/BSD): page by page, so that every
chunk knows its pages. Encrypted, broken and image-only PDFs are Unextractable, with the reason."""

from __future__ import annotations

import re

from oboyu.documents.extracted import Extracted, Unextractable, plain_blocks

PAGE_BREAK = "\n\n"  # pages join as paragraphs: a sentence never runs across a page break in a chunk


def extract_pdf(data: bytes) -> Extracted:
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise Unextractable("encrypted PDF (needs a password)") from exc
        raise Unextractable(f"cannot read PDF: {exc}") from exc
    try:
        pages: list[str] = []
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            try:
                pages.append(_clean(textpage.get_text_range()))
            finally:
                textpage.close()
                page.close()
        title = _meaningful_title(_title(document))
    except pdfium.PdfiumError as exc:
        raise Unextractable(f"cannot read PDF: {exc}") from exc
    finally:
        document.close()
    if not any(p.strip() for p in pages):
        raise Unextractable("PDF has no text layer (scanned or image-only)")
    starts, offset = [], 0
    for number, text in enumerate(pages, start=1):
        starts.append((offset, number))
        offset += len(text) + len(PAGE_BREAK)
    full = PAGE_BREAK.join(pages)
    return Extracted(full, plain_blocks(full), title=title, parts=starts)


def _title(document) -> str:
    """The Info dictionary's Title, which PDFium hands on as UTF-16LE. Decoded here, not by
    pypdfium2's get_metadata_value: that decodes strictly, and a title with a lone surrogate or an
    odd byte (as broken PDF makers write them) raised UnicodeDecodeError."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    size = pdfium_c.FPDF_GetMetaText(document, b"Title\x00", None, 0)
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    pdfium_c.FPDF_GetMetaText(document, b"Title\x00", buffer, size)
    return buffer.raw[: size - 2].decode("utf-16-le", "replace")


def _clean(text: str) -> str:
    """PDFium ends lines with \\r\\n and marks soft hyphens and form feeds; keep plain lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0c", "\n").replace("\ufffe", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


# what PDF makers write when the author gave no title (reportlab, Word's "Microsoft Word - x.docx")
_PLACEHOLDER_TITLES = re.compile(r"(?i)^(untitled( document)?|no title|microsoft (word|powerpoint|excel) - .*)$")


def _meaningful_title(title: str) -> str | None:
    title = title.strip()
    return None if not title or _PLACEHOLDER_TITLES.match(title) else title
