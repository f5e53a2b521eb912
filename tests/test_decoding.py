"""Decoding real encoded bytes written to disk."""

from pathlib import Path

import pytest

from oboyu.documents.decoding import UndecodableError, decode

JAPANESE = "これは日本語の文書です。会議の議事録をまとめました。"
KATAKANA_ONLY = "カタカナノミデカカレタブンショウ　ソフトウェア　データベース"


def roundtrip(tmp_path: Path, text: str, encoding: str, bom: bytes = b"") -> tuple[str, str]:
    path = tmp_path / f"sample.{encoding}.txt"
    path.write_bytes(bom + text.encode(encoding))
    decoded = decode(path.read_bytes())
    return decoded.text, decoded.encoding


@pytest.mark.parametrize("encoding", ["utf-8", "cp932", "euc_jp", "iso2022_jp"])
def test_japanese_encodings_are_recognised(tmp_path: Path, encoding: str) -> None:
    text, found = roundtrip(tmp_path, JAPANESE, encoding)
    assert text == JAPANESE
    assert found == encoding


@pytest.mark.parametrize("encoding", ["cp932", "euc_jp"])
def test_katakana_only_text_is_not_mojibake(tmp_path: Path, encoding: str) -> None:
    # EUC-JP katakana bytes also decode as cp932 (as half-width kana); evidence must win
    text, found = roundtrip(tmp_path, KATAKANA_ONLY, encoding)
    assert text == KATAKANA_ONLY
    assert found == encoding


@pytest.mark.parametrize(
    "encoding,bom,label",
    [("utf-8", b"\xef\xbb\xbf", "utf-8-sig"), ("utf-16-le", b"\xff\xfe", "utf-16-le"), ("utf-16-be", b"\xfe\xff", "utf-16-be")],
)
def test_byte_order_marks(tmp_path: Path, encoding: str, bom: bytes, label: str) -> None:
    text, found = roundtrip(tmp_path, JAPANESE, encoding, bom)
    assert text == JAPANESE
    assert found == label


@pytest.mark.parametrize(
    "text,encoding",
    [
        ("Les crêpes délicieuses sont servies à la crèmerie du coin.", "cp1252"),  # not cp932 mojibake
        ("Привет, как дела? Это текст на русском языке.", "cp1251"),
    ],
)
def test_western_legacy_text_is_not_read_as_japanese(tmp_path: Path, text: str, encoding: str) -> None:
    decoded_text, found = roundtrip(tmp_path, text, encoding)
    assert decoded_text == text
    assert found == encoding


def test_half_width_katakana_and_jis_x_0213(tmp_path: Path) -> None:
    assert roundtrip(tmp_path, "ｶﾀｶﾅの半角表記", "cp932") == ("ｶﾀｶﾅの半角表記", "cp932")
    assert roundtrip(tmp_path, "ぱ行の㋐と俱楽部", "euc_jis_2004") == ("ぱ行の㋐と俱楽部", "euc_jis_2004")


def test_utf8_with_a_stray_byte_keeps_its_text(tmp_path: Path) -> None:
    path = tmp_path / "cut.txt"
    path.write_bytes("短い日本語のメモ。".encode() * 20 + b"\xe3\x81")  # a character cut in half
    decoded = decode(path.read_bytes())
    assert decoded.text.startswith("短い日本語のメモ。") and decoded.encoding.startswith("utf-8")


def test_short_utf8_note_with_stray_bytes_is_not_read_as_latin(tmp_path: Path) -> None:
    """Three bad bytes in a short note: its Japanese stays Japanese (it was read as cp1252 once,
    天気予報 turning into å¤©æ°—äºˆå ±), and only the bad bytes are replaced."""
    decoded = decode(b"invalid utf8 " + b"\xff\xfe\xc3" + " 天気予報 weather forecast".encode())
    assert "天気予報 weather forecast" in decoded.text and decoded.text.count("\ufffd") == 3
    assert decoded.encoding.startswith("utf-8")


def test_terminal_escapes_are_not_iso_2022_jp() -> None:
    assert decode(b"\x1b(Bplain log line\n\x1b[0m").encoding == "utf-8"


def test_invalid_bytes_after_bom_are_refused() -> None:
    with pytest.raises(UndecodableError):
        decode(b"\xff\xfe\x00")
