"""EPUB books: the chapters in spine order, each read as a page of XHTML (ruby readings left out).

Read with zipfile and lxml, not ebooklib: ebooklib is AGPL-3.0, which an MIT tool cannot ship,
and a book is a small, fixed structure: META-INF/container.xml names the package document, whose
spine orders the chapters. Each chapter is a part; a chapter without a heading of its own is
headed by its entry in the table of contents.
"""

from __future__ import annotations

import posixpath
import zipfile
from urllib.parse import unquote

from oboyu.documents.decoding import UndecodableError
from oboyu.documents.extracted import Extracted, Unextractable
from oboyu.documents.formats.builder import TextBuilder
from oboyu.documents.formats.containers import local_name, open_zip, parse_xml, read_member
from oboyu.documents.formats.html import add_html, decode_html

_XHTML_TYPES = {"application/xhtml+xml", "text/html", "application/xml"}


def extract_epub(data: bytes) -> Extracted:
    archive = open_zip(data, "EPUB")
    if any(i.filename == "META-INF/encryption.xml" for i in archive.infolist()) and _has_drm(archive):
        raise Unextractable("EPUB with DRM (encrypted chapters)")
    container = read_member(archive, "META-INF/container.xml", "EPUB")
    if container is None:
        raise Unextractable("corrupt EPUB file: no META-INF/container.xml")
    rootfile = next((e.get("full-path") for e in parse_xml(container, "EPUB").iter() if local_name(e) == "rootfile"), None)
    package_xml = read_member(archive, rootfile, "EPUB") if rootfile else None
    if package_xml is None:
        raise Unextractable("corrupt EPUB file: its package document is missing")
    package = parse_xml(package_xml, "EPUB")
    base = posixpath.dirname(rootfile or "")
    manifest = {
        item.get("id"): (posixpath.normpath(posixpath.join(base, unquote(item.get("href") or ""))), item.get("media-type"))
        for item in package.iter()
        if local_name(item) == "item"
    }
    # the navigation document is the table of contents: its titles head the chapters, it is no chapter
    navigation = {item.get("id") for item in package.iter()
                  if local_name(item) == "item" and "nav" in (item.get("properties") or "").split()}
    title = next((e.text.strip() for e in package.iter() if local_name(e) == "title" and (e.text or "").strip()), None)
    toc = _toc_titles(archive, package, manifest)
    out = TextBuilder(title)
    spine = [e.get("idref") for e in package.iter() if local_name(e) == "itemref" and e.get("linear") != "no"]
    number = 0  # chapters as a reader counts them: those with text
    for idref in spine:
        href, media_type = manifest.get(idref, ("", None))
        if media_type not in _XHTML_TYPES or idref in navigation:
            continue
        page = read_member(archive, href, "EPUB")
        if page is None:
            continue
        try:
            text = decode_html(page).text
        except UndecodableError:
            continue
        before = out.size
        out.part(number + 1)
        add_html(out, text, chapter_title=toc.get(href))
        number += out.size > before  # a cover image's page is no chapter
    if out.empty:
        raise Unextractable("EPUB has no text (images only?)")
    return out.build()


def _has_drm(archive: zipfile.ZipFile) -> bool:
    """Font obfuscation also lists files in encryption.xml; only encrypted chapters are DRM."""
    data = read_member(archive, "META-INF/encryption.xml", "EPUB") or b""
    return any(
        local_name(e) == "CipherReference" and not (e.get("URI") or "").lower().endswith((".otf", ".ttf", ".woff", ".woff2"))
        for e in parse_xml(data, "EPUB").iter()
    ) if data else False


def _toc_titles(archive: zipfile.ZipFile, package, manifest: dict) -> dict[str, str]:
    """Chapter titles by file, from the EPUB 3 navigation document or the EPUB 2 NCX."""
    titles: dict[str, str] = {}
    for item in package.iter():
        if local_name(item) != "item":
            continue
        href, media_type = manifest.get(item.get("id"), ("", None))
        is_nav = "nav" in (item.get("properties") or "").split()
        if not (is_nav or media_type == "application/x-dtbncx+xml"):
            continue
        data = read_member(archive, href, "EPUB")
        if not data:
            continue
        folder = posixpath.dirname(href)
        try:
            tree = parse_xml(data, "EPUB")
        except Unextractable:  # a broken table of contents costs the titles, not the book
            continue
        for element in tree.iter():
            name = local_name(element)
            if is_nav and name == "a" and element.get("href"):
                target, label = element.get("href"), "".join(element.itertext())
            elif name == "navPoint":
                content = next((c for c in element.iter() if local_name(c) == "content"), None)
                text = next((c for c in element.iter() if local_name(c) == "text"), None)
                if content is None or text is None:
                    continue
                target, label = content.get("src") or "", text.text or ""
            else:
                continue
            path = posixpath.normpath(posixpath.join(folder, unquote(target.split("#")[0])))
            if label.strip():
                titles.setdefault(path, " ".join(label.split()))
    return titles
