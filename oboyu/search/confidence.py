"""How sure a result is: the estimated probability that it is relevant, comparable across
queries, modes and index sizes, and the line under which a result is a weak match.

Computed from absolute evidence, not from the rank among whatever came back: the passage's cosine
to the query; how far that stands above the query's cosine to the index's passages at large (in
their standard deviations: some queries look alike to everything; a small folder's few passages
are topped up with the model's typical spread, so that three notes cannot make every match look
ordinary, nor a large index's crowd of near neighbours make every match look weak); its lead over
the other files (a right answer usually leads them by a clear margin, a question the folder cannot
answer finds several files about as alike; in keyword mode the lead in BM25); and the share of the
query's words the passage holds (title and heading included). A logistic model per embedding
model and mode turns that into a probability; its weights and two lines come from
`scripts/calibrate.py`, fitted on the development sets, and live in `calibration.json` beside
this module. The threshold says whether a query has a good match at all ("no good match" when
none of its results reaches it); where one does, only results under the lower hide line are
weak: a second right answer, or the right one ranked under a confident wrong one, looks less sure
than a lone answer does, and hiding it at the threshold hid right answers on collections the
table was not fitted on (docs/relevance.md). A model without a fitted table is judged by its words
alone (the keyword table, which does not depend on the model), and in vector and hybrid mode
nothing is called weak: its cosines say nothing we have measured.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from oboyu.models.manifest import split_engine
from oboyu.modes import Mode

PRIOR_PASSAGES = 50  # how many typical cosines a query's spread is topped up with (3 notes: mostly prior)
# the margin is taken over the n-th best other file, not the next one: a copy of the answer, or a
# companion note, must not make a clear answer look ordinary
MARGIN_OVER = 2
SURE = 0.3  # a query whose best result is at least this likely has a good match, whatever its tokens

FEATURES = {
    "hybrid": ("cosine", "standout", "margin", "coverage"),
    "vector": ("cosine", "standout", "margin", "coverage"),
    "keyword": ("coverage", "idf_coverage", "keyword_margin"),
}


@dataclass(frozen=True)
class Evidence:
    cosine: float  # the passage's cosine to the query (the vector leg's lowest when it was not among them)
    standout: float  # (cosine - mean) / std of the query's cosines to the index's passages
    margin: float  # cosine - the MARGIN_OVER-th best other file's cosine (the mean where there are fewer)
    keyword_margin: float  # the same for BM25, in units of the BM25 that every query word would reach
    coverage: float  # share of the query's distinct words in the passage
    idf_coverage: float  # the same, each word weighted by its rarity in the index

    @classmethod
    def of(cls, shown: Mapping[str, float]) -> Evidence:
        """The evidence a result shows (`Result.evidence`, which may add the token match)."""
        return cls(**{name: shown[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Model:
    features: tuple[str, ...]  # the Evidence fields it reads, in the weights' order
    weights: tuple[float, ...]
    bias: float
    threshold: float  # a good match reaches it; a query with none gets "no good match"
    hide: float  # beside a good match, a result under this line is a weak one (at most the threshold)
    # where fitted, whether a query has a good match is told by how well its tokens find their like
    # in the first result (`token_match`) instead of by the threshold: a query whose best
    # result is at least SURE has one without asking
    match_line: float | None = None

    def probability(self, evidence: Evidence) -> float:
        z = self.bias + sum(w * getattr(evidence, name) for w, name in zip(self.weights, self.features, strict=True))
        return 1 / (1 + math.exp(-max(-40.0, min(40.0, z))))

    def weak(self, confidence: float, good_match: bool) -> bool:
        """Whether a result of this confidence is left out by default, in a query that has (or has
        not) a good match: beside one, under the hide line; without one, every result."""
        return not good_match or confidence < self.hide

    def asks_token_match(self, best: float) -> bool:
        """Whether a query whose best result has this confidence is told by its token match."""
        return self.match_line is not None and best < SURE

    def has_good_match(self, best: float, token_match: float | None = None) -> bool:
        """Whether a query has a good match: where its token match is asked and known, by the
        match line; else by its best result's confidence against the threshold."""
        if token_match is not None and self.match_line is not None and self.asks_token_match(best):
            return token_match >= self.match_line
        return best >= self.threshold


@functools.cache
def _table() -> dict:
    return json.loads(resources.files("oboyu.search").joinpath("calibration.json").read_text(encoding="utf-8"))


def _calibrated_as(model_id: str | None) -> str:
    """The table's key for a model: OpenVINO's vectors of a model use its onnxruntime table (the
    same weights and scales; cosines within 0.003 of onnxruntime's, and the dev sets' figures
    unchanged, docs/decisions.md). A build of the same model with another fingerprint uses the
    table fitted for that model: the default model's calibrated scales come from fp32 inference,
    whose last bits differ between CPUs (AVX2 against AVX-512), so each CPU class builds its own
    fingerprint of the same function, and a later build changes only how it is spelled."""
    if not model_id:
        return ""
    key = split_engine(model_id)[0]
    fitted = _table().get("models", {})
    if key in fitted:
        return key
    same_model = [fitted_id for fitted_id in fitted if fitted_id.split("@")[0] == key.split("@")[0]]
    return same_model[-1] if same_model else key


