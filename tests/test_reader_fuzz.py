"""Hostile files for every reader (hypothesis), so that fuzzing finds the next odd file before a
person does. Each format's generator writes real files (with the libraries people's tools use,
`office_files.py`, or by the format's own rules) holding what has broken text pipelines before:
controls, lone surrogates as the format escapes them, bidi and private-use characters; nesting past
parsers' limits; entities (billion laughs, external files); zip containers cut short or holding
garbage; random bytes behind every extension.

The contract, for every file: `extract_file` returns text that UTF-8 holds (blocks and parts inside
it), or raises `Unextractable` with a reason, which the indexer records as a skipped file. Anything
else is a reader's bug (`index/preparing.py` catches it too, but as "a reader's bug: tried again
next time"), and so is a hang or a memory blow-up. The same strategies run for longer in
`python -m benchmarks.hardening.fuzz_readers`.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import json
import os
import quopri
import re
import shutil
import signal
import tempfile
import threading
import uuid
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html import escape
from pathlib import Path, PurePath

import office_files as make  # tests/office_files.py
import pytest
from conftest import run_oboyu as oboyu
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pdfs import make_pdf  # tests/pdfs.py

from oboyu.documents.extract import READERS, extract_file
from oboyu.documents.extracted import LINE_BREAK, Extracted, Unextractable
from oboyu.documents.filetypes import FORMAT_EXT, MARKDOWN_EXT, OLD_BINARY, RST_EXT, SOURCE_TYPES, TEXT_EXT, file_type_for
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder

MAX_SECONDS = 20  # one small file; the slowest reader takes well under a second
MAX_GROWTH_MB = 400  # the inputs are at most a few hundred KB: a reader that needs more is unbounded
CI = settings(max_examples=20, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))

# what an external entity would read: it must never reach the text
SECRET = f"oboyu-fuzz-secret-{uuid.uuid4().hex}"
SECRET_FILE = Path(tempfile.gettempdir()) / f"oboyu-fuzz-secret-{os.getpid()}.txt"


@pytest.fixture(scope="module", autouse=True)
def _secret_removed() -> Iterator[None]:
    yield
    SECRET_FILE.unlink(missing_ok=True)


# the contract

class ReaderHang(BaseException):
    """A reader past MAX_SECONDS (a BaseException: readers' `except Exception` cannot swallow it)."""


def _rss_mb(field: str) -> float | None:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:  # not Linux: time is checked, memory is not
        return None
    match = re.search(rf"{field}:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else None


@contextlib.contextmanager
def bounded(limit: float = MAX_SECONDS, usage: dict[str, float] | None = None) -> Iterator[None]:
    """The block within `limit` seconds (SIGALRM, in the main thread) and MAX_GROWTH_MB of peak
    memory over what the process held before it (the peak reset through /proc/self/clear_refs);
    `usage["mb"]`: that growth."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    before = _rss_mb("VmRSS")
    alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if alarm:
        def hang(_signum, _frame):
            raise ReaderHang(f"still reading after {limit} s")
        previous = signal.signal(signal.SIGALRM, hang)
        signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    peak = _rss_mb("VmHWM")
    if before is not None and peak is not None:
        if usage is not None:
            usage["mb"] = peak - before
        assert peak - before < MAX_GROWTH_MB, f"reading took {peak - before:.0f} MB"


def read_or_refuse(file_type: str, name: str, data: bytes, usage: dict[str, float] | None = None) -> Extracted | None:
    """The file's text under the contract, or None where the reader refused it with a reason."""
    SECRET_FILE.write_text(SECRET)
    with bounded(usage=usage):
        try:
            extracted, encoding = extract_file(data, file_type, name)
        except Unextractable as exc:
            assert str(exc).strip(), "a refusal says why"
            return None
    for piece in (extracted.text, extracted.title or "", encoding, *(b.text for b in extracted.blocks)):
        piece.encode("utf-8")  # strict: a lone surrogate raises
    size = len(extracted.text)
    for block in extracted.blocks:
        assert 0 <= block.start_char <= block.end_char <= size, block
        if block.exact and not block.heading_level:
            assert extracted.text[block.start_char:block.end_char] == block.text, block
        assert block.start_line == len(LINE_BREAK.findall(extracted.text, 0, block.start_char)) + 1, block
    assert all(0 <= offset <= size for offset, _ in extracted.parts)
    assert SECRET not in extracted.text and SECRET not in (extracted.title or "")
    return extracted


# text

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ODD = [
    "\x00", "\x01", "\x07", "\x08", "\t", "\n", "\x0b", "\x0c", "\r", "\r\n", "\x1b[2J", "\x1b]0;title\x07", "\x7f",
    "\x85", "\x9b", "\xa0", "\xad", "\u2028", "\u2029", "\ufeff", "\ufffe", "\uffff", "\ufffd", "\u200b", "\u3000",
    "\ud800", "\udbff", "\udc80", "\udfff", "\ud83d\ude00", "\ud83d", "\U0001f600", "\U0010ffff", "\ue000", "\uf8ff",
    "\U000f0000", *BIDI, "\u0301", "e\u0301", "\u3099", "会議", "議事録", "ｶﾀｶﾅ", "①㈱", "𠮷", "ヴ", "  ", "\\", "&", "<", ">",
    '"', "'", "#", "*", "=", "-", "`", "{", "}", "[", "]", ",", ";", "|",
]
_ODD_CATEGORIES = st.characters(categories=["Cc", "Cf", "Cs", "Co", "Zl", "Zp", "Mn", "Lo"])


def hostile_text(max_size: int = 30) -> st.SearchStrategy[str]:
    """Text with every kind of control, lone surrogates, bidi and private-use characters."""
    piece = st.one_of(st.sampled_from(ODD), _ODD_CATEGORIES, st.text(max_size=6))
    return st.lists(piece, max_size=max_size).map("".join)


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """What XML 1.0 (and so a library that writes it) can hold of a text."""
    return _NOT_XML.sub("", text)


# the characters a writer cannot put in an XML file, written as references (a parser refuses them)
CHAR_REFS = ["&#0;", "&#x1;", "&#xd800;", "&#55296;", "&#xdfff;", "&#x110000;", "&#xfffe;", "&#65535;", "&#x202e;",
             "&#xe000;", "&#x1b;", "&#99999999999;", "&amp;", "&lt;", "&nbsp;", "&undefined;"]
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "cp932", "euc_jp", "iso2022_jp", "latin-1"]


def encode(text: str, encoding: str) -> bytes:
    if encoding.startswith("utf"):
        return text.encode(encoding, "surrogatepass")  # lone surrogates as bytes no valid file holds
    return text.encode(encoding, "replace")


@st.composite
def encoded_text(draw, text: st.SearchStrategy[str]) -> bytes:
    """Text in one of the encodings people's files use, sometimes cut inside a character."""
    data = encode(draw(text), draw(st.sampled_from(ENCODINGS)))
    if data and draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return data


# XML: trees of a format's own elements with hostile values, and the entity tricks

SECRET_URL = SECRET_FILE.as_uri()
PROLOGS = [
    "", "<?xml version='1.0' encoding='UTF-8' standalone='yes'?>", "<?xml version='1.1'?>",
    "<?xml version='1.0' encoding='UTF-16'?>", "<?xml version='1.0' encoding='bogus'?>",
    f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "{SECRET_URL}">]>',
    f'<!DOCTYPE x [<!ENTITY % p SYSTEM "{SECRET_URL}"> %p;]>',
    '<!DOCTYPE x SYSTEM "http://127.0.0.1:9/evil.dtd">',
    '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">'
    '<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">'
    '<!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]>',
]
ENTITY_REFS = ["&xxe;", "&h;", "&a;"]
# what a reader turns into a number, a level or a count; then names, types and paths it looks up
NUMBERS = ["", "0", "1", "2", "9", "10", "-1", "²", "٣", "1.5", " 3 ", "1e9", "9" * 5000, "99999999999999999999", "99999999999",
           "1000000000", "300000000"]
