"""A light tokenizer for the default model, exact to its `tokenizers` Unigram, ids and offsets.

Loading `tokenizer.json` (250k pieces) takes about 0.8 s and 300 MB: most of a one-shot
`oboyu query`, and half the memory of an indexing process. The same Unigram model in plain
Python loads in 0.15 s into 58 MB, and encodes real chunks faster than `tokenizers` does here
(1.9 against 4.6 ms a chunk of 230 tokens). It follows the tokenizer step for step (the tests
compare ids and offsets on hundreds of texts): special tokens split out first, the
per-codepoint normalisation map applied per grapheme as `tokenizers` applies it, runs of spaces
collapsed, Metaspace `▁` before every word, SentencePiece's Viterbi with the unknown-piece
penalty and runs of unknown characters fused into one `<unk>`, then `<s> … </s>`.
"""

from __future__ import annotations

import bisect
import os
import re
import unicodedata
from pathlib import Path

import numpy as np

from oboyu.models.tokenization import Encoding

LIGHT_TOKENIZER_FILE = "light_tokenizer.npz"
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
DICT_AFTER = 20_000  # piece lookups by binary search before the 250k-piece dict pays for itself
UNK_PENALTY = 10.0  # SentencePiece's kUnkPenalty, as `tokenizers` uses it


def save_light_tokenizer(path: Path, pieces: list[str], scores: np.ndarray, normalization: dict[int, tuple[int, ...]],
                         bos: int, eos: int, unk: int) -> None:
    """The vocabulary in one compact file (pieces joined by NUL, which no piece holds)."""
    if any("\0" in piece for piece in pieces):
        raise ValueError("a piece contains NUL")
    keys = sorted(normalization)
    encoded = [piece.encode("utf-8") for piece in pieces]
    np.savez(
        path,
        pieces=np.frombuffer("\0".join(pieces).encode("utf-8"), dtype=np.uint8),
        order=np.asarray(sorted(range(len(pieces)), key=encoded.__getitem__), dtype=np.int32),  # by their bytes
        longest=np.asarray(max(map(len, pieces)), dtype=np.int64),
        scores=np.asarray(scores, dtype=np.float32),
        norm_keys=np.asarray(keys, dtype=np.int32),
        norm_values=np.frombuffer("\0".join("".join(map(chr, normalization[k])) for k in keys).encode("utf-8"),
                                  dtype=np.uint8),
        specials=np.asarray([bos, eos, unk], dtype=np.int64),
    )


def _extends(char: str) -> bool:
    """Whether a character joins the grapheme before it (combining marks, joiners, variation
    selectors: the cases that matter for clusters of under 6 bytes)."""
    code = ord(char)
    return (unicodedata.category(char) in ("Mn", "Me", "Mc") or code == 0x200D
            or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF)


def _clusters(text: str) -> list[tuple[int, int]]:
    """Grapheme clusters as far as normalisation needs them: CR LF, and a character that is not a
    control with the marks that follow it."""
    out = []
    i = 0
    while i < len(text):
        j = i + 1
        if text[i] == "\r" and text[j : j + 1] == "\n":
            j += 1
        elif unicodedata.category(text[i]) not in ("Cc", "Zl", "Zp"):
            while j < len(text) and _extends(text[j]):
                j += 1
        out.append((i, j))
        i = j
    return out


class SortedPieces:
    """piece -> id by a binary search over the pieces' bytes in sorted order: a query needs a few
    hundred lookups, and building the 250k-entry dict takes 70 ms of a one-shot query's 500. The
    arrays stay numpy's: made into lists (with the scores) they cost a query another 58 ms."""

    def __init__(self, blob: bytes, order: np.ndarray):
        ends = np.flatnonzero(np.frombuffer(blob, np.uint8) == 0)
        self.blob = blob
        self.starts = np.r_[0, ends + 1]
        self.ends = np.r_[ends, len(blob)]
        self.order = order
        self.lookups = 0

    def _piece(self, number: int) -> bytes:
        return self.blob[self.starts[number]:self.ends[number]]

    def get(self, piece: str, default: int | None = None) -> int | None:
        self.lookups += 1
        key, order = piece.encode("utf-8", "surrogatepass"), self.order
        low = bisect.bisect_left(order, key, key=self._piece)
        return int(order[low]) if low < len(order) and self._piece(order[low]) == key else default

    def as_dict(self) -> dict[str, int]:
        return _piece_ids(self.blob)


def _sorted_order(blob: bytes) -> np.ndarray:
    encoded = blob.split(b"\0")
    return np.asarray(sorted(range(len(encoded)), key=encoded.__getitem__), dtype=np.int32)


def _add_sorted_order(path: Path, order: np.ndarray, longest: int) -> None:
    """Write the sorted order and the longest piece into a file made before they were kept (a
    model built by an older oboyu: its queries built the 250k-piece dict, 0.1 s each), replacing
    it whole. A model folder this user cannot write is left as it is: it loads the same."""
    partial = path.with_name(path.name + ".partial.npz")
    try:
        with np.load(path) as data:
            arrays = {name: data[name] for name in data.files if name not in ("order", "longest")}
        np.savez(partial, **arrays, order=order, longest=np.asarray(longest, dtype=np.int64))
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)


def _piece_ids(blob: bytes) -> dict[str, int]:
    return {piece: i for i, piece in enumerate(blob.decode("utf-8").split("\0"))}


