"""Probe texts: varied Japanese and English sentences shipped with the package, for calibrating
and gating model builds and for proving an accelerator's vectors against the CPU's."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from importlib import resources


@functools.cache
def probe_sentences() -> tuple[str, ...]:
    text = resources.files("oboyu.models").joinpath("data/probe_sentences.txt").read_text(encoding="utf-8")
    return tuple(line for line in text.splitlines() if line.strip())


def probe_texts(count: int, max_tokens: int, count_tokens: Callable[[list[str]], list[int]], seed: int = 20261122) -> list[str]:
    """Varied Japanese/English texts, from one sentence up to `max_tokens` tokens, composed
    from the probe sentences in a fixed pseudo-random order."""
    sentences = list(probe_sentences())
    rng = random.Random(seed)
    # mostly short texts, as queries and notes are, and one in twenty near the token limit
    sizes = [1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 5, 1, 1, 2, 2, 3, 8, 12, 40]
    texts = []
    for i in range(count):
        picked = rng.sample(sentences, min(sizes[i % len(sizes)], len(sentences)))
        joiner = "\n" if i % 3 == 0 else " "
        while len(picked) > 1 and count_tokens([joiner.join(picked)])[0] > max_tokens:
            picked.pop()
        texts.append(joiner.join(picked))
    return texts
