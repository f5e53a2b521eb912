"""Bytes to text: BOMs, strict UTF-8, then the Japanese legacy encodings chosen by evidence.

Shift-JIS (cp932), EUC-JP and ISO-2022-JP often all decode the same bytes without error; the one
that yields ordinary Japanese (hiragana, katakana, common kanji) wins, not the first to succeed.
EUC-JP katakana decoded as cp932, for instance, comes out as half-width katakana and rare kanji,
which the score below punishes.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from .errors import OboyuError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_JAPANESE_LEGACY = ("cp932", "euc_jis_2004", "euc_jp")
MIN_JAPANESE_SCORE = 0.1  # below it the bytes are more likely another legacy encoding
_ISO2022_ESCAPES = (b"\x1b$B", b"\x1b$@", b"\x1b(J", b"\x1b(B", b"\x1b$(D", b"\x1b(I")


class UndecodableError(OboyuError):
    pass


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str


def decode(data: bytes) -> Decoded:
    """Decode file bytes; raises UndecodableError when no encoding fits."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            try:
                return Decoded(data[len(bom) :].decode(name.replace("-sig", "")), name)
            except UnicodeDecodeError as exc:
                raise UndecodableError(f"invalid {name} after its byte-order mark") from exc
    # ISO-2022-JP is 7-bit, so it is also valid UTF-8: look for its escapes first
    if b"\x1b" in data and any(esc in data for esc in _ISO2022_ESCAPES) and max(data) < 0x80:
        try:
            return Decoded(data.decode("iso2022_jp_ext"), "iso2022_jp")
        except UnicodeDecodeError:
            pass
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    best = _best_japanese(data)
    if best is not None:
        return best
    return _detect(data)


def _best_japanese(data: bytes) -> Decoded | None:
    candidates = []
    for name in _JAPANESE_LEGACY:
        try:
            text = data.decode(name)
        except UnicodeDecodeError:
            continue
        candidates.append((japanese_score(text), name, text))
    if not candidates:
        return None
    score, name, text = max(candidates, key=lambda c: c[0])
    if score < MIN_JAPANESE_SCORE:
        return None
    # cp932 and euc_jp are supersets of shift_jis and of the JIS X 0208 part of euc_jis_2004
    label = {"euc_jis_2004": "euc_jp"}.get(name, name)
    return Decoded(text, label)


def japanese_score(text: str) -> float:
    """How much a text looks like ordinary Japanese, per character (higher is better)."""
    if not text:
        return 0.0
    score = 0.0
    for ch in text:
        cp = ord(ch)
        if cp < 0x80:
            score += 0.2 if ch.isprintable() or ch in "\t\r\n" else -1.0
        elif 0x3040 <= cp <= 0x309F or 0x30A0 <= cp <= 0x30FF:  # hiragana, katakana
            score += 1.0
        elif 0x3000 <= cp <= 0x303F or 0xFF01 <= cp <= 0xFF60:  # CJK punctuation, full-width forms
            score += 0.8
        elif 0x4E00 <= cp <= 0x9FFF:
            score += 0.9 if _is_common_kanji(ch) else -0.3
        elif 0xFF61 <= cp <= 0xFF9F:  # half-width katakana: legitimate but rare, typical of mojibake
            score -= 0.2
        elif 0xE000 <= cp <= 0xF8FF or 0x80 <= cp <= 0x9F:  # private use, C1 controls
            score -= 2.0
        else:
            score -= 0.2
    return score / len(text)


def _is_common_kanji(ch: str) -> bool:
    """JIS X 0208 level-1 kanji (the ~3,000 everyday ones): EUC-JP lead byte 0xB0-0xCF."""
    try:
        lead = ch.encode("euc_jp")[0]
    except UnicodeEncodeError:
        return False
    return 0xB0 <= lead <= 0xCF


def _detect(data: bytes) -> Decoded:
    from charset_normalizer import from_bytes

    match = from_bytes(data).best()
    if match is None or match.encoding is None:
        raise UndecodableError("no text encoding fits these bytes")
    return Decoded(str(match), match.encoding)
