"""Step 5: the gate. A quantized model is compared with the fp32 one on the same texts: cosine of
their vectors, and whether they retrieve the same things (top-1 and top-10 agreement, and Recall@10
on labelled queries when an eval set in `../shared/eval`'s format is given)."""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oboyu.models.embedding import Embedder

MIN_MEAN_COSINE = 0.98
MAX_RECALL_DROP = 0.03  # Recall@10 of the quantized model may trail fp32's by this much
EVAL_QUERIES = 150
EVAL_DOCS = 400  # the queries' relevant documents and others drawn at random
DOC_CHARS = 600  # a document is embedded as its beginning: about one chunk


@dataclass
class RetrievalSet:
    queries: list[str]
    documents: list[str]
    relevant: list[int] | None  # index of each query's relevant document, when labelled


def eval_set(folder: Path, seed: int = 11) -> RetrievalSet:
    """A labelled sample of an eval folder (docs.jsonl.gz, queries.jsonl)."""
    folder = Path(folder)
    with gzip.open(folder / "docs.jsonl.gz", "rt", encoding="utf-8") as handle:
        docs = {d["id"]: d["text"] for d in map(json.loads, handle) if d.get("text", "").strip()}
    with open(folder / "queries.jsonl", encoding="utf-8") as handle:
        queries = [q for q in map(json.loads, handle) if q.get("relevant_doc_id") in docs]
    rng = random.Random(seed)
    queries = rng.sample(queries, min(EVAL_QUERIES, len(queries)))
    chosen = list(dict.fromkeys(q["relevant_doc_id"] for q in queries))
    others = [d for d in docs if d not in set(chosen)]
    chosen += rng.sample(others, max(0, min(len(others), EVAL_DOCS - len(chosen))))
    position = {doc_id: i for i, doc_id in enumerate(chosen)}
    return RetrievalSet([q["query"] for q in queries], [docs[d][:DOC_CHARS] for d in chosen],
                        [position[q["relevant_doc_id"]] for q in queries])


def probe_set(texts: list[str]) -> RetrievalSet:
    """Unlabelled: the short probe texts ask, the longer ones answer; only agreement is measured."""
    ordered = sorted(texts, key=len)
    half = len(ordered) // 3
    return RetrievalSet(ordered[:half], ordered[half:], None)


def compare(reference: Embedder, candidate: Embedder, texts: list[str], retrieval: RetrievalSet) -> dict:
    queries = [t for i, t in enumerate(texts) if i % 2 == 0]
    passages = [t for i, t in enumerate(texts) if i % 2 == 1]
    ref = np.vstack([reference.embed_queries(queries), reference.embed_passages(passages)])
    got = np.vstack([candidate.embed_queries(queries), candidate.embed_passages(passages)])
    cosines = (ref * got).sum(axis=1)
    report: dict = {"texts": len(texts), "mean_cosine": round(float(cosines.mean()), 6),
              "min_cosine": round(float(cosines.min()), 6)}
    ref_top = top10(reference, retrieval)
    got_top = top10(candidate, retrieval)
    report["retrieval"] = {
        "queries": len(retrieval.queries),
        "documents": len(retrieval.documents),
        "top1_agreement": round(float(np.mean(ref_top[:, 0] == got_top[:, 0])), 4),
        "top10_overlap": round(float(np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(ref_top, got_top)])), 4),
    }
    if retrieval.relevant is not None:
        relevant = np.array(retrieval.relevant)[:, None]
        report["retrieval"]["recall_at_10_fp32"] = round(float((ref_top == relevant).any(axis=1).mean()), 4)
        report["retrieval"]["recall_at_10"] = round(float((got_top == relevant).any(axis=1).mean()), 4)
    return report


def gate_failure(report: dict, min_cosine: float = MIN_MEAN_COSINE) -> str | None:
    """Why the candidate must not be installed, or None."""
    if report["mean_cosine"] < min_cosine:
        return f"mean cosine with fp32 {report['mean_cosine']:.6f} < {min_cosine}"
    return _quality_drop(report["retrieval"], "recall_at_10", "Recall@10")


def _quality_drop(retrieval: dict, key: str, label: str) -> str | None:
    """Why a labelled quality figure fell too far below fp32's, or None (also when unlabelled)."""
    if key in retrieval and retrieval[key] < retrieval[f"{key}_fp32"] - MAX_RECALL_DROP:
        return f"{label} {retrieval[key]:.3f} trails fp32's {retrieval[f'{key}_fp32']:.3f} by more than {MAX_RECALL_DROP}"
    return None


def top10(embedder: Embedder, retrieval: RetrievalSet) -> np.ndarray:
    queries = embedder.embed_queries(retrieval.queries)
    documents = embedder.embed_passages(retrieval.documents)
    k = min(10, len(retrieval.documents))
    return np.argsort(-(queries @ documents.T), axis=1, kind="stable")[:, :k]


RERANK_QUERIES = 60
RERANK_CANDIDATES = 10  # a query's relevant document and nine others


def compare_rerankers(reference, candidate, retrieval: RetrievalSet, seed: int = 13) -> dict:
    """A quantized cross-encoder against fp32 (both `oboyu.rerank.Reranker`): correlation of their
    scores over query-passage pairs, whether they put the same passage first, and (labelled) how
    often each puts the relevant passage first among RERANK_CANDIDATES."""
    from oboyu.models.convert.export import correlation

    rng = random.Random(seed)
    count = min(RERANK_QUERIES, len(retrieval.queries))
    ours_all, theirs_all, same_top, right_ref, right_got = [], [], 0, 0, 0
    for q in range(count):
        others = [d for d in range(len(retrieval.documents)) if retrieval.relevant is None or d != retrieval.relevant[q]]
        chosen = rng.sample(others, min(len(others), RERANK_CANDIDATES - (retrieval.relevant is not None)))
        if retrieval.relevant is not None:
            chosen.insert(rng.randrange(len(chosen) + 1), retrieval.relevant[q])
        passages = [retrieval.documents[d] for d in chosen]
        theirs = reference.score(retrieval.queries[q], passages)
        ours = candidate.score(retrieval.queries[q], passages)
        theirs_all.extend(theirs.tolist())
        ours_all.extend(ours.tolist())
        same_top += int(np.argmax(theirs) == np.argmax(ours))
        if retrieval.relevant is not None:
            right_ref += int(chosen[int(np.argmax(theirs))] == retrieval.relevant[q])
            right_got += int(chosen[int(np.argmax(ours))] == retrieval.relevant[q])
    report: dict = {"pairs": len(ours_all), "score_correlation": round(correlation(ours_all, theirs_all), 6),
              "retrieval": {"queries": count, "top1_agreement": round(same_top / max(count, 1), 4)}}
    if retrieval.relevant is not None:
        report["retrieval"]["accuracy_at_1_fp32"] = round(right_ref / max(count, 1), 4)
        report["retrieval"]["accuracy_at_1"] = round(right_got / max(count, 1), 4)
    return report


def reranker_gate_failure(report: dict, min_correlation: float = MIN_MEAN_COSINE) -> str | None:
    if report["score_correlation"] < min_correlation:
        return f"score correlation with fp32 {report['score_correlation']:.6f} < {min_correlation}"
    return _quality_drop(report["retrieval"], "accuracy_at_1", "accuracy@1")
