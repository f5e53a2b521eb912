"""Bytes to text: BOMs, strict UTF-8, then the Japanese legacy encodings chosen by evidence.

Shift-JIS (cp932), EUC-JP and ISO-2022-JP often all decode the same bytes without error; the one
that yields ordinary Japanese (hiragana, katakana, common kanji) wins, not the first to succeed.
EUC-JP katakana decoded as cp932, for instance, comes out as half-width katakana and rare kanji,
which the score below punishes.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
import unicodedata
from dataclasses import dataclass

from oboyu.errors import OboyuError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_JAPANESE_LEGACY = ("cp932", "euc_jp", "euc_jis_2004")  # on a tie the first wins
MIN_JAPANESE_SCORE = 0.4  # per non-ASCII character; below it, more likely another encoding
MAX_INVALID_UTF8 = 0.001  # share of bad bytes a UTF-8 file may have (a truncated last character)
SAMPLE_BYTES = 8192  # of a file, to see where its NULs fall
_NOT_TEXT = {"Cc", "Cn", "Co", "Cs"}  # controls, unassigned, private use, surrogates
_ISO2022_KANJI_IN = (b"\x1b$B", b"\x1b$@", b"\x1b$(D", b"\x1b$(Q")


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
            body = data[len(bom) :]
            try:
                return Decoded(body.decode(name.replace("-sig", "")), name)
            except UnicodeDecodeError as exc:
                # a few bad units (a file cut after an odd byte) are replaced, not the whole text lost
                text = body.decode(name.replace("-sig", ""), errors="replace")
                bad = text.count("\ufffd")
                if bad <= max(1, len(body) * MAX_INVALID_UTF8) and len(text) > 2 * bad:
                    return Decoded(text, f"{name} (invalid bytes replaced)")
                raise UndecodableError(f"invalid {name} after its byte-order mark") from exc
    # ISO-2022-JP is 7-bit, so it is also valid UTF-8: look for its kanji-in escapes first
    if b"\x1b$" in data and any(esc in data for esc in _ISO2022_KANJI_IN) and max(data) < 0x80:
        try:
            return Decoded(decode_iso2022_jp(data), "iso2022_jp")
        except UnicodeDecodeError:
            pass
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    best = _best_japanese(data)
    if best is not None:
        return best
    for guess in (_mostly_utf8, _western):
        found = guess(data)
        if found is not None:
            return found
    return _detect(data)


def bomless_utf16(data: bytes) -> Decoded | None:
    """UTF-16 without a byte-order mark (some Windows tools write it), which reads as binary for
    its NULs: each ASCII character (a newline, a space) leaves one on the same side of its pair.
    Taken for it when the NULs lean to one side and the whole decodes to text with few controls."""
    if len(data) < 4 or len(data) % 2:
        return None
    sample = data[:SAMPLE_BYTES]
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    for name, zeros, others in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if zeros < len(sample) // 20 or others > zeros // 4:  # U+3000, U+4E00, ... leave a NUL on the other side
            continue
        try:
            text = data.decode(name)
        except UnicodeDecodeError:
            continue
        if sum(ch not in "\t\r\n\x0c" and unicodedata.category(ch) in _NOT_TEXT for ch in text) <= len(text) // 100:
            return Decoded(text, f"{name} (no byte-order mark)")
    return None


def _western(data: bytes) -> Decoded | None:
    """cp1252 (a superset of Latin-1) when the text is mostly ASCII letters with some accented
    ones, as in French or German; short samples defeat statistical detectors."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    letters = [ch for ch in text if ch.isalpha()]
    accented = sum(1 for ch in letters if "\u00c0" <= ch <= "\u00ff")
    other = sum(1 for ch in text if ord(ch) >= 0x80 and not ("\u00a0" <= ch <= "\u00ff" or ch in "’‘“”–—…€"))
    if letters and other == 0 and accented <= 0.3 * len(letters):
        return Decoded(text, "cp1252")
    return None