WORDS = ["abc", "title", "Title", "heading 1", "Heading 9", "heading 10", "separator", "nav", "no", "yes", "code", "markdown",
         "raw", "application/xhtml+xml", "application/x-dtbncx+xml", "text/html", "../../../etc/passwd", "/abs", "%00", "%ff%fe",
         "a%2Fb", "#frag", "chap1.xhtml", "EPUB/chap1.xhtml", "nav.xhtml", "s", "str", "n", "b", "e", "inlineStr", "A1",
         "XFD1048576", "A99999999", "rId1", "rId999"]
ATTRIBUTE_VALUE = st.one_of(st.sampled_from(NUMBERS), st.sampled_from(WORDS), hostile_text(6).map(lambda t: escape(xml_safe(t))))


@dataclass(frozen=True)
class Xml:
    """What a container member holds: its root element and namespaces, the elements and attributes
    its reader looks at, and where in the root its content goes."""

    root: str
    namespaces: str
    tags: tuple[str, ...]
    attributes: tuple[str, ...]
    inner: tuple[str, ...] = ()


def xml_tree(xml: Xml) -> st.SearchStrategy[str]:
    """Elements of a member's vocabulary, nested, with hostile attribute values and text."""
    text = st.one_of(hostile_text(8).map(lambda t: escape(xml_safe(t), quote=False)), st.sampled_from(CHAR_REFS + ENTITY_REFS))

    def element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        def build(tag: str, attrs: list[tuple[str, str]], kids: list[str]) -> str:
            pairs = "".join(f' {name}="{v}"' for name, v in attrs)
            return f"<{tag}{pairs}>{''.join(kids)}</{tag}>"
        attrs = st.lists(st.tuples(st.sampled_from(xml.attributes), ATTRIBUTE_VALUE), max_size=3, unique_by=lambda a: a[0])
        return st.builds(build, st.sampled_from(xml.tags), attrs, st.lists(children, max_size=4))

    return st.recursive(text, element, max_leaves=16)


_START_TAG = re.compile(rb"<[A-Za-z][^<>]*?(?<!/)>")
_ATTRIBUTE = re.compile(rb"""(\s[\w:.-]+=)(["'])(.*?)\2""")


@st.composite
def hostile_member(draw, original: bytes | None, xml: Xml) -> bytes:
    """A container member: the written one with generated elements spliced into its own (where
    its reader looks), its attributes given hostile values, or a hostile prolog; else a generated
    tree in the member's root, nesting past parsers' limits, or garbage."""
    kinds = ["tree", "deep", "garbage"] + (["splice", "splice", "attributes", "attributes", "prolog"] if original else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "garbage":
        return draw(st.binary(max_size=200))
    if original and kind == "splice":
        starts = [m.end() for m in _START_TAG.finditer(original)] or [len(original)]
        out = original
        for at in sorted(draw(st.lists(st.sampled_from(starts), min_size=1, max_size=3, unique=True)), reverse=True):
            out = out[:at] + draw(xml_tree(xml)).encode("utf-8", "surrogatepass") + out[at:]
        return out
    if original and kind == "attributes":  # those the reader looks at first
        found = list(_ATTRIBUTE.finditer(original))
        names = {name.encode() for name in xml.attributes}
        found = [m for m in found if m.group(1).strip().rstrip(b"=") in names] or found
        out = original
        for match in sorted(draw(st.lists(st.sampled_from(found), max_size=4, unique_by=lambda m: m.start())) if found else [],
                            key=lambda m: m.start(), reverse=True):
            out = out[:match.start(3)] + draw(ATTRIBUTE_VALUE).encode("utf-8", "surrogatepass") + out[match.end(3):]
        return out
    if original and kind == "prolog":
        body = re.sub(rb"^\s*<\?xml[^>]*\?>", b"", original)
        starts = [m.end() for m in _START_TAG.finditer(body)][1:] or [len(body)]
        at = draw(st.sampled_from(starts))
        return draw(st.sampled_from(PROLOGS)).encode() + body[:at] + draw(st.sampled_from(ENTITY_REFS)).encode() + body[at:]
    if kind == "deep":
        tag = draw(st.sampled_from(xml.tags))
        depth = draw(st.sampled_from([200, 255, 257, 1000, 20_000]))
        body_text = f"<{tag}>" * depth + "x" + f"</{tag}>" * depth
    else:
        body_text = draw(xml_tree(xml))
    for tag in reversed(xml.inner):
        body_text = f"<{tag}>{body_text}</{tag}>"
    prolog = draw(st.sampled_from(PROLOGS))
    return f"{prolog}<{xml.root} {xml.namespaces}>{body_text}</{xml.root}>".encode("utf-8", "surrogatepass")


# zip containers

@st.composite
def container(draw, members: dict[str, bytes]) -> bytes:
    """The members zipped, then damaged as disks, downloads and odd tools damage them."""
    members = dict(members)
    names = sorted(members)
    damage = draw(st.sampled_from(["none", "none", "none", "none", "garbage member", "drop member", "odd name", "duplicate", "compression",
                                   "unknown method", "encrypted flag", "lying size", "cut"]))
    method = zipfile.ZIP_DEFLATED
    if damage == "garbage member":
        members[draw(st.sampled_from(names))] = draw(st.binary(max_size=300))
    elif damage == "drop member":
        members.pop(draw(st.sampled_from(names)))
    elif damage == "odd name":
        members[draw(st.sampled_from(["../../evil.xml", "/abs.xml", "word\\document.xml", "a\x00b", "名前.xml", "x/" * 60]))] = b"<x/>"
    elif damage == "compression":
        method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]))
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w", method) as archive:
        warnings.simplefilter("ignore")  # a duplicate name
        for name in names if damage != "drop member" else sorted(members):
            if name in members:
                archive.writestr(name, members[name])
        for name in members.keys() - set(names):
            archive.writestr(name, members[name])
        if damage == "duplicate":
            archive.writestr(draw(st.sampled_from(names)), draw(st.binary(max_size=100)))
    data = bytearray(out.getvalue())
    central = [m.start() for m in re.finditer(b"PK\x01\x02", data)]
    if central and damage in ("unknown method", "encrypted flag", "lying size"):
        at = central[draw(st.integers(0, len(central) - 1))]
        if damage == "unknown method":
            data[at + 10: at + 12] = draw(st.sampled_from([99, 12, 14, 93, 65535])).to_bytes(2, "little")
        elif damage == "encrypted flag":
            data[at + 8] |= 1
        else:  # the sizes the directory declares, not those of the data
            data[at + 20: at + 28] = draw(st.sampled_from([0, 1, 0xFFFFFFFF, 2**31])).to_bytes(4, "little") * 2
    if damage == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    return bytes(data)