def reference_for(model_id: str | None) -> tuple[float, float] | None:
    """The mean and standard deviation of a query's cosines to a collection's passages, typical of
    the model."""
    found = _table().get("reference", {}).get(_calibrated_as(model_id))
    return (found["mean"], found["std"]) if found else None


def model_for(model_id: str | None, mode: Mode) -> Model:
    """The fitted model for an embedding model and mode (a model without a table: the words-only
    keyword model, fitted on the default model's sets, which calls nothing weak outside keyword
    mode)."""
    table = _table()
    entry = table.get("models", {}).get(_calibrated_as(model_id), {}).get(mode)
    if entry is None:
        entry = dict(table["words_only"])
        if mode != Mode.KEYWORD:
            entry.update(threshold=0.0, hide=0.0)
    return Model(tuple(entry["features"]), tuple(entry["weights"]), entry["bias"], entry["threshold"], entry["hide"],
                 entry.get("match_line"))


def blended_spread(spread: tuple[float, float, int], reference: tuple[float, float] | None) -> tuple[float, float]:
    """The query's cosine mean and standard deviation over the index's passages, topped up with
    PRIOR_PASSAGES draws of the model's typical spread (when known)."""
    mean, std, n = spread
    if reference is None or n >= 10 * PRIOR_PASSAGES:
        return mean, std
    prior_mean, prior_std = reference
    total = n + PRIOR_PASSAGES
    blended = (n * mean + PRIOR_PASSAGES * prior_mean) / total
    second = (n * (std**2 + mean**2) + PRIOR_PASSAGES * (prior_std**2 + prior_mean**2)) / total
    return blended, math.sqrt(max(0.0, second - blended * blended))


def _margins(pool: Sequence[tuple[str, float]], files: Mapping[str, str], alone: float) -> Callable[[str, float], float]:
    """score -> its lead over the MARGIN_OVER-th best other file in a leg's candidates (`alone`:
    the score of an ordinary passage, for files the folder lacks)."""
    best_of_file: dict[str, float] = {}
    for cid, score in pool:
        path = files.get(cid, cid)
        best_of_file[path] = max(score, best_of_file.get(path, score))
    leaders = sorted(best_of_file.items(), key=lambda item: -item[1])[:MARGIN_OVER + 1]

    def margin(cid: str, score: float) -> float:
        path = files.get(cid, cid)
        # a folder of fewer files: the missing ones count as ordinary passages
        others = [value for other, value in leaders if other != path] + [alone] * MARGIN_OVER
        return score - others[MARGIN_OVER - 1]

    return margin


def gather(passages: Mapping[str, set[str]], terms: Sequence[str], idf: Mapping[str, float], files: Mapping[str, str],
           vector_pool: Sequence[tuple[str, float]] = (), keyword_pool: Sequence[tuple[str, float]] = (),
           spread: tuple[float, float, int] = (0.0, 0.0, 0), reference: tuple[float, float] | None = None,
           best_bm25: float = 0.0, exact: Mapping[str, float] | None = None) -> dict[str, Evidence]:
    """The evidence for each chosen passage (passages: id -> the query's terms it holds, title
    and heading included; files: chunk id -> its file, for the pools and the chosen). The pools
    are each leg's candidates (none for a leg the mode does not run); spread: the query's cosine
    mean, deviation and passages counted (`Ranker.cosine_spread`); best_bm25: the BM25 a passage
    holding every query word would reach, the keyword margin's unit; exact: the cosines of chosen
    passages outside the vector pool. Without it such a passage is taken at the pool's lowest
    cosine, an upper bound: a trial's `C++` gave three files found by the letter c alone the same
    cosine, 3.6 deviations above the mean, and a confidence of 0.69."""
    cosines = dict(vector_pool)
    floor = min(cosines.values()) if cosines else 0.0
    cosines.update({cid: value for cid, value in (exact or {}).items() if cid not in cosines})
    bm25 = dict(keyword_pool)
    mean, spread_std = blended_spread(spread, reference)
    vector_margin = _margins(vector_pool, files, mean)
    keyword_margin = _margins(keyword_pool, files, 0.0)
    wanted = sorted(set(terms))  # summed in one order: a set's differs between processes
    weight = {t: idf.get(t, 0.0) for t in wanted}
    total = sum(weight.values())
    out = {}
    for cid, words in passages.items():
        cosine = cosines.get(cid, floor)
        held = [t for t in wanted if t in words]
        out[cid] = Evidence(
            cosine=cosine,
            standout=(cosine - mean) / spread_std if spread_std > 0 else 0.0,
            margin=vector_margin(cid, cosine),
            keyword_margin=keyword_margin(cid, bm25.get(cid, 0.0)) / best_bm25 if best_bm25 > 0 else 0.0,
            coverage=len(held) / len(wanted) if wanted else 0.0,
            idf_coverage=sum(weight[t] for t in held) / total if total > 0 else 0.0,
        )
    return out
