"""Mail: .eml messages and .mbox mailboxes, read with the standard `email` package.

A message gives its subject (the title, or a heading in a mailbox), who sent it, to whom and when,
and its text body: the plain part, else the HTML part as text. Charsets are decoded as Japanese
mail needs: ISO-2022-JP with the Windows extensions (①, ㈱) that mailers put in it, Shift_JIS as
cp932, and a guess where the declared charset is wrong. Attachments in a format oboyu reads are
indexed as passages of their own, headed by their file names.
"""

from __future__ import annotations

import email
import email.errors
import email.header
import re
from collections.abc import Callable
from email.message import Message
from pathlib import PurePath

from oboyu.documents.decoding import UndecodableError, decode, decode_iso2022_jp
from oboyu.documents.extracted import Extracted, Unextractable
from oboyu.documents.filetypes import file_type_for
from oboyu.documents.formats.builder import TextBuilder
from oboyu.documents.formats.html import add_html

MAX_DEPTH = 3  # messages forwarded as attachments, inside each other
MAX_MESSAGES = 50_000
_WIDER = {"iso-2022-jp": "iso2022_jp_ext", "shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932",
          "x-sjis": "cp932", "euc-jp": "euc_jis_2004", "gb2312": "gb18030", "ks_c_5601-1987": "cp949"}
_MBOX_FROM = re.compile(rb"^From [^\n]*\n", re.MULTILINE)
# the dispatch for any format (`extract.extract_file`), handed in: attachments are read as files
ReadFile = Callable[[bytes, str, str], tuple[Extracted, str]]


def extract_eml(data: bytes, read_file: ReadFile) -> Extracted:
    message = _parse(data)
    out = TextBuilder(_header(message, "subject") or None)
    _add_message(out, message, read_file, depth=0, heading_level=0)
    if out.empty:
        raise Unextractable("mail with no text")
    return out.build()


def extract_mbox(data: bytes, read_file: ReadFile) -> Extracted:
    starts = [m.start() for m in _MBOX_FROM.finditer(data) if m.start() == 0 or data[m.start() - 1 : m.start()] == b"\n"]
    if not starts:
        raise Unextractable("not an mbox file (no 'From ' line starts a message)")
    out = TextBuilder()
    for number, (start, end) in enumerate(zip(starts, [*starts[1:], len(data)]), start=1):
        if number > MAX_MESSAGES:
            break
        chunk = data[start:end]
        body = chunk[chunk.index(b"\n") + 1 :] if b"\n" in chunk else b""
        try:
            message = _parse(re.sub(rb"^>(>*From )", rb"\1", body, flags=re.MULTILINE))  # mboxrd unquoting
        except Unextractable:  # one message the parser cannot take does not cost the mailbox
            continue
        out.part(number)
        _add_message(out, message, read_file, depth=0, heading_level=1)
    return out.build()


def _parse(data: bytes) -> Message:
    """The message with its headers as sent (compat32), so that we decode them ourselves."""
    try:
        return email.message_from_bytes(data)
    except RecursionError as exc:  # the parser recurses once per part: parts nested hundreds deep
        raise Unextractable("mail nested too deep (parts inside parts past the parser's limit)") from exc
    except TypeError as exc:  # the standard library's RFC 2231 decoding of `boundary*=` beside `boundary*0*=`
        raise Unextractable(f"malformed mail: its MIME parameters cannot be read ({exc})") from exc


def _param(read: Callable[[], str | None]) -> str | None:
    """A part's file name or charset; None where its parameters are malformed (the standard
    library's RFC 2231 decoding raises TypeError on `filename*=` beside `filename*0*=`)."""
    try:
        return read()
    except (TypeError, ValueError, LookupError):
        return None