def unzipped(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {item.filename: archive.read(item) for item in archive.infolist()}


@st.composite
def office_file(draw, data: bytes, hostile: dict[str, Xml]) -> bytes:
    """A file a library wrote, some of its XML members made hostile (or added), then zipped
    again and perhaps damaged."""
    members = unzipped(data)
    for name in draw(st.lists(st.sampled_from(sorted(hostile)), max_size=2, unique=True)):
        members[name] = draw(hostile_member(members.get(name), hostile[name]))
    return draw(container(members))


# each format

def written(write: Callable[..., bytes], args: tuple, plain: tuple) -> bytes:
    """A file a library wrote from hostile text; from plain text where the library refuses that
    text (an empty paragraph to comment on, a sheet name Excel forbids, a glyph a font lacks)."""
    try:
        return write(*args)
    except Exception:
        return write(*plain)


def safe(max_size: int = 30) -> st.SearchStrategy[str]:
    """Hostile text as a writer library takes it (XML 1.0 characters only)."""
    return hostile_text(max_size).map(xml_safe)


CORE = Xml("cp:coreProperties", 'xmlns:cp="urn:cp" xmlns:dc="http://purl.org/dc/elements/1.1/"', ("dc:title", "dc:creator"), ("xml:lang",))
W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
DOCX_TAGS = ("w:p", "w:r", "w:t", "w:tbl", "w:tr", "w:tc", "w:pPr", "w:outlineLvl", "w:pStyle", "w:footnoteReference",
             "w:endnoteReference", "w:commentReference", "w:sdt", "w:sdtContent", "w:customXml", "w:ins", "w:del", "w:delText",
             "w:smartTag", "w:ruby", "w:rt", "w:rubyBase", "w:br", "w:cr", "w:tab", "w:noBreakHyphen", "w:instrText", "w:style",
             "w:name", "w:basedOn", "w:footnote", "w:comment")
DOCX_ATTRIBUTES = ("w:val", "w:id", "w:type", "w:author", "w:styleId")
DOCX = {
    "word/document.xml": Xml("w:document", W_NS, DOCX_TAGS, DOCX_ATTRIBUTES, ("w:body",)),
    **{f"word/{part}.xml": Xml(f"w:{part}", W_NS, DOCX_TAGS, DOCX_ATTRIBUTES) for part in ("styles", "footnotes", "endnotes", "comments")},
    "docProps/core.xml": CORE,
}


@st.composite
def docx_files(draw) -> tuple[str, bytes]:
    document = written(make.docx_bytes, (draw(safe(10)), [(draw(safe(10)), draw(st.lists(safe(), min_size=1, max_size=3)))],
                                         draw(st.none() | st.just([[draw(safe(8)), draw(safe(8))]])), draw(st.none() | safe(10))),
                       ("t", [("h", ["p"])]))
    return "memo.docx", draw(office_file(document, DOCX))


ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
          'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:dc="http://purl.org/dc/elements/1.1/"')
ODF_TAGS = ("text:h", "text:p", "text:span", "text:s", "text:tab", "text:line-break", "text:note", "text:note-citation",
            "text:note-body", "office:annotation", "dc:creator", "table:table", "table:table-row", "table:table-cell", "text:list",
            "text:list-item", "text:section", "text:ruby", "text:ruby-text", "draw:page", "draw:frame", "draw:text-box",
            "presentation:notes", "text:soft-page-break", "text:tracked-changes")
ODF_ATTRIBUTES = ("text:outline-level", "text:c", "presentation:class", "draw:name", "table:name")
ODF_META = Xml("office:document-meta", ODF_NS, ("office:meta", "dc:title"), ("xml:lang",), ("office:meta",))


def odf(body: str) -> dict[str, Xml]:
    return {"content.xml": Xml("office:document-content", ODF_NS, ODF_TAGS, ODF_ATTRIBUTES, ("office:body", body)), "meta.xml": ODF_META}


def odf_files(name: str, write: Callable[..., bytes], args: st.SearchStrategy[tuple], plain: tuple,
              body: str) -> st.SearchStrategy[tuple[str, bytes]]:
    return args.flatmap(lambda a: office_file(written(write, a, plain), odf(body))).map(lambda data: (name, data))


P_NS = ('xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"')
PPTX_TAGS = ("p:sp", "p:nvSpPr", "p:cNvPr", "p:nvPr", "p:ph", "p:spPr", "a:xfrm", "a:off", "a:ext", "p:txBody", "a:bodyPr", "a:p",
             "a:r", "a:t", "a:br", "p:grpSp", "p:grpSpPr", "p:nvGrpSpPr", "p:cNvGrpSpPr", "p:graphicFrame", "a:graphic",
             "a:graphicData", "a:tbl", "a:tr", "a:tc", "p:pic", "p:cxnSp")
PPTX_ATTRIBUTES = ("id", "name", "type", "idx", "x", "y", "cx", "cy", "uri", "r:id", "r:embed")
PPTX = {
    "ppt/slides/slide1.xml": Xml("p:sld", P_NS, PPTX_TAGS, PPTX_ATTRIBUTES, ("p:cSld", "p:spTree")),
    "ppt/notesSlides/notesSlide1.xml": Xml("p:notes", P_NS, PPTX_TAGS, PPTX_ATTRIBUTES, ("p:cSld", "p:spTree")),
    "ppt/presentation.xml": Xml("p:presentation", P_NS, ("p:sldIdLst", "p:sldId", "p:sldSz"), ("id", "r:id", "cx", "cy")),
    "docProps/core.xml": CORE,
}


