"""Combining the vector and keyword rankings of the same candidates into one.

`convex` (the default) adds each leg's scores after scaling them to [0, 1] over that leg's own
candidates, weighted; a chunk missing from a leg gets 0 there. Unlike reciprocal rank fusion it
keeps how far apart the scores are: where keyword matching is weak (a query's words spread thinly
over boilerplate), BM25 scores are flat and their scaled spread stays small relative to a
confident vector ranking, so they cannot drag it down by rank alone.

A leg may have a ceiling: the least its best score is scaled against. Hybrid search gives the
keyword leg half of what a passage holding every query word would score, so that in a small
folder one common word matched by one note (「計画」 in a trip plan, for 「運動の計画」) counts for
little rather than being scaled up to a full 1.0 because nothing else matched at all.

`convex_with_files` adds legs that rank files rather than passages (hybrid search's `lead` leg:
each file's first passage, where a document says what it is about): a file's scaled score goes to
every candidate passage of that file, so it lifts the file without reordering its passages.
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


def convex(legs: Mapping[str, Ranking], weights: Mapping[str, float] | None = None,
           ceilings: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """Weighted sum of min-max scaled scores (scaled over each leg's candidates). A leg's
    ceiling is the least its best score is scaled against: when every candidate scores far below
    it (one common word matched, in a small folder), none of them reaches 1."""
    fused: dict[str, float] = {}
    for leg, ranking in legs.items():
        if not ranking:
            continue
        weight = (weights or {}).get(leg, 1.0)
        for cid, value in scaled(ranking, (ceilings or {}).get(leg, 0.0)):
            fused[cid] = fused.get(cid, 0.0) + weight * value
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def scaled(ranking: Ranking, ceiling: float = 0.0) -> list[tuple[str, float]]:
    """A leg's scores scaled to [0, 1] over its own candidates, its best scaled against at least
    `ceiling`."""
    if not ranking:
        return []
    scores = [score for _, score in ranking]
    low, high = min(scores), max(max(scores), ceiling)
    if len(scores) == 1 or low >= high:
        low = 0.0  # a lone candidate is scaled against nothing: by its own size, under the ceiling
    span = high - low
    return [(cid, (score - low) / span if span > 0 else 1.0) for cid, score in ranking]


def convex_with_files(legs: Mapping[str, Ranking], file_legs: Mapping[str, Ranking], file_of: Mapping[str, str],
                      weights: Mapping[str, float], ceilings: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """`convex` over the passage legs plus the file legs, whose rankings hold one passage a file
    (`file_of` maps every passage id of every leg to its file)."""
    fused = dict(convex(legs, weights, ceilings))
    for leg, ranking in file_legs.items():
        if not ranking:
            continue
        weight = weights.get(leg, 1.0)
        by_file = {file_of[cid]: value for cid, value in scaled(ranking, (ceilings or {}).get(leg, 0.0)) if cid in file_of}
        for cid, _ in ranking:  # a file found by this leg alone is a candidate through this passage
            fused.setdefault(cid, 0.0)
        for cid in fused:
            fused[cid] += weight * by_file.get(file_of.get(cid, ""), 0.0)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
