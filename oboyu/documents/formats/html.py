"""Web pages (and the chapters of an EPUB): the visible text of the document's own content.

Parsed with lxml's HTML parser (libxml2: forgiving of unclosed tags, fast). Left out: scripts,
styles and hidden elements; ruby readings (`<rt>`, `<rp>`: 漢字 stays, its reading does not); the
page's chrome: `nav`, `aside`, a `header` or `footer` outside the article, elements whose ARIA
role is navigation, banner, contentinfo, complementary or search; and link bars: short blocks that
are mostly the text of several links (`ホーム | 人事 | 総務`), wherever they sit. The page's
`<meta charset>` decides how it is decoded, before any guess.
"""

from __future__ import annotations

import codecs
import html
import re

import lxml.html
from lxml import etree

from oboyu.documents.decoding import Decoded, UndecodableError, decode
from oboyu.documents.extracted import Extracted, Unextractable
from oboyu.documents.formats.builder import TextBuilder
from oboyu.text import valid_text

_SKIP = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas", "rt", "rp",
         "head", "nav", "aside", "select", "button", "input", "textarea", "dialog"}
_CHROME_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"}
_BLOCK = {
    "p", "div", "section", "article", "header", "footer", "main", "li", "ul", "ol", "table", "thead", "tbody",
    "tfoot", "pre", "blockquote", "dl", "dt", "dd", "figure", "figcaption", "hr", "form", "fieldset", "details",
    "summary", "caption", "address", "body", "html", "center",
}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
LINK_BAR_MAX_CHARS = 200  # a link bar is short; a paragraph that cites several links is not
LINK_BAR_SHARE = 0.6
MENU_ITEM_MAX_CHARS = 40
_SPACES = re.compile(r"\s+")


def decode_html(data: bytes) -> Decoded:
    """A page's text: its byte-order mark, else the charset its <meta> declares, else our guess."""
    if not data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        match = _META_CHARSET.search(data[:4096])
        if match:
            try:
                name = codecs.lookup(match.group(1).decode("ascii")).name
                name = {"shift_jis": "cp932", "euc_jp": "euc_jp", "iso2022_jp": "iso2022_jp_ext"}.get(name, name)
                return Decoded(data.decode(name), name)
            except (LookupError, UnicodeError):  # UnicodeError: a codec that decodes nothing ("undefined")
                pass  # a wrong declaration: guess as for any file
    return decode(data)


def extract_html(data: bytes) -> tuple[Extracted, str]:
    try:
        decoded = decode_html(data)
    except UndecodableError as exc:
        raise Unextractable(f"cannot decode: {exc}") from exc
    return html_document(decoded.text), decoded.encoding


def html_document(source: str) -> Extracted:
    """The text and structure of a page already decoded."""
    out = TextBuilder()
    out.title = add_html(out, source)
    return out.build()


def add_html(out: TextBuilder, source: str, chapter_title: str | None = None) -> str | None:
    """The page's blocks, added to `out`; its title (<title>, else its first h1). With a
    chapter title, a page that has no heading of its own before its text gets that one."""
    source = source.lstrip("\ufeff")
    if not source.strip():
        return None
    try:
        # lone surrogates (a page declared "unicode_escape", UTF-7 mail) would fail the whole page's encoding
        parser = _parser()
        root = lxml.html.document_fromstring(valid_text(source).encode("utf-8"), parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise Unextractable(f"cannot parse HTML: {exc}") from exc
    title_element = root.find(".//title")
    title = _SPACES.sub(" ", title_element.text_content()).strip() if title_element is not None else ""
    walker = _Walker(out, chapter_title)
    if any(error.type_name == "ERR_RESOURCE_LIMIT" for error in parser.error_log):
        # nested past even huge_tree's 2,048: libxml2 dropped the rest of the page, so the page
        # is read as plain text, its markup stripped (a fuzzing trial's 10,000 <div>s)
        walker.paragraphs(_plain_paragraphs(source))
        return title or None
    walker.walk(root.find("body") if root.find("body") is not None else root)
    walker.flush()
    return title or walker.first_h1


def _parser() -> lxml.html.HTMLParser:
    """One a page: its error log says whether the page was cut (a parser shared by threads would
    mix theirs). huge_tree: nesting up to 2,048 rather than 256, past which the rest of a page
    was dropped, silently; the walk iterates, so depth costs no recursion."""
    return lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True, huge_tree=True)


# each may run to the end of the page: one left open costs one pass, not one pass per `<`
# (a review's 20,000 unclosed <script>s took 18 s); the page's head, menus and drawings left out
_INVISIBLE_ELEMENTS = re.compile(r"(?is)<(head|script|style|template|noscript|nav|svg)\b.*?(?:</\1\s*>|\Z)|<!--.*?(?:-->|\Z)")
_TAG = re.compile(r"<(?:/?([A-Za-z][\w:-]*))?[^>]*(?:>|\Z)")
_INLINE = {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd", "mark", "q", "ruby",
           "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var", "wbr"}