@st.composite
def pptx_files(draw) -> tuple[str, bytes]:
    deck = written(make.pptx_bytes, (draw(st.lists(st.tuples(safe(10), safe(), safe(10)), min_size=1, max_size=2)),), ([("t", "b", "")],))
    return "deck.pptx", draw(office_file(deck, PPTX))


X_NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
XLSX_TAGS = ("sheetData", "row", "c", "v", "is", "t", "f", "si", "sheets", "sheet", "dimension", "mergeCells", "mergeCell")
XLSX_ATTRIBUTES = ("r", "t", "s", "ref", "name", "sheetId", "r:id", "spans")
XLSX = {
    "xl/worksheets/sheet1.xml": Xml("worksheet", X_NS, XLSX_TAGS, XLSX_ATTRIBUTES, ("sheetData",)),
    "xl/sharedStrings.xml": Xml("sst", X_NS, XLSX_TAGS, XLSX_ATTRIBUTES),
    "xl/workbook.xml": Xml("workbook", X_NS, XLSX_TAGS, XLSX_ATTRIBUTES, ("sheets",)),
}
_SHEET_NAME_ODD = re.compile(r"[\[\]:*?/\\']")


def sheet_name() -> st.SearchStrategy[str]:
    return safe(10).map(lambda t: _SHEET_NAME_ODD.sub("", t)[:31].strip() or "s")


def sheet_cell() -> st.SearchStrategy[object]:
    return st.one_of(st.none(), safe(20), st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False), st.booleans())


@st.composite
def xlsx_files(draw) -> tuple[str, bytes]:
    names = draw(st.lists(sheet_name(), min_size=1, max_size=2, unique_by=str.lower))
    book = written(make.xlsx_bytes, ({name: draw(st.lists(st.lists(sheet_cell(), max_size=4), max_size=4)) for name in names},),
                   ({"s": [["a"]]},))
    name = draw(st.sampled_from(["book.xlsx", "book.xlsm", "book.xlsb", "book.ods", "book.xls"]))  # the name says one format, the bytes another
    return name, draw(office_file(book, XLSX))


@st.composite
def xls_files(draw) -> tuple[str, bytes]:
    """A legacy binary workbook (xlwt), perhaps with bytes overwritten or cut: calamine's BIFF reader."""
    rows = draw(st.lists(st.lists(st.one_of(safe(20), st.integers(-(2**31), 2**31), st.floats(-1e300, 1e300)), max_size=4), max_size=4))
    data = bytearray(written(make.xls_bytes, (draw(sheet_name()), rows), ("s", [["a"]])))
    for where, value in draw(st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), max_size=6)):
        data[where] = value
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return "old.xls", bytes(data)


@st.composite
def ods_files(draw) -> tuple[str, bytes]:
    book = written(make.ods_bytes, (draw(st.lists(st.lists(safe(10), min_size=1, max_size=3), min_size=1, max_size=3)),), ([["a"]],))
    return "book.ods", draw(office_file(book, odf("office:spreadsheet")))


OPF_NS = 'xmlns="http://www.idpf.org/2007/opf" xmlns:dc="http://purl.org/dc/elements/1.1/"'
EPUB_TAGS = ("metadata", "dc:title", "manifest", "item", "spine", "itemref", "rootfiles", "rootfile", "navMap", "navPoint",
             "navLabel", "text", "content", "nav", "ol", "li", "a", "EncryptedData", "CipherData", "CipherReference")
EPUB_ATTRIBUTES = ("id", "href", "media-type", "properties", "idref", "linear", "full-path", "src", "URI")
CONTAINER_NS = 'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"'
XHTML_NS = 'xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"'


def epub_vocabulary() -> dict[str, Xml]:
    return {
        "META-INF/container.xml": Xml("container", CONTAINER_NS, EPUB_TAGS, EPUB_ATTRIBUTES, ("rootfiles",)),
        "EPUB/content.opf": Xml("package", OPF_NS, EPUB_TAGS, EPUB_ATTRIBUTES),
        "EPUB/toc.ncx": Xml("ncx", 'xmlns="http://www.daisy.org/z3986/2005/ncx/"', EPUB_TAGS, EPUB_ATTRIBUTES, ("navMap",)),
        "EPUB/nav.xhtml": Xml("html", XHTML_NS, EPUB_TAGS, EPUB_ATTRIBUTES, ("body", "nav")),
        "EPUB/chap1.xhtml": Xml("html", XHTML_NS, HTML_TAGS, HTML_ATTRIBUTES, ("body",)),
        "META-INF/encryption.xml": Xml("encryption", CONTAINER_NS, EPUB_TAGS, EPUB_ATTRIBUTES),
    }


@st.composite
def epub_files(draw) -> tuple[str, bytes]:
    chapters = draw(st.lists(st.tuples(safe(10), html_body()), min_size=1, max_size=2))
    book = written(make.epub_bytes, (draw(safe(10)), [(title, f"<div><p>本文。</p>{xml_safe(body)}</div>") for title, body in chapters]), ("b", [("c", "<p>x</p>")]))
    return "book.epub", draw(office_file(book, epub_vocabulary()))


# web pages

HTML_TAGS = ("div", "p", "span", "a", "b", "nav", "header", "footer", "article", "main", "aside", "script", "style", "noscript",
             "template", "pre", "code", "table", "tr", "td", "th", "ul", "li", "ruby", "rt", "rp", "h1", "h2", "h6", "br", "hr",
             "svg", "math", "iframe", "button", "form", "section", "title", "meta", "body", "html", "head", "xmp", "plaintext")
HTML_ATTRIBUTES = ("hidden", "aria-hidden", "role", "style", "href", "charset", "class", "lang", "dir")
CHARSETS = ["utf-8", "shift_jis", "euc-jp", "iso-2022-jp", "utf-16", "utf-16le", "utf-32", "utf-7", "latin-1", "cp1252", "koi8-r",
            "undefined", "unicode_escape", "raw_unicode_escape", "rot13", "base64", "hex", "zlib", "idna", "punycode",
            "x-user-defined", "mbcs", "bogus", "", "utf-8\x00", "gb2312", "ks_c_5601-1987", "utf_8_sig", "big5hkscs"]


