"""How sure a result is: the estimated probability that it is relevant, comparable across
queries, modes and index sizes, and the line under which a result is a weak match.

Computed from absolute evidence, not from the rank among whatever came back: the best passage's
cosine to the query, how far it stands above the other candidates of the vector leg (in their
standard deviations; a small folder's few candidates are topped up with the model's typical
unrelated cosines, so that three notes cannot make every match look ordinary), and the share of
the query's words the passage holds (title and heading included). A logistic model per embedding model and mode turns that into a probability; its
weights and the weak-match threshold come from `benchmarks/calibrate.py`, fitted on the
development sets, and live in `calibration.json` beside this module. A model without a fitted
table is judged by its words alone (the keyword table), which does not depend on the model.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

PRIOR_CANDIDATES = 20  # how many typical cosines a pool is topped up with (a folder of 3 notes: mostly prior)

FEATURES = {
    "hybrid": ("cosine", "standout", "coverage"),
    "vector": ("cosine", "standout", "coverage"),
    "keyword": ("coverage", "idf_coverage"),
}


@dataclass(frozen=True)
class Evidence:
    cosine: float  # the passage's cosine to the query (the vector leg's lowest when it was not among them)
    standout: float  # (cosine - mean) / std over the vector leg's candidates
    coverage: float  # share of the query's distinct words in the passage
    idf_coverage: float  # the same, each word weighted by its rarity in the index

    def vector(self, mode: str) -> list[float]:
        return [getattr(self, name) for name in FEATURES[mode]]


@dataclass(frozen=True)
class Model:
    weights: tuple[float, ...]
    bias: float
    threshold: float  # below it, a weak match

    def probability(self, features: Sequence[float]) -> float:
        z = self.bias + sum(w * x for w, x in zip(self.weights, features))
        return 1 / (1 + math.exp(-max(-40.0, min(40.0, z))))


@functools.cache
def _table() -> dict:
    return json.loads(resources.files("oboyu.search").joinpath("calibration.json").read_text(encoding="utf-8"))


def reference_for(model_id: str | None) -> tuple[float, float] | None:
    """The mean and standard deviation of a vector leg's candidate cosines, typical of the model."""
    found = _table().get("reference", {}).get(model_id or "")
    return (found["mean"], found["std"]) if found else None


def model_for(model_id: str | None, mode: str) -> tuple[Model, str]:
    """The fitted model for an embedding model and mode, and the feature set it reads (a model
    without a table: the words-only keyword model, fitted on the default model's sets)."""
    table = _table()
    entry = table.get("models", {}).get(model_id or "", {}).get(mode)
    if entry is None:
        entry, mode = table["words_only"], "keyword"
    return Model(tuple(entry["weights"]), entry["bias"], entry["threshold"]), mode


def pool_statistics(values: Sequence[float], reference: tuple[float, float] | None) -> tuple[float, float]:
    """Mean and standard deviation of the candidates' cosines, topped up with PRIOR_CANDIDATES
    draws of the model's typical pool (when known)."""
    if reference is None:
        return (statistics.fmean(values), statistics.pstdev(values)) if values else (0.0, 0.0)
    n, (prior_mean, prior_std) = len(values), reference
    total = n + PRIOR_CANDIDATES
    mean = (sum(values) + PRIOR_CANDIDATES * prior_mean) / total
    second = (sum(v * v for v in values) + PRIOR_CANDIDATES * (prior_std**2 + prior_mean**2)) / total
    return mean, math.sqrt(max(0.0, second - mean * mean))


def gather(vector_pool: Sequence[tuple[str, float]], passages: Mapping[str, set[str]], terms: Sequence[str],
           idf: Mapping[str, float], reference: tuple[float, float] | None = None) -> dict[str, Evidence]:
    """The evidence for each chosen passage (passages: id -> the query's terms it holds, title
    and heading included). vector_pool: the vector leg's candidates (empty in keyword mode)."""
    cosines = {cid: score for cid, score in vector_pool}
    values = list(cosines.values())
    floor = min(values) if values else 0.0
    mean, spread = pool_statistics(values, reference)
    wanted = set(terms)
    weight = {t: idf.get(t, 0.0) for t in wanted}
    total = sum(weight.values())
    out = {}
    for cid, words in passages.items():
        cosine = cosines.get(cid, floor)
        held = wanted & words
        out[cid] = Evidence(
            cosine=cosine,
            standout=(cosine - mean) / spread if spread > 0 else 0.0,
            coverage=len(held) / len(wanted) if wanted else 0.0,
            idf_coverage=sum(weight[t] for t in held) / total if total > 0 else 0.0,
        )
    return out
