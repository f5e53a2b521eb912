"""Measuring search quality on a set of documents and queries (the format of ../shared/eval).

Each document's `text` becomes a file (its name encodes the document id), the files are indexed
like any folder, every query is run in each mode, and a query hits when a chunk of a relevant
document is returned (document-level relevance; files are ranked by their best chunk).
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from oboyu.errors import OboyuError
from oboyu.index.indexer import Indexer
from oboyu.index.reports import IndexStats
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.modes import Mode
from oboyu.progress import ProgressLine
from oboyu.search.query import search
from oboyu.search.resident import ResidentIndex

CUTOFF = 10


@dataclass
class Query:
    id: str
    text: str
    relevant: frozenset[str]


@dataclass
class ModeScores:
    mode: Mode
    queries: int
    recall_at_1: float
    recall_at_10: float
    mrr_at_10: float
    ndcg_at_10: float
    latency_p50_ms: float
    latency_p95_ms: float
    present_no_match: float = 0.0  # share of the queries answered "no good match" (wrongly)
    shown_at_10: float = 0.0  # Recall@10 among the results shown by default (weak ones left out), as a person sees them
    absent_no_match: float | None = None  # share of the absent questions answered so (rightly); None: none given


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def read_jsonl(path: Path) -> list[dict]:
    return [row for _, row in _numbered_rows(path)]


def _numbered_rows(path: Path) -> list[tuple[int, dict]]:
    """Each JSON object of a JSON-lines file with its line number; a line that is not one is an
    error that names the line (JSON's own position is within the line)."""
    rows = []
    try:
        with _open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise OboyuError(f"{path}, line {number}, column {exc.colno}: not JSON ({exc.msg})") from exc
                if not isinstance(row, dict):
                    raise OboyuError(f"{path}, line {number}: not a JSON object")
                rows.append((number, row))
    except (OSError, ValueError) as exc:  # a missing file, a folder, bytes that are not UTF-8
        raise OboyuError(f"cannot read {path}: {exc}") from exc
    return rows


def p95(values: list[float]) -> float:
    """The 95th percentile, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def read_queries(path: Path) -> list[Query]:
    queries: list[Query] = []
    for number, row in _numbered_rows(path):
        relevant = row.get("relevant_doc_ids") or [row.get("relevant_doc_id")]
        if not isinstance(row.get("query"), str) or not row["query"] or not isinstance(relevant, list) or not all(relevant):
            raise OboyuError(f"{path}, line {number}: each query needs `query` and `relevant_doc_id(s)`")
        queries.append(Query(str(row.get("id", len(queries))), row["query"], frozenset(map(str, relevant))))
    if not queries:  # figures over no question would read as measured
        raise OboyuError(f"{path}: no queries (JSON lines with `query` and `relevant_doc_id(s)`)")
    return queries


def doc_file_name(doc_id: str) -> str:
    return quote(doc_id, safe="") + ".txt"


def doc_id_of(path: str) -> str:
    return unquote(Path(path).name[: -len(".txt")])


def _documents(docs_path: Path) -> dict[str, str]:
    """Each document's text by its id, in order; a line without `id` and `text`, an id given twice
    (the second would overwrite the first) or no document at all is an error that names the line."""
    texts: dict[str, str] = {}
    first_at: dict[str, int] = {}
    for number, doc in _numbered_rows(docs_path):
        if doc.get("id") in (None, "") or not isinstance(doc.get("text"), str):
            raise OboyuError(f"{docs_path}, line {number}: each document needs `id` and `text` (a string)")
        if (doc_id := str(doc["id"])) in first_at:
            raise OboyuError(f"{docs_path}, line {number}: id {doc_id!r} again (first on line {first_at[doc_id]})")
        first_at[doc_id], texts[doc_id] = number, doc["text"]
    if not texts:
        raise OboyuError(f"{docs_path}: no documents (JSON lines with `id` and `text`)")
    return texts


def document_ids(docs_path: Path) -> list[str]:
    """The documents' ids, in order (`_documents` checks them)."""
    return list(_documents(docs_path))


def write_corpus(docs_path: Path, folder: Path) -> int:
    """Write each document's `text` as a file in `folder` (none when a line is wrong); returns the count."""
    texts = _documents(docs_path)  # read once, checked whole before anything is written
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.txt"):  # another corpus's, written here before: not indexed beside these
        if doc_id_of(stale.name) not in texts:
            stale.unlink()
    for doc_id, text in texts.items():
        (folder / doc_file_name(doc_id)).write_text(text, encoding="utf-8")
    return len(texts)


def index_corpus(store: Store, embedder: Embedder, folder: Path, progress: ProgressLine) -> IndexStats:
    return Indexer(store, embedder, progress=progress).index([folder])


def read_absent(path: Path) -> list[str]:
    """Questions the documents cannot answer (JSON lines with `query`)."""
    questions = []
    for number, row in _numbered_rows(path):
        if not isinstance(row.get("query"), str) or not row["query"]:
            raise OboyuError(f"{path}, line {number}: each line needs `query` (a string)")
        questions.append(str(row["query"]))
    if not questions:
        raise OboyuError(f"{path}: no questions (JSON lines with `query`)")
    return questions


@dataclass(frozen=True)
class QueryMetrics:
    recall_at_1: float
    recall_at_10: float
    mrr_at_10: float
    ndcg_at_10: float


def ranking_metrics(right: list[bool], relevant: int) -> QueryMetrics:
    """One query's metrics from whether each of its ranked results (best first) is right, given
    how many right answers there are (binary gains; each right file counted once)."""
    found = [i for i, hit in enumerate(right[:CUTOFF], start=1) if hit]
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(relevant, CUTOFF) + 1))
    return QueryMetrics(1.0 if found and found[0] == 1 else 0.0, len(found) / relevant,
                        1 / found[0] if found else 0.0, sum(1 / math.log2(i + 1) for i in found) / ideal)


