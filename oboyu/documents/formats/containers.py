"""Opening the containers Office, OpenDocument and EPUB files are (zip archives of XML) without
trusting them: a zip bomb, an encrypted or corrupt file, or XML with entity tricks is refused with
its reason (`Unextractable`), never a hang or a memory blow-up."""

from __future__ import annotations

import io
import zipfile
import zlib

from lxml import etree

from oboyu.documents.extracted import Unextractable

MAX_ENTRIES = 20_000
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_RATIO = 200  # unpacked / packed; real documents stay far below (XML packs about 10:1)
RATIO_CHECKED_FROM = 16 * 1024 * 1024  # small archives cannot blow up, whatever their ratio
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy Office files, and encrypted new ones
_ENCRYPTED_STREAM = "EncryptedPackage".encode("utf-16-le")
# what a damaged archive raises from zipfile and zlib (a bad header, a bad deflate stream, a seek
# before the start, a compression method or version zipfile does not know)
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError,
              NotImplementedError, RuntimeError)

# entities are not expanded and nothing is fetched: XML from a file is data, not instructions
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, remove_comments=True,
                          remove_pis=True, load_dtd=False)


def open_zip(data: bytes, kind: str) -> zipfile.ZipFile:
    """The archive of a `kind` file (".docx", "EPUB"), checked before anything is unpacked."""
    if data.startswith(OLE_MAGIC):
        if _ENCRYPTED_STREAM in data:
            raise Unextractable(f"encrypted {kind} file (needs a password)")
        raise Unextractable(f"not a {kind} file inside (an old binary Office file renamed?)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = archive.infolist()
    except ZIP_ERRORS as exc:
        raise Unextractable(f"corrupt {kind} file: {exc or type(exc).__name__}") from exc
    if len(entries) > MAX_ENTRIES:
        raise Unextractable(f"{kind} archive has {len(entries):,} entries (over {MAX_ENTRIES:,}: a zip bomb?)")
    unpacked = sum(e.file_size for e in entries)
    packed = sum(e.compress_size for e in entries) or 1
    if unpacked > MAX_UNPACKED_BYTES:
        raise Unextractable(f"{kind} archive unpacks to {unpacked / 2**20:,.0f} MB (a zip bomb?)")
    if unpacked > RATIO_CHECKED_FROM and unpacked / packed > MAX_RATIO:
        raise Unextractable(f"{kind} archive compressed {unpacked / packed:,.0f}:1 (a zip bomb?)")
    if any(e.flag_bits & 0x1 for e in entries):
        raise Unextractable(f"encrypted {kind} file (needs a password)")
    return archive


def read_member(archive: zipfile.ZipFile, name: str, kind: str) -> bytes | None:
    """One entry's bytes, None when the archive has no such entry. zipfile stops at each entry's
    declared size, which open_zip has checked."""
    try:
        return archive.read(name)
    except KeyError:
        return None
    except ZIP_ERRORS as exc:
        raise Unextractable(f"corrupt {kind} file: {name}: {exc or type(exc).__name__}") from exc


def parse_xml(data: bytes, kind: str, member: str | None = None) -> etree._Element:
    try:
        return etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        said = "its XML is nested more than 256 elements deep" if "Excessive depth" in str(exc) else str(exc)
        raise Unextractable(f"corrupt {kind} file: {member + ': ' if member else ''}{said}") from exc


def parse_side_xml(data: bytes) -> etree._Element | None:
    """A part beside the body (properties, styles, notes, headers): None when it is broken, so
    that the body is read without it (a fuzzing trial's .docx with a broken docProps/core.xml, or
    styles.xml, was skipped whole)."""
    try:
        return parse_xml(data, "")
    except Unextractable:
        return None


def broken_part(archive: zipfile.ZipFile) -> str | None:
    """The first XML part of an Office archive that does not parse: named when a library that
    reads them all (python-pptx, calamine) refuses the file, so a person knows what is damaged."""
    for entry in archive.infolist():
        if entry.filename.endswith((".xml", ".rels")) and entry.file_size <= MAX_UNPACKED_BYTES:
            try:
                etree.fromstring(archive.read(entry), _PARSER)
            except etree.XMLSyntaxError:
                return entry.filename
            except ZIP_ERRORS:
                return entry.filename
    return None


def local_name(element: etree._Element) -> str:
    """A tag without its namespace; '' for comments and the like."""
    tag = element.tag
    return etree.QName(tag).localname if isinstance(tag, str) else ""
