"""Tokenizers as the embedding engine uses them: a `tokenizers` tokenizer.json, optionally fed
MeCab words first (cl-tohoku BERT-Japanese models split text into MeCab words, then WordPiece).

Both give the same interface: `encode` / `encode_batch` returning encodings with `ids` and
character `offsets` into the text given, `token_to_id`.
"""

from __future__ import annotations

import bisect
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded with a tokenizer.json: the default model's light tokenizer needs none
    from tokenizers import Tokenizer

from oboyu.errors import OboyuError
from oboyu.pools import Pool
from oboyu.text import pieces

MECAB = "mecab-unidic-lite"  # the manifest's `word_segmenter` for BertJapaneseTokenizer models


def load_tokenizer(path: Path, word_segmenter: str | None = None) -> Tokenizer | MecabWordPiece:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # the engine pads per batch and truncates itself, so token counts and offsets are whole
    tokenizer.no_padding()
    tokenizer.no_truncation()
    if word_segmenter is None:
        return tokenizer
    if word_segmenter != MECAB:
        raise OboyuError(f"unknown word segmenter {word_segmenter!r} in the model's manifest")
    return MecabWordPiece(tokenizer)


@dataclass(frozen=True)
class Encoding:
    ids: list[int]
    offsets: list[tuple[int, int]]


class MecabWordPiece:
    """BertJapaneseTokenizer's recipe: NFKC, MeCab (unidic-lite) surface forms, WordPiece per word."""

    def __init__(self, tokenizer: Tokenizer):
        self.inner = tokenizer

    def token_to_id(self, token: str) -> int | None:
        return self.inner.token_to_id(token)

    def encode(self, text: str, add_special_tokens: bool = True) -> Encoding:
        return self.encode_batch([text], add_special_tokens)[0]

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[Encoding]:
        segmented = [self.words(t) for t in texts]
        encodings = self.inner.encode_batch([words for words, _ in segmented], is_pretokenized=True,
                                            add_special_tokens=add_special_tokens)
        out = []
        for encoding, (_words, starts) in zip(encodings, segmented):
            offsets = [
                (0, 0) if word is None else (starts[word] + a, starts[word] + b)
                for word, (a, b) in zip(encoding.word_ids, encoding.offsets)
            ]
            out.append(Encoding(list(encoding.ids), offsets))
        return out

    def words(self, text: str) -> tuple[list[str], list[int]]:
        """MeCab words of the NFKC text, and where each starts in `text` itself."""
        normal = unicodedata.normalize("NFKC", text)
        to_original = _offset_map(text, normal)
        words, starts, pos = [], [], 0
        for _, piece in pieces(normal):  # `pos` follows the pieces through `normal`
            with _TAGGERS.borrowed() as tagger:  # read while held: the next parse reuses the nodes' memory
                surfaces = [node.surface for node in tagger(piece)]
            for surface in surfaces:
                found = normal.find(surface, pos)
                if not surface or found < 0:
                    continue
                words.append(surface)
                starts.append(to_original(found))
                pos = found + len(surface)
        return words, starts


def _new_tagger():
    import fugashi
    import unidic_lite

    return fugashi.GenericTagger(f'-d "{unidic_lite.DICDIR}" -r "{unidic_lite.DICDIR}/mecabrc"')


_TAGGERS: Pool = Pool(_new_tagger)  # MeCab's, unidic-lite's raw features: one a thread at a time (`oboyu.pools`)


def _offset_map(text: str, normal: str):
    """Position in the NFKC text -> position in the original (NFKC may grow or shrink text)."""
    if normal == text:
        return lambda i: i
    # where each original character's normal form starts in the normal text (per character NFKC;
    # combining sequences may shift a position by a character, never out of range)
    starts, total = [], 0
    for ch in text:
        starts.append(total)
        total += len(unicodedata.normalize("NFKC", ch))
    return lambda i: min(len(text), max(0, bisect.bisect_right(starts, i) - 1))