def html_body() -> st.SearchStrategy[str]:
    text = st.one_of(hostile_text(10).map(lambda t: escape(t, quote=False)), st.sampled_from(CHAR_REFS), hostile_text(6))
    value = st.one_of(st.sampled_from(["navigation", "banner", "display:none", "true", "rtl", ""]), hostile_text(6).map(escape))

    def element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        def build(tag: str, attrs: list[tuple[str, str]], kids: list[str], closed: bool) -> str:
            pairs = "".join(f' {name}="{v}"' for name, v in attrs)
            return f"<{tag}{pairs}>{''.join(kids)}" + (f"</{tag}>" if closed else "")
        return st.builds(build, st.sampled_from(HTML_TAGS), st.lists(st.tuples(st.sampled_from(HTML_ATTRIBUTES), value), max_size=2),
                         st.lists(children, max_size=4), st.booleans())

    return st.recursive(text, element, max_leaves=24)


@st.composite
def html_files(draw) -> tuple[str, bytes]:
    charset = draw(st.sampled_from(CHARSETS))
    head = draw(st.sampled_from([f'<meta charset="{charset}">', f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">', ""]))
    doctype = draw(st.sampled_from(["", "<!DOCTYPE html>", PROLOGS[5] + "<p>&xxe;</p>", PROLOGS[8] + "<p>&h;</p>"]))
    depth = draw(st.sampled_from([0, 0, 0, 300, 5000]))
    page = f"{doctype}<html><head>{head}<title>{escape(draw(hostile_text(10)))}</title></head><body>{'<div>' * depth}{draw(html_body())}"
    encoding = charset if draw(st.booleans()) else draw(st.sampled_from(ENCODINGS))
    try:
        data = encode(page, encoding)
    except (LookupError, UnicodeError, ValueError):  # a charset Python cannot write: the page as UTF-8
        data = encode(page, "utf-8")
    return draw(st.sampled_from(["page.html", "page.htm", "page.xhtml"])), data


# text sources

MARKUP_LINES = ["# ", "## ", "####### ", "```", "~~~", "````python", "---", "...", "===", "***", "title: ", "* TODO ", "** ",
                "#+TITLE: ", "#+BEGIN_SRC", "#+END_SRC", "#+BEGIN_", ".. ", "::", "Setext", "=====", "-----", "> ", "- ", "1. "]


@st.composite
def source_files(draw, file_type: str, names: list[str]) -> tuple[str, bytes]:
    lines = draw(st.lists(st.tuples(st.sampled_from(["", *MARKUP_LINES]), hostile_text(12)), max_size=12))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r", "\x85", "\u2028", "\n\n"]))
    text = ending.join(marker + rest for marker, rest in lines)
    if draw(st.booleans()):
        data = draw(encoded_text(st.just(text)))
    else:
        data = draw(st.binary(max_size=300))  # random bytes behind the extension
    return draw(st.sampled_from(names)), data


# data formats

def json_values() -> st.SearchStrategy[object]:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), hostile_text(12))
    return st.recursive(leaves, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(hostile_text(8), kids, max_size=4),
                        max_leaves=20)


@st.composite
def json_text(draw, value: st.SearchStrategy[object]) -> bytes:
    """A value as JSON (lone surrogates as `\\ud800` escapes, or raw), perhaps nested deep, holding
    a number Python will not convert, or cut short."""
    text = json.dumps(draw(value), ensure_ascii=draw(st.booleans()))
    depth = draw(st.sampled_from([0, 0, 0, 65, 66, 900, 1100, 5000]))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"k":', "}")]))
    text = opener * depth + text + closer * depth
    if draw(st.integers(0, 5)) == 0:
        text = draw(st.sampled_from(['{"n": 1%s}', "[%s]", '{"cells": [{"cell_type": "code", "source": "%s"}]}'])) % ("1" * 5000)
    data = encode(text, draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"])))
    if draw(st.integers(0, 4)) == 0:
        data = data[: draw(st.integers(0, len(data)))]
    return data


@st.composite
def json_files(draw) -> tuple[str, bytes]:
    return "data.json", draw(json_text(json_values()))


@st.composite
def notebook_files(draw) -> tuple[str, bytes]:
    anything = json_values()
    source = st.one_of(hostile_text(20), st.lists(st.one_of(hostile_text(10), anything), max_size=4), anything)
    cell = st.fixed_dictionaries({"cell_type": st.one_of(st.sampled_from(["markdown", "code", "raw", "heading"]), anything)},
                                 optional={"source": source, "input": source, "outputs": anything})
    cells = st.one_of(st.lists(st.one_of(cell, anything), max_size=4), anything)
    notebook = st.one_of(
        st.fixed_dictionaries({"cells": cells, "nbformat": st.just(4)}),
        st.fixed_dictionaries({"worksheets": st.one_of(st.lists(st.one_of(st.fixed_dictionaries({"cells": cells}), anything),
                                                                   max_size=2), anything), "nbformat": st.just(3)}),
        anything,
    )
    return "analysis.ipynb", draw(json_text(notebook))


@st.composite
def csv_files(draw) -> tuple[str, bytes]:
    rows = draw(st.lists(st.lists(hostile_text(10), max_size=5), max_size=6))
    out = io.StringIO(newline="")
    dialect = draw(st.sampled_from([{}, {"delimiter": "\t"}, {"delimiter": ";"}, {"delimiter": "|"}, {"quoting": csv.QUOTE_ALL},
                                    {"quoting": csv.QUOTE_NONE, "escapechar": "\\"}, {"lineterminator": "\r"}]))
    try:
        csv.writer(out, **dialect).writerows(rows)
        text = out.getvalue()
    except csv.Error:
        text = "\n".join(",".join(row) for row in rows)
    if draw(st.booleans()):  # quotes left open, as a cut-off export leaves them
        text += draw(st.sampled_from(['"', '"a,"b', '""', "\x00", '"' * 3000, ",\"\n" * 400]))
    name = draw(st.sampled_from(["table.csv", "table.tsv", "table.tab"]))
    return name, draw(encoded_text(st.just(text)))


# RTF, token by token: what Word writes, and what it never would
RTF_WORDS = [r"\par ", r"\line ", r"\tab ", r"\page ", r"\sect ", r"\cell ", r"\row ", r"\uc1 ", r"\uc0 ", r"\uc ", r"\uc-1 ",
             r"\*\comment ", r"{\*\generator x;}", r"\pict\bin ", r"\pict\bin5 abcde", r"\bin99999999 ", r"\f0 ", r"\f1 ", r"\f ",
             r"\deff0 ", r"\ansi ", r"\fonttbl ", r"\colortbl ", r"\emdash ", r"\~", r"\-", r"\_", "\\\n", "\\{", "\\}", "\\\\",
             r"\'", r"\'8", r"\'zz", r"\fldinst{HYPERLINK ", r"\field{\*\fldinst{HYPERLINK ""x""}}{\fldrslt{y}}",
             r"\ansicpg ", r"\ansicpg-1 ", r"\unknownword ", r"\abcdefghijklmnopqrstuvwxyzabcdefghijklm ", "{", "}", "}}}"]


@st.composite
def rtf_files(draw) -> tuple[str, bytes]:
    codepage = draw(st.sampled_from(["", r"\ansicpg932", r"\ansicpg1252", r"\ansicpg65001", r"\ansicpg0", r"\ansicpg99999",
                                     r"\ansicpg1200", r"\ansicpg037", r"\ansicpg10001"]))
    charsets = draw(st.lists(st.one_of(st.sampled_from([0, 2, 77, 78, 79, 80, 81, 82, 85, 86, 87, 88, 89, 128, 134, 222, 255]),
                                       st.integers(0, 99999)), max_size=2))
    fonts = "".join(rf"{{\f{i}\fnil\fcharset{c} Font{i};}}" for i, c in enumerate(charsets))
    token = st.one_of(
        st.sampled_from(RTF_WORDS),
        st.integers(-(2**40), 2**40).map(lambda n: rf"\u{n}?"),
        st.sampled_from([-10179, -8704, 55357, 56832, -1, 0, 65535, 65536, 1114111, 1114112, 32767, -32768, 9999999999, -9999999999])
        .map(lambda n: rf"\u{n}?"),
        st.integers(0, 255).map(lambda b: rf"\'{b:02x}"),
        hostile_text(8).map(lambda t: t.encode("latin-1", "replace").decode("latin-1")),
    )
    body = "".join(draw(st.lists(token, max_size=30)))
    depth = draw(st.sampled_from([0, 0, 0, 100, 1000, 20_000]))
    text = rf"{{\rtf1\ansi{codepage}\deff0{{\fonttbl{fonts}}}" + "{" * depth + body + draw(st.sampled_from(["}", "", "}" * (depth + 1)]))
    return "letter.rtf", text.encode("latin-1")


# PDF

def pdf_with_info(title: bytes, stream: bytes) -> bytes:
    """A one-page PDF whose Info /Title and content stream are these bytes (make_pdf writes only
    Helvetica text lines; this writes what a broken maker could)."""
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>", 2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        5: b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        6: b"<< /Title " + title + b" /Author (x) >>",
    }
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number, body in objects.items():
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 7\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % offsets[n] for n in sorted(offsets))
    out += b"trailer\n<< /Size 7 /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def pdf_string(text: str, how: str) -> bytes:
    """A PDF text string: UTF-16BE with its BOM in hex (lone surrogates kept), or literal bytes."""
    if how == "hex":
        return b"<FEFF" + text.encode("utf-16-be", "surrogatepass").hex().upper().encode() + b">"
    raw = text.encode("latin-1", "replace").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
    return b"(" + raw + b")"


