"""Decoding real encoded bytes written to disk."""

from pathlib import Path

import pytest

from oboyu.decoding import UndecodableError, decode

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


def test_legacy_western_text_falls_back_to_a_detector(tmp_path: Path) -> None:
    text = "Le café était très animé ce soir-là, et les garçons couraient entre les tables. " * 5
    decoded_text, found = roundtrip(tmp_path, text, "cp1252")
    assert "café" in decoded_text and "garçons" in decoded_text
    assert found.lower().replace("_", "-") not in {"utf-8", "cp932", "euc-jp"}


def test_invalid_bytes_after_bom_are_refused() -> None:
    with pytest.raises(UndecodableError):
        decode(b"\xff\xfe\x00")
