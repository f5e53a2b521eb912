"""Real files of every format oboyu reads, written by the libraries people's tools use (python-docx,
openpyxl, python-pptx, odfpy, ebooklib, reportlab, the standard `email` package), each about one
Japanese topic, so that a question about the topic finds the file."""

from __future__ import annotations

import io
import json
import zipfile
from email.message import EmailMessage
from email.mime.application import MIMEApplication
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from pathlib import Path


def docx_bytes(title: str, sections: list[tuple[str, list[str]]], table: list[list[str]] | None = None,
               footnote_free_comment: str | None = None) -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = title
    document.add_heading(title, 1)
    for heading, paragraphs in sections:
        document.add_heading(heading, 2)
        for text in paragraphs:
            paragraph = document.add_paragraph(text)
    if footnote_free_comment:
        document.add_comment(paragraph.runs, text=footnote_free_comment, author="佐藤")
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_with_ruby(base: str, reading: str, after: str) -> bytes:
    """A .docx whose paragraph holds 漢字 with a ruby reading, as Word writes furigana."""
    data = docx_bytes("ルビ", [("本文", ["placeholder"])])
    source = zipfile.ZipFile(io.BytesIO(data))
    ruby = (f'<w:r><w:ruby><w:rubyPr><w:rubyAlign w:val="distributeSpace"/></w:rubyPr><w:rt><w:r><w:t>{reading}</w:t></w:r></w:rt>'
            f'<w:rubyBase><w:r><w:t>{base}</w:t></w:r></w:rubyBase></w:ruby></w:r><w:r><w:t>{after}</w:t></w:r>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename == "word/document.xml":
                content = content.replace(b"<w:r><w:t>placeholder</w:t></w:r>", ruby.encode())
            target.writestr(item, content)
    return out.getvalue()


def xlsx_bytes(sheets: dict[str, list[list]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def xls_bytes(name: str, rows: list[list]) -> bytes:
    """A legacy binary workbook (BIFF8, Excel 97-2003) written by xlwt."""
    import xlwt

    book = xlwt.Workbook(encoding="utf-8")
    sheet = book.add_sheet(name)
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            sheet.write(r, c, value)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def pptx_bytes(slides: list[tuple[str, str, str]]) -> bytes:
    """Slides of (title, body, speaker notes)."""
    import pptx

    deck = pptx.Presentation()
    for title, body, notes in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def odt_bytes(heading: str, paragraphs: list[str], note: str | None = None) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, Note, NoteBody, NoteCitation, P

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text=heading))
    for text in paragraphs:
        paragraph = P(text=text)
        document.text.addElement(paragraph)
    if note:
        footnote = Note(noteclass="footnote", id="ftn1")
        footnote.addElement(NoteCitation(text="1"))
        body = NoteBody()
        body.addElement(P(text=note))
        footnote.addElement(body)
        paragraph.addElement(footnote)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def ods_bytes(rows: list[list[str]]) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    table = Table(name="名簿")
    for row in rows:
        line = TableRow()
        for value in row:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=value))
            line.addElement(cell)
        table.addElement(line)
    document.spreadsheet.addElement(table)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def odp_bytes(slides: list[tuple[str, str]]) -> bytes:
    from odf.draw import Frame, Page, TextBox
    from odf.namespaces import PRESENTATIONNS
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    document = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for title, body in slides:
        page = Page(masterpagename=master)
        for text, kind in ((title, "title"), (body, "outline")):
            frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm" if kind == "title" else "5cm")
            frame.setAttrNS(PRESENTATIONNS, "class", kind)
            box = TextBox()
            box.addElement(P(text=text))
            frame.addElement(box)
            page.addElement(frame)
        document.presentation.addElement(page)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def epub_bytes(title: str, chapters: list[tuple[str, str]]) -> bytes:
    """A book of (chapter title, XHTML body) written by ebooklib."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("oboyu-test")
    book.set_title(title)
    book.set_language("ja")
    items = []
    for number, (name, body) in enumerate(chapters, start=1):
        chapter = epub.EpubHtml(title=name, file_name=f"chap{number}.xhtml", lang="ja")
        chapter.content = f"<html><body>{body}</body></html>"
        book.add_item(chapter)
        items.append(chapter)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    path = io.BytesIO()
    epub.write_epub(path, book)
    return path.getvalue()


def pdf_bytes_japanese(pages: list[str]) -> bytes:
    """A Japanese PDF written by reportlab with a CID font (as many Japanese PDF makers do)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("HeiseiMin-W3"))
    out = io.BytesIO()
    page = canvas.Canvas(out, pagesize=A4)
    for text in pages:
        page.setFont("HeiseiMin-W3", 12)
        for i, line in enumerate(text.split("\n")):
            page.drawString(60, 780 - 18 * i, line)
        page.showPage()
    page.save()
    return out.getvalue()