@st.composite
def pdf_files(draw) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(["lines", "info", "info", "japanese"]))
    if kind == "lines":
        pages = draw(st.lists(st.lists(hostile_text(12).map(lambda t: t.encode("latin-1", "replace").decode("latin-1")), max_size=3),
                              min_size=1, max_size=3))
        data = make_pdf(pages)
    elif kind == "info":
        shown = b" ".join(pdf_string(t, draw(st.sampled_from(["hex", "literal"]))) + b" Tj"
                          for t in draw(st.lists(hostile_text(10), max_size=3)))
        nesting = b"[" * draw(st.sampled_from([0, 0, 100, 10_000]))
        stream = b"BT /F1 12 Tf 72 720 Td " + shown + b" " + nesting + b" ET"
        data = pdf_with_info(pdf_string(draw(hostile_text(12)), draw(st.sampled_from(["hex", "literal"]))), stream)
    else:
        data = written(make.pdf_bytes_japanese, (draw(st.lists(safe(12), min_size=1, max_size=2)),), (["あ"],))
    data = bytearray(data)
    for where, value in draw(st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), max_size=3)):
        data[where] = value
    if draw(st.integers(0, 3)) == 0:
        data = data[: draw(st.integers(0, len(data)))]
    return "paper.pdf", bytes(data)


# mail

MAIL_CHARSETS = ["utf-8", "iso-2022-jp", "shift_jis", "euc-jp", "utf-16", "utf-7", "unicode_escape", "rot13", "base64", "idna",
                 "undefined", "bogus", "", "us-ascii", "latin-1", "gb2312", "ks_c_5601-1987", "utf-8\x00", "x-unknown"]
TRANSFER = ["7bit", "8bit", "base64", "quoted-printable", "x-uuencode", "binary", "bogus"]


@st.composite
def header_value(draw) -> bytes:
    """A header as mailers write it (RFC 2047 words in any charset), or raw 8-bit bytes."""
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        how = draw(st.sampled_from(["raw", "word", "garbage word"]))
        text = draw(hostile_text(10))
        if how == "raw":
            parts.append(encode(text.replace("\n", " ").replace("\r", " "), draw(st.sampled_from(["utf-8", "cp932", "latin-1"]))))
        else:
            charset = draw(st.sampled_from(MAIL_CHARSETS)).replace("\x00", "")
            payload = draw(st.binary(max_size=20)) if how == "garbage word" else encode(text, "utf-8")
            parts.append(b"=?" + charset.encode() + b"?B?" + base64.b64encode(payload) + b"?=")
    return b" ".join(parts)


@st.composite
def message(draw, depth: int = 0) -> bytes:
    headers = b"".join(name + b": " + draw(header_value()) + b"\n" for name in
                       draw(st.lists(st.sampled_from([b"Subject", b"From", b"To", b"Cc", b"Date"]), max_size=5)))
    kind = draw(st.sampled_from(["text/plain", "text/html", "multipart/mixed", "message/rfc822", "application/octet-stream"]
                                if depth < 3 else ["text/plain", "text/html"]))
    charset = draw(st.sampled_from(MAIL_CHARSETS))
    transfer = draw(st.sampled_from(TRANSFER))
    if kind.startswith("multipart"):
        boundary = b"b" + str(depth).encode()
        parts = draw(st.lists(st.one_of(message(depth + 1), attachment()), max_size=3))
        body = b"".join(b"--" + boundary + b"\n" + part + b"\n" for part in parts) + draw(st.sampled_from([b"--" + boundary + b"--\n", b""]))
        return headers + b"MIME-Version: 1.0\nContent-Type: " + kind.encode() + b'; boundary="' + boundary + b'"\n\n' + body
    if kind == "message/rfc822":
        return headers + b"Content-Type: message/rfc822\n\n" + draw(message(depth + 1))
    body = draw(hostile_text(40))
    if kind == "text/html":
        body = f"<p>{body}</p>"
    payload = encode(body, "utf-8")
    if transfer == "base64":
        payload = base64.encodebytes(payload)
    elif transfer == "quoted-printable":
        payload = quopri.encodestring(payload)
    return (headers + b"Content-Type: " + kind.encode() + b"; charset=" + charset.encode("utf-8", "surrogatepass")
            + b"\nContent-Transfer-Encoding: " + transfer.encode() + b"\n\n" + payload)