def _mostly_utf8(data: bytes) -> Decoded | None:
    """UTF-8 with a few bad bytes (a cut-off last character, a stray byte): keep the text. Few
    means a tiny share of the file, or fewer than the well-formed multi-byte characters around
    them (a short note whose Japanese is valid UTF-8 but for three stray bytes): no legacy
    encoding makes so many valid UTF-8 sequences by chance."""
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd")
    well_formed = sum(1 for ch in text if ord(ch) >= 0x80 and ch != "\ufffd")
    if bad <= max(1, len(data) * MAX_INVALID_UTF8) or well_formed > bad:
        return Decoded(text, "utf-8 (invalid bytes replaced)")
    return None


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
    return Decoded(text, name)


def japanese_score(text: str) -> float:
    """How much a text's non-ASCII characters look like ordinary Japanese, per character
    (1 for kana; negative for mojibake). ASCII is evidence of nothing, except control codes."""
    score, counted = 0.0, 0
    for ch in text:
        cp = ord(ch)
        if cp < 0x80:
            if not (ch.isprintable() or ch in "\t\r\n\x0c"):
                score -= 1.0
                counted += 1
            continue
        counted += 1
        if 0x3040 <= cp <= 0x309F or 0x30A0 <= cp <= 0x30FF:  # hiragana, katakana
            score += 1.0
        elif 0x3000 <= cp <= 0x303F or 0xFF01 <= cp <= 0xFF60:  # CJK punctuation, full-width forms
            score += 0.8
        elif 0x4E00 <= cp <= 0x9FFF:
            score += 0.9 if _is_common_kanji(ch) else -0.3
        elif 0xFF61 <= cp <= 0xFF9F:  # half-width katakana: legitimate, but also typical of mojibake
            score += 0.3
        elif 0xE000 <= cp <= 0xF8FF or 0x80 <= cp <= 0x9F:  # private use, C1 controls
            score -= 2.0
        else:
            score -= 0.2
    return score / counted if counted else 0.0


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


def read_regular_file(path: str | os.PathLike, max_bytes: int, follow_symlinks: bool = True) -> tuple[bytes, os.stat_result]:
    """Up to max_bytes + 1 bytes of a regular file, and the stat of what was read. Opened without
    blocking and checked after opening, so a FIFO, a device or a file like /proc/kmsg that took a
    regular file's place raises OSError at once instead of hanging the reader."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size == 0:  # empty; or a kernel file (/proc, /sys) that says 0 and streams: not read
            return b"", info
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    except BlockingIOError as exc:  # a regular file that reads like a device (/proc/kmsg)
        raise OSError(errno.EAGAIN, "would block (not an ordinary file)", str(path)) from exc
    finally:
        os.close(fd)
    return data, info


_ISO2022_MODE = re.compile(rb"\x1b(\$[@B]|\([BJI])")


def decode_iso2022_jp(data: bytes) -> str:
    """ISO-2022-JP as Japanese mailers write it: JIS X 0208 with the Windows extensions (①, ㈱,
    Ⅲ in row 13, IBM kanji) that no Python codec accepts (CP50220 has no codec). Each JIS pair
    becomes its Shift_JIS pair, and the whole is decoded as cp932; other escapes (JIS X 0212,
    ISO-2022-JP-2) go to Python's codec."""
    try:
        return data.decode("iso2022_jp_ext")
    except UnicodeDecodeError:
        pass
    if re.search(rb"\x1b(?!\$[@B]|\([BJI])", data):
        return data.decode("iso2022_jp_2")
    out = bytearray()
    mode = b"(B"
    pos = 0
    for match in [*_ISO2022_MODE.finditer(data), None]:
        end = match.start() if match else len(data)
        segment = data[pos:end]
        if mode in (b"$B", b"$@"):
            for i in range(0, len(segment) - 1, 2):
                out += _jis_to_sjis(segment[i], segment[i + 1])
        elif mode == b"(I":  # half-width katakana
            out += bytes(b + 0x80 for b in segment)
        else:
            out += segment
        if match:
            mode, pos = match.group(1), match.end()
    return bytes(out).decode("cp932")


def _jis_to_sjis(first: int, second: int) -> bytes:
    if not (0x21 <= first <= 0x7E and 0x21 <= second <= 0x7E):
        return bytes((first, second))  # a line break or stray byte inside the kanji run
    lead = (first + 1) // 2 + (0x70 if first <= 0x5E else 0xB0)
    if first % 2:
        trail = second + (0x1F if second <= 0x5F else 0x20)
    else:
        trail = second + 0x7E
    return bytes((lead, trail))
