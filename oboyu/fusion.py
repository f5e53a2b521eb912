"""Combining the vector and keyword rankings of the same candidates into one.

`convex` (the default) adds each leg's scores after scaling them to [0, 1] over that leg's own
candidates, weighted; a chunk missing from a leg gets 0 there. Unlike reciprocal rank fusion it
keeps how far apart the scores are: where keyword matching is weak (a query's words spread thinly
over boilerplate), BM25 scores are flat and their scaled spread stays small relative to a
confident vector ranking, so they cannot drag it down by rank alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Ranking = Sequence[tuple[str, float]]  # (chunk id, score), best first


def rrf(legs: Mapping[str, Ranking], k: int = 60, weights: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: sum over legs of weight / (k + rank)."""
    fused: dict[str, float] = {}
    for leg, ranking in legs.items():
        weight = (weights or {}).get(leg, 1.0)
        for rank, (cid, _) in enumerate(ranking, start=1):
            fused[cid] = fused.get(cid, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def convex(legs: Mapping[str, Ranking], weights: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """Weighted sum of min-max scaled scores (scaled over each leg's candidates)."""
    fused: dict[str, float] = {}
    for leg, ranking in legs.items():
        if not ranking:
            continue
        weight = (weights or {}).get(leg, 1.0)
        scores = [score for _, score in ranking]
        low, high = min(scores), max(scores)
        span = high - low
        for cid, score in ranking:
            scaled = (score - low) / span if span > 0 else 1.0
            fused[cid] = fused.get(cid, 0.0) + weight * scaled
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