@st.composite
def attachment(draw) -> bytes:
    """An attached file of another format (hostile itself), under an odd name or none."""
    name, data = draw(st.one_of(json_files(), rtf_files(), csv_files(), html_files(), source_files("markdown", ["a.md"]),
                                st.tuples(st.sampled_from(["x.docx", "x.pdf", "x.xlsx", "x.epub"]), st.binary(max_size=100))))
    name = draw(st.sampled_from([name, "", "..", "../../" + name, "名前 " + name, name + "\x00.txt"]))
    how = draw(st.sampled_from(["plain", "rfc2231", "broken rfc2231"]))
    if how == "plain":
        disposition = f'attachment; filename="{name}"'.encode("utf-8", "surrogatepass")
    elif how == "rfc2231":
        disposition = b"attachment; filename*=utf-8''" + re.sub(rb"[^A-Za-z0-9.]", lambda m: b"%%%02X" % m.group()[0], name.encode())
    else:
        disposition = b"attachment; filename*=bogus'x'%ff%fe%zz; filename*0*=us-ascii''a; filename*1=b"
    return (b"Content-Type: application/octet-stream\nContent-Transfer-Encoding: base64\nContent-Disposition: " + disposition
            + b"\n\n" + base64.encodebytes(data))


@st.composite
def email_files(draw) -> tuple[str, bytes]:
    data = draw(message())
    if draw(st.integers(0, 5)) == 0:  # multiparts nested past any recursion limit
        depth = draw(st.sampled_from([200, 2000]))
        data = b"".join(b"Content-Type: multipart/mixed; boundary=b%d\n\n--b%d\n" % (i, i) for i in range(depth)) + data
    if draw(st.booleans()):
        data = data.replace(b"\n", b"\r\n")
    if draw(st.integers(0, 4)) == 0:
        data = data[: draw(st.integers(0, len(data)))]
    return "mail.eml", data


@st.composite
def mbox_files(draw) -> tuple[str, bytes]:
    messages = draw(st.lists(message(), max_size=3))
    separator = draw(st.sampled_from([b"From a@b Mon Oct 13 09:00:00 2025\n", b"From \n", b"From x", b">From y\n"]))
    return "inbox.mbox", b"".join(separator + m + draw(st.sampled_from([b"\n", b"\n>From quoted\n", b""])) for m in messages)


