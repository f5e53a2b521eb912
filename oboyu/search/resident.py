"""The index's vectors and keyword postings held in memory, for long-lived processes (the MCP
server, `oboyu eval`, the app): each query then costs a matrix product and a few array sums
instead of two table scans. Reloaded when the index's generation (bumped by every write) moves.
A `Ranker` for unfiltered searches; filtered ones rank in SQL (`SqlRanker`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from oboyu.errors import OboyuError
from oboyu.index.records import Root, SearchHit
from oboyu.index.store import Store
from oboyu.search.filters import Filters
from oboyu.search.rankers import BM25_B, BM25_K1, Scores, SqlRanker, idf


class ResidentIndex:
    def __init__(self) -> None:
        self.generation: str | None = None
        self._model_id: str | None = None  # the model the loaded vectors came from
        self.chunk_ids = np.array([], dtype=object)
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self.has_vector = np.zeros(0, dtype=bool)  # rows still waiting for the meaning pass: False
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # term -> (chunk rows, tf)
        self.length_norm = np.zeros(0, dtype=np.float32)  # k1 * (1 - b + b * len / avglen)
        self.hits: dict[str, SearchHit] = {}  # display fields of every chunk
        self.leads = np.zeros(0, dtype=bool)  # rows that are their file's first chunk
        self.roots: dict[str, str] = {}  # path of each indexed file -> its root
        self.folders: dict[str, Root] = {}  # each root's path -> the root (its name and description)
        self._last_scores: tuple[bytes, str | None, np.ndarray] | None = None

    def refresh(self, store: Store) -> ResidentIndex:
        """Reload from the store when it has changed since the last load; the roots (a few rows:
        a description changes without a new generation) are read every time."""
        if (store.get_meta("generation") or "") != self.generation:
            self._load(SqlRanker(store))
        self.folders = {root.path: root for root in store.roots()}
        return self

    def _load(self, ranker: SqlRanker) -> None:
        snapshot = ranker.snapshot()
        self._last_scores = None
        self._model_id = snapshot.model_id
        self.hits, self.roots = snapshot.hits, snapshot.roots
        self.chunk_ids, self.vectors, self.leads = snapshot.chunk_ids, snapshot.vectors, snapshot.leads
        self.has_vector = snapshot.embedded
        lengths = snapshot.lengths
        average = lengths.mean() if len(lengths) and lengths.mean() > 0 else 1.0
        self.length_norm = (BM25_K1 * (1 - BM25_B + BM25_B * lengths / average)).astype(np.float32)
        postings = snapshot.postings
        order = np.argsort(postings["t"], kind="stable")
        term_of, row_of, tf_of = postings["t"][order], postings["row"][order].astype(np.int64), postings["tf"][order]
        del postings, order
        self.postings = {}
        if len(term_of):
            starts = np.flatnonzero(np.r_[True, term_of[1:] != term_of[:-1]])
            ends = np.r_[starts[1:], len(term_of)]
            for start, end in zip(starts, ends):
                self.postings[snapshot.terms[term_of[start]]] = (row_of[start:end], tf_of[start:end])
        self.generation = snapshot.generation

    # --- Ranker ---------------------------------------------------------------------------------

    def model_id(self) -> str | None:
        return self._model_id

    def chunks_by_id(self, ids: list[str]) -> dict[str, SearchHit]:
        return {cid: self.hits[cid] for cid in ids if cid in self.hits}

    def files_of_chunks(self, ids: list[str]) -> dict[str, str]:
        return {cid: self.hits[cid].path for cid in ids if cid in self.hits}

    def folders_of(self, paths: list[str]) -> dict[str, Root]:
        return {path: self.folders[self.roots[path]] for path in paths if self.roots.get(path) in self.folders}

    def vector_scores(self, query_vector: np.ndarray, n: int, filters: Filters | None = None,
                      leads_only: bool = False) -> Scores:
        _unfiltered(filters)
        if not self.has_vector.any():
            return []
        complete = bool(self.has_vector.all())  # the usual case: no mask to apply
        if leads_only:
            return self._top(self._cosines(query_vector), n, self.leads if complete else self.has_vector & self.leads)
        return self._top(self._cosines(query_vector), n, None if complete else self.has_vector)

    def cosine_spread(self, query_vector: np.ndarray) -> tuple[float, float, int]:
        if not self.has_vector.any():
            return 0.0, 0.0, 0
        cosines = self._cosines(query_vector)[self.has_vector]
        return float(cosines.mean()), float(cosines.std()), len(cosines)

    def embedded(self, ids: list[str]) -> set[str]:
        return {cid for cid, row in self._rows(ids).items() if self.has_vector[row]}

    def _cosines(self, query_vector: np.ndarray) -> np.ndarray:
        """The query's cosine to every passage; hybrid asks several times a query: one product."""
        key = query_vector.astype(np.float32).tobytes()
        last = self._last_scores
        if last is None or last[0] != key or last[1] != self.generation:
            last = self._last_scores = (key, self.generation, self.vectors @ query_vector.astype(np.float32))
        return last[2]

    def keyword_scores(self, terms: list[str], n: int, filters: Filters | None = None,
                       weights: Mapping[str, float] | None = None, leads_only: bool = False) -> Scores:
        _unfiltered(filters)
        total = len(self.chunk_ids)
        scores = np.zeros(total, dtype=np.float32)
        hit = np.zeros(total, dtype=bool)
        for term in sorted(set(terms)):  # one order: float32 sums in another differ in the last bit, and ties flip
            if term not in self.postings:
                continue
            rows, tf = self.postings[term]
            weight = (weights or {}).get(term, 1.0)
            scores[rows] += weight * idf(total, len(rows)) * tf * (BM25_K1 + 1) / (tf + self.length_norm[rows])
            hit[rows] = True
        return self._top(scores, n, hit & self.leads if leads_only else hit)

    def term_rarity(self, terms: list[str]) -> dict[str, float]:
        total = len(self.chunk_ids)
        return {t: idf(total, len(self.postings[t][0]) if t in self.postings else 0) for t in sorted(set(terms))}

    def _rows(self, ids: list[str]) -> dict[str, int]:
        """The rows of these chunks (in chunk-id order, as the snapshot sorted them)."""
        found: list[int] = np.searchsorted(self.chunk_ids, ids).tolist() if len(self.chunk_ids) else []
        return {cid: int(row) for cid, row in zip(ids, found) if row < len(self.chunk_ids) and self.chunk_ids[row] == cid}

    def terms_in(self, ids: list[str], terms: list[str]) -> dict[str, set[str]]:
        rows = self._rows(ids)
        held: dict[str, set[str]] = {cid: set() for cid in ids}
        for term in set(terms):
            if term in self.postings:
                inside = set(self.postings[term][0][np.isin(self.postings[term][0], list(rows.values()))].tolist())
                for cid, row in rows.items():
                    if row in inside:
                        held[cid].add(term)
        return held

    def _top(self, scores: np.ndarray, n: int, eligible: np.ndarray | None) -> Scores:
        """The n best rows among the eligible ones (all when None)."""
        if eligible is None:
            candidates = np.argpartition(-scores, n - 1)[:n] if len(scores) > n else np.arange(len(scores))
        else:
            candidates = np.flatnonzero(eligible)
            if len(candidates) > n:
                candidates = candidates[np.argpartition(-scores[candidates], n - 1)[:n]]
        if not len(candidates):
            return []
        # best first; ties by chunk id, as the SQL legs order them
        order = sorted(candidates, key=lambda i: (-float(scores[i]), self.chunk_ids[i]))
        return [(self.chunk_ids[i], float(scores[i])) for i in order]


def _unfiltered(filters: Filters | None) -> None:
    if filters is not None and not filters.is_empty():
        raise OboyuError("a filtered search ranks in the index file (SqlRanker), not from memory")