def evaluate(store: Store, embedder: Embedder | None, queries: list[Query], modes: list[Mode],
             absent: list[str] | None = None) -> list[ModeScores]:
    """Metrics per mode; the index is held in memory, as a long-lived process would (the store
    is open read-only throughout, so nothing can change it between queries). With absent
    questions, also how often each mode rightly says "no good match" to them."""
    resident = ResidentIndex().refresh(store)
    out = []
    for mode in modes:
        hits1 = hits10 = shown10 = 0.0
        mrr = ndcg = 0.0
        latencies = []
        no_match = 0
        for q in queries:
            started = time.perf_counter()
            results = search(resident, embedder, q.text, CUTOFF, mode=mode)
            latencies.append(time.perf_counter() - started)
            no_match += all(r.weak for r in results)
            ranked = [doc_id_of(r.path) for r in results]
            shown10 += len({doc for doc, r in zip(ranked, results) if doc in q.relevant and not r.weak}) / len(q.relevant)
            one = ranking_metrics([doc in q.relevant for doc in ranked], len(q.relevant))
            hits1, hits10, mrr, ndcg = hits1 + one.recall_at_1, hits10 + one.recall_at_10, mrr + one.mrr_at_10, ndcg + one.ndcg_at_10
        n = len(queries) or 1
        caught = None
        if absent is not None:
            caught = sum(all(r.weak for r in search(resident, embedder, q, CUTOFF, mode=mode)) for q in absent) / (len(absent) or 1)
        out.append(
            ModeScores(
                mode, len(queries), hits1 / n, hits10 / n, mrr / n, ndcg / n,
                statistics.median(latencies) * 1000 if latencies else 0.0,
                p95(latencies) * 1000 if latencies else 0.0,
                no_match / n, shown10 / n, caught,
            )
        )
    return out