def _plain_paragraphs(source: str) -> list[str]:
    """A page's text with its markup stripped, a paragraph to each run of lines."""
    visible = _INVISIBLE_ELEMENTS.sub(" ", source)
    text = html.unescape(_TAG.sub(lambda tag: "" if (tag[1] or "").lower() in _INLINE else "\n", visible))
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return [line for line in lines if line]


class _Walker:
    def __init__(self, out: TextBuilder, chapter_title: str | None) -> None:
        self.out = out
        self.pending_heading = chapter_title
        self.parts: list[str] = []
        self.link_chars = 0
        self.links = 0
        self.in_link = 0
        self.first_h1: str | None = None
        self.article_depth = 0

    def walk(self, top: etree._Element) -> None:
        """Each element's blocks and text in document order, with lxml's start and end events
        rather than recursion: a page nested thousands deep (which `huge_tree` lets the parser
        keep: at 256 it dropped the rest of the page, silently) is read like any other."""
        events = etree.iterwalk(top, events=("start", "end"))
        read_whole = None  # read at its start, its children skipped: its end is the next event
        for event, element in events:
            tag = element.tag.lower() if isinstance(element.tag, str) else ""
            if event == "start":
                if self._read_whole(element, tag):
                    read_whole = element
                    events.skip_subtree()
                else:
                    self._open(element, tag)
                continue
            if element is not read_whole:
                self._close(tag)
            self._text(element.tail)

    def paragraphs(self, texts: list[str]) -> None:
        for text in texts:
            self._emit(text, "text")

    def _read_whole(self, element: etree._Element, tag: str) -> bool:
        """Read an element that is one block or none (a heading, <pre>, a table row, or
        something left out) whole; False for one whose children are walked."""
        if not tag or tag in _SKIP or self._is_chrome(element, tag):
            return True
        if tag in _HEADINGS:
            self.flush()
            text = _SPACES.sub(" ", _visible_text(element)).strip()
            if text:
                self._heading(text, _HEADINGS[tag])
            return True
        if tag == "pre":
            self.flush()
            self._emit(_visible_text(element).strip("\n"), "code")
            return True
        if tag == "tr":
            self.flush()
            cells = [_SPACES.sub(" ", _visible_text(c)).strip() for c in element if isinstance(c.tag, str) and c.tag.lower() in ("td", "th")]
            self._emit(" | ".join(c for c in cells if c), "row")
            return True
        return False

    def _open(self, element: etree._Element, tag: str) -> None:
        if tag in _BLOCK:
            self.flush()
        if tag == "br":
            self.parts.append("\n")
        self.article_depth += tag in ("article", "main")
        if tag == "a":
            self.in_link += 1
            self.links += 1
        self._text(element.text)

    def _close(self, tag: str) -> None:
        if tag == "a":
            self.in_link -= 1
        self.article_depth -= tag in ("article", "main")
        if tag in _BLOCK:
            self.flush()

    def _is_chrome(self, element: etree._Element, tag: str) -> bool:
        if element.get("hidden") is not None or element.get("aria-hidden") == "true":
            return True
        if re.search(r"display\s*:\s*none", element.get("style") or ""):
            return True
        if (element.get("role") or "").lower() in _CHROME_ROLES:
            return True
        return tag in ("header", "footer") and not self.article_depth

    def _text(self, text: str | None) -> None:
        if text:
            self.parts.append(text)
            if self.in_link:
                self.link_chars += len(text.strip())

    def flush(self) -> None:
        raw = "".join(self.parts)
        text = "\n".join(_SPACES.sub(" ", line).strip() for line in raw.split("\n"))
        text = re.sub(r"\n{2,}", "\n", text).strip()
        if text and not self._is_link_bar(text):
            self._emit(text, "text")
        self.parts, self.link_chars, self.links = [], 0, 0

    def _is_link_bar(self, text: str) -> bool:
        """Several links and little else, or one menu item (a short block that is all link)."""
        share = self.link_chars / max(1, len(text.replace(" ", "").replace("\n", "")))
        if self.links >= 2:
            return len(text) <= LINK_BAR_MAX_CHARS and share >= LINK_BAR_SHARE
        return self.links == 1 and len(text) <= MENU_ITEM_MAX_CHARS and share >= 0.9

    def _heading(self, text: str, level: int) -> None:
        self.pending_heading = None
        if level == 1 and self.first_h1 is None:
            self.first_h1 = text
        self.out.heading(text, level)

    def _emit(self, text: str, kind: str) -> None:
        if not text:
            return
        if self.pending_heading:
            self._heading(self.pending_heading, 1)
        self.out.paragraph(text, kind)


def _visible_text(element: etree._Element) -> str:
    """An element's text without its readings, scripts and the like (iterated, not recursed)."""
    parts = [element.text or ""]
    events = etree.iterwalk(element, events=("start", "end"))
    for event, node in events:
        if node is element:
            continue
        tag = node.tag.lower() if isinstance(node.tag, str) else ""
        if event == "start":
            if not tag or tag in _SKIP:
                events.skip_subtree()
            else:
                parts.append("\n" if tag == "br" else "")
                parts.append(node.text or "")
        else:
            parts.append(node.tail or "")
    return "".join(parts)