# random bytes behind every extension: magic numbers of other formats first
EXTENSIONS = sorted({*MARKDOWN_EXT, *TEXT_EXT, *RST_EXT, *FORMAT_EXT, ".py", ".c", ".yaml"})
MAGIC = [b"", b"PK\x03\x04", b"PK\x05\x06" + b"\x00" * 18, b"%PDF-1.7\n", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", b"{\\rtf1 ",
         b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff", b"From x\nSubject: s\n", b"<html>", b"{", b"[", b"\x1b$B"]


@st.composite
def any_extension(draw) -> tuple[str, bytes]:
    return "file" + draw(st.sampled_from(EXTENSIONS)), draw(st.sampled_from(MAGIC)) + draw(st.binary(max_size=300))


CASES: dict[str, st.SearchStrategy[tuple[str, bytes]]] = {
    "markdown": source_files("markdown", ["note.md", "名前.markdown", "x.mdx"]),
    "text": source_files("text", ["memo.txt", "README"]),
    "rst": source_files("rst", ["doc.rst"]),
    "org": source_files("org", ["todo.org"]),
    "code": source_files("code", ["script.py", "Makefile", "style.css"]),
    "html": html_files(),
    "json": json_files(),
    "notebook": notebook_files(),
    "csv": csv_files(),
    "rtf": rtf_files(),
    "pdf": pdf_files(),
    "docx": docx_files(),
    "odt": odf_files("memo.odt", make.odt_bytes, st.tuples(safe(10), st.lists(safe(), min_size=1, max_size=3), st.none() | safe(10)),
                     ("h", ["p"]), "office:text"),
    "odp": odf_files("deck.odp", make.odp_bytes, st.tuples(st.lists(st.tuples(safe(10), safe()), max_size=2)), ([("t", "b")],),
                     "office:presentation"),
    "pptx": pptx_files(),
    "spreadsheet": st.one_of(xlsx_files(), xls_files(), ods_files()),
    "epub": epub_files(),
    "email": email_files(),
    "mbox": mbox_files(),
}


def case_type(case: str, name: str) -> str:
    """The file type a case's file is read as: its case's, or its name's (random bytes)."""
    if case != "any":
        return case
    return file_type_for(PurePath(name)) or "text"


def test_every_reader_is_fuzzed() -> None:
    """A new reader gets a generator here before it ships."""
    assert set(CASES) == set(READERS) | SOURCE_TYPES
    assert {file_type_for(PurePath("x" + ext)) for ext in EXTENSIONS} >= set(READERS)
    assert not set(OLD_BINARY) & set(EXTENSIONS)


@pytest.mark.parametrize("case", [*sorted(CASES), "any"])
@CI
@given(data=st.data())
def test_a_hostile_file_is_read_or_refused_with_a_reason(case: str, data: st.DataObject) -> None:
    name, content = data.draw(CASES[case] if case != "any" else any_extension(), label="file")
    read_or_refuse(case_type(case, name), name, content)


def with_member(data: bytes, member: str, old: bytes, new: bytes) -> bytes:
    """A container with `old` replaced by `new` in one member."""
    members = unzipped(data)
    assert old in members[member], (member, old)
    members[member] = members[member].replace(old, new)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()


DEEP_MAIL = b"".join(b"Content-Type: multipart/mixed; boundary=b%d\n\n--b%d\n" % (i, i) for i in range(2000)) + b"\nbody\n"
BROKEN_FILENAME = (b"Content-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: text/plain\n\n\xe6\x9c\xac\xe6\x96\x87\n--x\n"
                   b"Content-Disposition: attachment; filename*=x; filename*0*=us-ascii''a\n\nz\n--x--\n")


def found_by_fuzzing() -> list[tuple[str, str, bytes, str | None]]:
    """Files the fuzzing found a reader failing on (before its fix): type, name, bytes, and a
    text the reading must hold (None: refused with a reason is right)."""
    styles = make.docx_bytes("t", [("見出し", ["本文"])])
    return [
        ("json", "big.json", b'{"n": 1' + b"0" * 5000 + rb', "memo": "\u4f1a\u8b70"}', "会議"),  # int() refuses 4,301 digits
        ("notebook", "old.ipynb", b'{"worksheets": [{"cells": 5}], "nbformat": 3}', ""),  # TypeError: int is not iterable
        ("notebook", "mixed.ipynb", b'{"cells": [{"cell_type": "code", "source": ["a = ", 1, "2"]}]}', "a ="),  # "".join of a number
        ("rtf", "mac.rtf", rb"{\rtf1{\fonttbl{\f0\fcharset78 Osaka;}}\f0 \'82\'a0\'82\'a2}", "あい"),  # LookupError: mac_japanese
        ("rtf", "uc.rtf", rb"{\rtf1 \uc text}", None),  # TypeError: int(None)
        ("rtf", "huge.rtf", rb"{\rtf1 \u9999999999?}", None),  # OverflowError from chr()
        ("html", "undefined.html", b'<meta charset="undefined"><p>\xe4\xbc\x9a\xe8\xad\xb0</p>', "会議"),  # UnicodeError
        ("html", "escape.html", b'<meta charset="unicode_escape"><p>\\ud800 \\u4f1a</p>', "会"),  # lone surrogate: page refused
        ("email", "deep.eml", DEEP_MAIL, None),  # RecursionError in the parser
        ("email", "name.eml", BROKEN_FILENAME, "本文"),  # TypeError in email.utils.decode_params
        ("email", "boundary.eml", b"Content-Type: multipart/mixed; boundary*=x; boundary*0*=us-ascii''a\n\n--a\n", None),
        ("mbox", "inbox", b"From a\n" + DEEP_MAIL + b"From b\nSubject: s\n\n\xe6\xae\x8b\xe3\x82\x8b\n", "残る"),
        ("email", "raw.eml", "Subject: 会議の件\nFrom: 山田 <a@example.jp>\n\n本文\n".encode(), "Subject: 会議の件"),  # was U+FFFD
        ("pptx", "no-csld.pptx", with_member(make.pptx_bytes([("t", "b", "")]), "ppt/slides/slide1.xml", b"p:cSld>", b"p:cSlX>"), None),
        ("docx", "sup.docx", with_member(styles, "word/styles.xml", b'w:outlineLvl w:val="0"', 'w:outlineLvl w:val="²"'.encode()), "本文"),
        ("docx", "long.docx", with_member(styles, "word/styles.xml", b'w:outlineLvl w:val="0"', b'w:outlineLvl w:val="' + b"9" * 5000 + b'"'),
         "本文"),
        ("odt", "spaces.odt", with_member(make.odt_bytes("見出し", ["a  b"]), "content.xml", b"<text:p>a  b</text:p>",
                                          b'<text:p>a<text:s text:c="1000000000"/>b</text:p>'), "見出し"),  # 1 GB of spaces
        ("odt", "level.odt", with_member(make.odt_bytes("見出し", ["p"]), "content.xml", b'outline-level="1"', b'outline-level="x"'), "見出し"),
        ("odt", "empty-last.odt", make.odt_bytes("見出し", ["p", ""]), "p"),  # a part past the end of the text
        ("spreadsheet", "cut.xls", make.xls_bytes("s", [["a"]])[:-5], None),  # calamine's PanicException, a BaseException: the run stopped
        ("pdf", "title.pdf", pdf_with_info(pdf_string("会議\ud800", "hex"), b"BT /F1 12 Tf 72 720 Td (hello) Tj ET"), "hello"),
    ]


@pytest.mark.parametrize("file_type, name, data, holds", found_by_fuzzing(), ids=lambda v: v if isinstance(v, str) and "." in v else "")
def test_files_the_fuzzing_found(file_type: str, name: str, data: bytes, holds: str | None) -> None:
    extracted = read_or_refuse(file_type, name, data)
    if holds is None:
        assert extracted is None
    else:
        assert extracted is not None and holds in extracted.text


# the indexer over a folder of them

def hostile_folder_files() -> st.SearchStrategy[list[tuple[str, bytes]]]:
    return st.lists(st.sampled_from(sorted(CASES)).flatmap(lambda case: CASES[case]), min_size=1, max_size=4)


ORDINARY = "# 買い物\n\n牛乳と卵を買う。\n"


def write_folder(folder: Path, files: list[tuple[str, bytes]]) -> None:
    folder.mkdir(parents=True)
    for i, (name, content) in enumerate(files):
        (folder / f"{i}-{name}").write_bytes(content)
    (folder / "ordinary.md").write_text(ORDINARY, encoding="utf-8")


@settings(CI, max_examples=5)
@given(files=hostile_folder_files())
def test_a_folder_of_hostile_files_is_indexed_and_the_ordinary_note_found(embedder: Embedder, files: list[tuple[str, bytes]]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="oboyu-reader-fuzz-"))
    try:
        write_folder(tmp / "notes", files)
        with bounded(120), Store(tmp / "index.duckdb") as store:
            stats = Indexer(store, embedder).index([tmp / "notes"])
            assert all(s.reason for s in stats.skipped)
            bugs = [s for s in stats.skipped if s.reason.startswith(("cannot extract text", "cannot read its words"))]
            assert not bugs, bugs  # a reader's (or the keyword tokenizer's) exception, caught by the indexer's last net
            indexed = {Path(row[0]).name for row in store.con.execute("SELECT path FROM documents").fetchall()}
            assert "ordinary.md" in indexed
            assert indexed | {s.path.name for s in stats.skipped} == {p.name for p in (tmp / "notes").iterdir()}
            assert store.integrity_problems() == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_query_json_over_hostile_files_is_valid_json(tmp_path: Path, oboyu_env: dict) -> None:
    """`oboyu index` and `oboyu query --json` as a person runs them, over files whose text holds
    controls, bidi overrides and lone surrogates: the run ends, and the JSON parses."""
    notes = tmp_path / "notes"
    write_folder(notes, [
        ("lone.json", b'{"memo": "\\ud800 \\u202e \\u001b[2J \\udfff", "\\udc80key": "\\ud83d\\ude00"}'),
        ("emoji.rtf", rb"{\rtf1\ansi\deff0{\fonttbl{\f0\fcharset78 Osaka;}}\f0 \u-10179?\u-8704? \'82\'a0 \u99999999999? \uc}"),
        ("bidi.html", "<p>買い物 \u202eevil\u202c &#xd800; \x1b]0;title\x07</p>".encode()),
        ("ctl\x1b[31m.md", "# 買い物\n\n\x00\x07\x9b\u2028牛乳\ue000\n".encode()),
        ("broken.docx", b"PK\x03\x04" + b"\x00" * 40),
    ])
    assert oboyu(oboyu_env, "index", str(notes)).returncode == 0
    found = oboyu(oboyu_env, "query", "買い物", "--json", "--mode", "keyword", "--all", "-k", "20")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert any(Path(hit["path"]).name == "ordinary.md" for hit in hits)