def eml_iso2022jp(subject: str, body: str, sender: str = "山田 太郎 <yamada@example.jp>") -> bytes:
    """A message as Japanese mailers send it: ISO-2022-JP, 7bit, the subject MIME-encoded, and a
    circled ① (JIS row 13, a Windows extension that mailers put in ISO-2022-JP) in the body."""
    from email.header import Header

    headers = (
        f"From: {Header(sender, 'iso-2022-jp').encode()}\nTo: team@example.jp\n"
        f"Subject: {Header(subject, 'iso-2022-jp').encode()}\nDate: Tue, 14 Oct 2025 10:00:00 +0900\n"
        "MIME-Version: 1.0\nContent-Type: text/plain; charset=ISO-2022-JP\nContent-Transfer-Encoding: 7bit\n\n"
    )
    circled_one = b"\x1b$B-!\x1b(B"
    return headers.encode("ascii") + body.encode("iso2022_jp") + b"\n" + circled_one + "第一案で進める。\n".encode("iso2022_jp")


def eml_with_attachment(subject: str, body: str, attachment_name: str, attachment: bytes) -> bytes:
    message = MIMEMultipart()
    message["Subject"] = subject
    message["From"] = "suzuki@example.jp"
    message["To"] = "team@example.jp"
    message.attach(MIMEText(body, "plain", "utf-8"))  # base64, as most mailers send UTF-8
    part = MIMEApplication(attachment, Name=attachment_name)
    part["Content-Disposition"] = f'attachment; filename="{attachment_name}"'
    message.attach(part)
    return message.as_bytes()


def eml_html_only(subject: str, html: str) -> bytes:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = "news@example.jp"
    message.set_content(html, subtype="html", charset="utf-8", cte="quoted-printable")
    return message.as_bytes()


def mbox_bytes(messages: list[tuple[str, str]]) -> bytes:
    out = []
    for subject, body in messages:
        message = EmailMessage()
        message["Subject"] = subject
        message["From"] = "kato@example.jp"
        message.set_content(body)
        out.append(b"From kato@example.jp Mon Oct 13 09:00:00 2025\n" + message.as_bytes().replace(b"\r\n", b"\n") + b"\n")
    return b"".join(out)


def rtf_bytes(text: str) -> bytes:
    """RTF as Word writes Japanese: \\ansicpg932 and cp932 bytes as \\'xx escapes."""
    escaped = "".join(f"\\'{b:02x}" for b in text.encode("cp932"))
    return ("{\\rtf1\\ansi\\ansicpg932\\deff0{\\fonttbl{\\f0\\fnil\\fcharset128 MS Mincho;}}\\f0 " + escaped + "\\par}").encode("ascii")


def notebook_bytes(markdown: str, code: str) -> bytes:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": markdown.splitlines(keepends=True)},
        {"cell_type": "code", "metadata": {}, "source": code, "outputs": [{"output_type": "stream", "text": "出力は索引しない"}]},
    ]
    return json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}, ensure_ascii=False).encode()


def encrypt_ooxml(data: bytes, password: str = "secret") -> bytes:
    """The file as Office saves it with a password (an OLE container holding EncryptedPackage)."""
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(data)).encrypt(password, out)
    return out.getvalue()


def write(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