class LightTokenizer:
    """`encode`, `encode_batch` and `token_to_id`, as the engine uses a `tokenizers` Tokenizer
    (no padding, no truncation; offsets are character spans of the text given)."""

    dict_after = DICT_AFTER

    def __init__(self, path: Path):
        with np.load(path) as data:
            blob = data["pieces"].tobytes()
            scores = data["scores"].astype(np.float64)
            keys = data["norm_keys"].tolist()
            values = data["norm_values"].tobytes().decode("utf-8").split("\0")
            self.bos, self.eos, self.unk = (int(x) for x in data["specials"])
            order = data.get("order")
            longest = int(data["longest"]) if "longest" in data else 0
        if order is None or not longest:  # a file made before the sorted order was kept: given it, once
            order, longest = _sorted_order(blob), max(map(len, blob.decode("utf-8").split("\0")))
            _add_sorted_order(path, order, longest)
        self.ids: dict[str, int] | SortedPieces = SortedPieces(blob, order)
        self.scores: np.ndarray | list[float] = scores  # a list once many pieces are looked up
        self.specials = {piece: i for piece in SPECIAL_TOKENS if (i := self.ids.get(piece)) is not None}
        self._special_split = re.compile("(" + "|".join(map(re.escape, self.specials)) + ")")
        self.normalization = {chr(k): v for k, v in zip(keys, values)}
        self.longest = longest
        self.unk_score = float(scores.min()) - UNK_PENALTY

    def _lookup(self, coming: int = 0) -> dict[str, int] | SortedPieces:
        """The pieces' ids: searched while few are asked for, a dict once many are (indexing), or
        are about to be: `coming`, a word's most lookups (a fuzzing trial's line of 100,000 x's,
        one word, took 26 s searched, as the switch came only at the next word)."""
        if isinstance(self.ids, SortedPieces) and self.ids.lookups + coming > self.dict_after:
            self.ids = self.ids.as_dict()
            self.scores = np.asarray(self.scores).tolist()  # a list's items are read faster
        return self.ids

    def token_to_id(self, token: str) -> int | None:
        return self.ids.get(token)

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[Encoding]:
        return [self.encode(text, add_special_tokens) for text in texts]

    def encode(self, text: str, add_special_tokens: bool = True) -> Encoding:
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        position = 0
        for part in self._special_split.split(text):
            if part in self.specials:
                ids.append(self.specials[part])
                offsets.append((position, position + len(part)))
            elif part:
                self._encode_part(part, position, ids, offsets)
            position += len(part)
        if add_special_tokens:
            ids = [self.bos, *ids, self.eos]
            offsets = [(0, 0), *offsets, (0, 0)]
        return Encoding(ids, offsets)

    def _encode_part(self, part: str, position: int, ids: list[int], offsets: list[tuple[int, int]]) -> None:
        """Normalise a stretch of text with no special tokens, keeping each output character's
        source character, then segment it word by word."""
        chars: list[str] = []
        origin: list[int] = []
        after_space = False
        for start, end in _clusters(part):
            # a short cluster whose first character has a rule is replaced whole, by that rule
            # (`tokenizers` looks a grapheme of under 6 bytes up as one, by its first match)
            whole = end - start > 1 and len(part[start:end].encode("utf-8")) < 6 and part[start] in self.normalization
            for i in ([start] if whole else range(start, end)):
                for out in self.normalization.get(part[i], part[i]):
                    if out == " " and after_space:
                        origin[-1] = position + i  # a run of spaces is one, the last of them
                        continue
                    after_space = out == " "
                    chars.append("▁" if after_space else out)
                    origin.append(position + i)
        if not chars:
            return
        if chars[0] != "▁":  # the prepended `▁` belongs to the first character
            chars.insert(0, "▁")
            origin.insert(0, origin[0])
        normal = "".join(chars)
        starts = [i for i, char in enumerate(chars) if char == "▁"]
        if starts[0] != 0:
            starts.insert(0, 0)
        for start, end in zip(starts, starts[1:] + [len(chars)]):
            cut = start
            for token in self._viterbi(normal[start:end]):
                token_id, length = token
                ids.append(token_id)
                offsets.append((origin[cut], origin[cut + length - 1] + 1))
                cut += length

    def _viterbi(self, word: str) -> list[tuple[int, int]]:
        """The best segmentation of one word as (id, characters), ties going to what was found
        first (shorter pieces from earlier positions), as SentencePiece's optimized encoder does."""
        n = len(word)
        best_score = [0.0] + [float("-inf")] * n
        best_from = [-1] * (n + 1)
        best_id = [-1] * (n + 1)
        ids, scores = self._lookup(n * self.longest), self.scores
        for start in range(n):
            here = best_score[start]
            single = False
            for end in range(start + 1, min(n, start + self.longest) + 1):
                piece_id = ids.get(word[start:end])
                if piece_id is None:
                    continue
                candidate = here + scores[piece_id]
                if best_from[end] < 0 or candidate > best_score[end]:
                    best_score[end], best_from[end], best_id[end] = candidate, start, piece_id
                if end == start + 1:
                    single = True
            if not single:
                candidate = here + self.unk_score
                if best_from[start + 1] < 0 or candidate > best_score[start + 1]:
                    best_score[start + 1], best_from[start + 1], best_id[start + 1] = candidate, start, self.unk
        out: list[tuple[int, int]] = []
        end = n
        while end > 0:
            out.append((best_id[end], end - best_from[end]))
            end = best_from[end]
        out.reverse()
        fused: list[tuple[int, int]] = []
        for token_id, length in out:  # a run of unknown characters is one <unk>
            if token_id == self.unk and fused and fused[-1][0] == self.unk:
                fused[-1] = (self.unk, fused[-1][1] + length)
                continue
            fused.append((token_id, length))
        return fused
