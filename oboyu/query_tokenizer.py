"""A light tokenizer for queries of the default model, exact to its `tokenizers` Unigram.

Loading `tokenizer.json` (250k pieces) takes about 0.8 s and 300 MB: most of a one-shot
`oboyu query`. A query is a few dozen characters, so a Viterbi search in Python over a plain
dict of pieces costs a fraction of a millisecond, and the dict loads in a tenth of the time.
It reproduces the default model's tokenizer step for step (the test compares them on thousands
of texts): special tokens split out first, the per-codepoint normalisation map, runs of spaces
collapsed, Metaspace `▁` before every word, SentencePiece's Viterbi with the unknown-piece
penalty and runs of unknown characters fused into one `<unk>`, then `<s> … </s>`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

QUERY_TOKENIZER_FILE = "query_tokenizer.npz"
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
UNK_PENALTY = 10.0  # SentencePiece's kUnkPenalty, as `tokenizers` uses it
_SPACES = re.compile(" {2,}")


def save_query_tokenizer(path: Path, pieces: list[str], scores: np.ndarray, normalization: dict[int, tuple[int, ...]],
                         bos: int, eos: int, unk: int) -> None:
    """The vocabulary in one compact file (pieces joined by NUL, which no piece holds)."""
    if any("\0" in piece for piece in pieces):
        raise ValueError("a piece contains NUL")
    keys = sorted(normalization)
    np.savez(
        path,
        pieces=np.frombuffer("\0".join(pieces).encode("utf-8"), dtype=np.uint8),
        scores=np.asarray(scores, dtype=np.float32),
        norm_keys=np.asarray(keys, dtype=np.int32),
        norm_values=np.frombuffer("\0".join("".join(map(chr, normalization[k])) for k in keys).encode("utf-8"),
                                  dtype=np.uint8),
        specials=np.asarray([bos, eos, unk], dtype=np.int64),
    )


class QueryTokenizer:
    def __init__(self, path: Path):
        with np.load(path) as data:
            pieces = data["pieces"].tobytes().decode("utf-8").split("\0")
            scores = data["scores"].astype(np.float64).tolist()
            keys = data["norm_keys"].tolist()
            values = data["norm_values"].tobytes().decode("utf-8").split("\0")
            self.bos, self.eos, self.unk = (int(x) for x in data["specials"])
        self.ids = {piece: i for i, piece in enumerate(pieces)}
        self.scores = scores
        self.specials = {piece: self.ids[piece] for piece in SPECIAL_TOKENS if piece in self.ids}
        self._special_split = re.compile("(" + "|".join(map(re.escape, self.specials)) + ")")
        self.normalization = str.maketrans({chr(k): v for k, v in zip(keys, values)})
        self.longest = max(map(len, pieces))
        self.unk_score = min(scores) - UNK_PENALTY

    def encode_ids(self, text: str) -> list[int]:
        """Token ids of `text`, with `<s>` and `</s>`."""
        ids = [self.bos]
        for part in self._special_split.split(text):
            if not part:
                continue
            if part in self.specials:
                ids.append(self.specials[part])
                continue
            normal = _SPACES.sub(" ", part.translate(self.normalization)).replace(" ", "▁")
            if not normal:
                continue
            if not normal.startswith("▁"):
                normal = "▁" + normal
            for word in re.split("(?=▁)", normal):
                if word:
                    ids.extend(self._viterbi(word))
        ids.append(self.eos)
        return ids

    def _viterbi(self, word: str) -> list[int]:
        """The best segmentation of one word, ties going to what was found first (shorter pieces
        from earlier positions), as SentencePiece's optimized encoder does."""
        n = len(word)
        best_score = [0.0] + [float("-inf")] * n
        best_from = [-1] * (n + 1)
        best_id = [-1] * (n + 1)
        ids, scores = self.ids, self.scores
        for start in range(n):
            if best_from[start] < 0 and start > 0:
                continue
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
        out: list[int] = []
        end = n
        while end > 0:
            out.append(best_id[end])
            end = best_from[end]
        out.reverse()
        fused: list[int] = []
        for token in out:  # a run of unknown characters is one <unk>
            if token == self.unk and fused and fused[-1] == self.unk:
                continue
            fused.append(token)
        return fused