def _add_message(out: TextBuilder, message: Message, read_file: ReadFile, depth: int, heading_level: int) -> None:
    """A message's headers and text; its attachments after it. heading_level 0: the subject is
    the document's title and a header line, not a heading."""
    subject = _header(message, "subject")
    if heading_level:
        out.heading(subject or "(no subject)", heading_level)
    # a lone message's subject is its title, and in its text too: the preview shows the mail as sent
    fields = (("Subject", "" if heading_level else subject), ("From", _header(message, "from")),
              ("To", _header(message, "to")), ("Cc", _header(message, "cc")), ("Date", _header(message, "date")))
    people = [f"{label}: {value}" for label, value in fields if value]
    if people:
        out.paragraph("\n".join(people))
    body = _body(message)
    if body is not None:
        text, is_html = body
        if is_html:
            add_html(out, text)
        else:
            for paragraph in re.split(r"\n\s*\n", text):
                out.paragraph(paragraph)
    for part in message.walk() if message.is_multipart() else []:
        name = _param(part.get_filename)
        if part.get_content_maintype() == "multipart" or (not name and part.get_content_type() != "message/rfc822"):
            continue
        if part.get_content_disposition() != "attachment" and not name:
            continue
        _add_attachment(out, part, name, read_file, depth, heading_level + 1)


def _add_attachment(out: TextBuilder, part: Message, name: str | None, read_file: ReadFile, depth: int, level: int) -> None:
    if part.get_content_type() == "message/rfc822" and depth < MAX_DEPTH:
        inner = part.get_payload()
        inner = inner[0] if isinstance(inner, list) and inner else inner
        if isinstance(inner, Message):
            _add_message(out, inner, read_file, depth + 1, level)
        return
    file_type = file_type_for(PurePath(name or ""))
    payload = part.get_payload(decode=True)
    if not name or file_type is None or not isinstance(payload, bytes) or depth >= MAX_DEPTH:
        return
    try:
        extracted, _ = read_file(payload, file_type, name)
    except Exception:  # an attachment that cannot be read (for whatever reason) does not cost the message
        return
    out.heading(name, level)
    out.include(extracted, level)


def _body(message: Message) -> tuple[str, bool] | None:
    """The text body (the plain part, else the HTML one) and whether it is HTML."""
    candidates = [
        part for part in (message.walk() if message.is_multipart() else [message])
        if part.get_content_type() in ("text/plain", "text/html")
        and part.get_content_disposition() != "attachment" and not _param(part.get_filename)
    ]
    part = next((p for p in candidates if p.get_content_type() == "text/plain"), candidates[0] if candidates else None)
    if part is None:
        return None
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return None
    return _decode_part(payload, _param(part.get_content_charset)), part.get_content_subtype() == "html"


def _decode_part(payload: bytes, charset: str | None) -> str:
    if charset:
        if charset.lower() in ("iso-2022-jp", "iso2022jp", "csiso2022jp"):
            try:
                return decode_iso2022_jp(payload)
            except UnicodeDecodeError:
                pass
        name = _WIDER.get(charset.lower(), charset)
        try:
            return payload.decode(name)
        except (LookupError, UnicodeDecodeError, ValueError):  # ValueError: a charset name with a NUL
            pass  # a mailer that declared the wrong charset
    try:
        return decode(payload).text
    except UndecodableError:
        return payload.decode("utf-8", errors="replace")


def _header(message: Message, name: str) -> str:
    """A header decoded (RFC 2047 encoded words, each with the charset it names), on one line."""
    raw = message.get(name)
    if raw is None:
        return ""
    try:
        # a header with 8-bit bytes (RFC 6532's raw UTF-8, a mailer's Shift_JIS) comes as a Header
        # whose bytes decode_header hands back as "unknown-8bit": decoded below as a body is, where
        # str() of it made each byte U+FFFD
        pieces = email.header.decode_header(raw)
    except (ValueError, IndexError, TypeError, email.errors.HeaderParseError):
        return " ".join(str(raw).split())
    text = "".join(
        _decode_part(value, charset) if isinstance(value, bytes) else value
        for value, charset in pieces
    )
    return " ".join(text.split())
