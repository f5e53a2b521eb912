"""Text from files, made safe to show. A file's text, name or heading may hold terminal control
sequences (ESC ] 0; … BEL retitles the window, ESC [ 2 J clears it) or bidi overrides that make a
name read backwards; nothing from a file reaches a terminal or the app without passing here.
Text is also cut here into pieces a parser copes with (`pieces`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

_VISIBLE = {code: chr(0x2400 + code) for code in range(0x20) if code != 0x09}  # ␀ … ␟ (tab kept)
_VISIBLE[0x7F] = "␡"
# C1 (0x9b is an 8-bit CSI) as \u escapes: \x9b is a name's byte that was not UTF-8 (below), and a
# trial's two files, one named with each, printed alike, so `get` of the printed name found neither
_VISIBLE.update({code: f"\\u{code:04x}" for code in range(0x80, 0xA0)})
_VISIBLE.update({code: f"\\u{code:04x}" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)})
# a name that was not UTF-8 on disk reaches Python as lone surrogates (U+DC80 + the byte): shown as
# the byte, and any other lone surrogate as its code
_VISIBLE.update({code: f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
                 for code in range(0xD800, 0xE000)})
# the index holds such a byte as U+10FD00 + the byte (oboyu.paths): shown as the byte too
_VISIBLE.update({0x10FD00 + byte: f"\\x{byte:02x}" for byte in range(0x80, 0x100)})
_VISIBLE_IN_NAMES = {**_VISIBLE, 0x09: "\u2409"}
# JSON keeps them as \u escapes (valid JSON; Python's json reads them back to the same string)
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in _VISIBLE if 0x7F <= code <= 0xFFFF}


def counted(n: int, noun: str) -> str:
    """`1 file`, `2,400 files`: a count and its noun, singular for one (a regular plural)."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def visible(text: str) -> str:
    """Control characters shown as symbols (␛ for ESC, ␊ for a newline) and bidi controls as
    escapes, so the text can be printed as it is."""
    return text.translate(_VISIBLE)


def visible_name(name: str) -> str:
    """A file's name or path as `visible` shows text, and a tab as ␉ too: a tab in a snippet is
    layout, in a name it printed as blank space that a person's copy of it turned into spaces."""
    return name.translate(_VISIBLE_IN_NAMES)


def visible_pieces(text: str, spans: list[tuple[int, int]]) -> Iterator[tuple[str, bool]]:
    """The text cut at the spans (offsets into the raw text), each piece made visible and marked
    whether it is a span: a visible form may be longer than its character, so pieces are made
    visible one by one rather than the spans moved."""
    position = 0
    for start, end in spans:
        yield visible(text[position:start]), False
        yield visible(text[start:end]), True
        position = end
    yield visible(text[position:]), False


def json_safe(dumped: str) -> str:
    """JSON text with the characters json.dumps leaves raw under ensure_ascii=False (DEL, C1
    controls, bidi controls) escaped: still the same JSON value, harmless on a terminal."""
    return dumped.translate(_JSON_ESCAPES)


SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """Text that UTF-8 can hold: a surrogate pair written as two characters (RTF's `\\u-10179?
    \\u-8704?`, some JSON) joined into its character, a lone surrogate (a JSON `"\\ud800"`, a
    command-line byte that was not UTF-8) replaced by U+FFFD."""
    if not SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


# a terminal's escape sequences (CSI: colours, cursor; OSC: titles, links), then any control left
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def query_text(text: str) -> str:
    """A query as searched: valid text, with no terminal escape sequence or control character
    (pasted from a coloured terminal, `printf` in a script: they matched nothing and shifted the
    vector), each run of them a space, and no space around it."""
    return _CONTROLS.sub(" ", _ESCAPES.sub(" ", valid_text(text))).strip()


def calm_capitals(text: str) -> str:
    """A query typed in capital letters throughout (WHAT'S THE WIFI PASSWORD), as the embedding
    model is to read it: in lower case. The model is cased: a user trial's shouted question found
    its answer at confidence 0.23, against 0.89 typed in lower case. Left as typed: any lower-case
    letter, any letter that is not Latin (kana, kanji: `LANG と LC_ALL`), fewer than three words
    (NISA, `HR VISA`: names and acronyms)."""
    letters = [c for c in text if c.isalpha()]
    if not letters or any(c.islower() or not c.isascii() for c in letters):
        return text
    if sum(any(c.isalpha() for c in word) for word in text.split()) < 3:
        return text
    return text.lower()


_JAPANESE_LETTER = re.compile(r"[\u3041-\u30ff\u3400-\u9fff\uf900-\ufaff\uff66-\uff9f]")  # kana, kanji
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f]+")  # not × or ÷
# Japanese packs a word into a character or two: two kana or kanji weigh as one Latin word
LETTERS_PER_WORD = 2


def written_in(text: str) -> str | None:
    """"japanese" or "latin": the writing a text is mostly in, by weight of its kana and kanji
    against its Latin words (`Zoom 会議` is Japanese, `How do I file 確定申告` Latin); None for
    text with neither (digits, symbols). Full-width letters (ＶＰＮ) count as the letters they are;
    Chinese counts as Japanese, and other writings as neither."""
    text = unicodedata.normalize("NFKC", text)
    japanese = len(_JAPANESE_LETTER.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    if not japanese and not latin:
        return None
    return "japanese" if japanese >= LETTERS_PER_WORD * latin else "latin"


def latin_words(text: str) -> list[str]:
    """The runs of Latin letters in a text (full-width ones as the letters they are)."""
    return _LATIN_WORD.findall(unicodedata.normalize("NFKC", text))


def has_japanese(text: str) -> bool:
    """Whether the text holds a kana or a kanji."""
    return _JAPANESE_LETTER.search(text) is not None


# MeCab (fugashi 1.x, unidic) crashed the process (a segmentation fault) on one unknown word of
# 250,000 letters (a pasted query): it is given pieces of at most this many characters
MECAB_PIECE_CHARS = 10_000


def pieces(text: str, most: int = MECAB_PIECE_CHARS) -> Iterator[tuple[int, str]]:
    """(start, piece) of `text` in pieces of at most `most` characters, each cut after the last
    line break, space or 。 of its second half where there is one."""
    start = 0
    while len(text) - start > most:
        end = start + most
        cut = max(text.rfind(mark, start + most // 2, end) for mark in ("\n", " ", "。"))
        end = cut + 1 if cut >= 0 else end
        yield start, text[start:end]
        start = end
    yield start, text[start:]
