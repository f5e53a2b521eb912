"""The index held for long-lived processes (the MCP server, `oboyu eval`, the app, `query --stdin`,
`oboyu serve`): its arrays (`oboyu.index.arrays`), memory-mapped from the folder beside the index
file, made once per index generation. A query then costs an int8 scan with exact rescoring of a
few hundred rows, a few array sums for the keyword legs, and reads of the display fields it shows;
no Python object is held a passage. Reopened when the index's generation (bumped by
every write) moves. A `Ranker` for unfiltered searches; filtered ones rank in SQL (`SqlRanker`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from oboyu.errors import OboyuError
from oboyu.index.arrays import IndexArrays
from oboyu.index.arrays_ann import CANDIDATES as ANN_CANDIDATES
from oboyu.index.arrays_ann import Neighbours
from oboyu.index.arrays_cache import arrays_of, last_made_arrays, made_arrays
from oboyu.index.records import Root, SearchHit
from oboyu.index.store import Store
from oboyu.search.filters import Filters
from oboyu.search.int8_scan import CodeScan, candidates
from oboyu.search.rankers import BM25_B, BM25_K1, Scores, idf


class ResidentIndex:
    def __init__(self) -> None:
        self.generation: str | None = None
        self.arrays: IndexArrays | None = None
        self._scan: CodeScan | None = None
        self._neighbours: Neighbours | None = None  # past the line (arrays_ann): the graph's candidates
        self.has_vector = np.zeros(0, dtype=bool)  # rows still waiting for the meaning pass: False
        self._leads_embedded = np.zeros(0, dtype=bool)
        self._embedded = 0
        self.length_norm = np.zeros(0, dtype=np.float32)  # k1 * (1 - b + b * len / avglen)
        self.folders: dict[str, Root] = {}  # each root's path -> the root (its name and description)
        self._last_scores: tuple[bytes, str | None, tuple[np.ndarray, np.ndarray]] | None = None
        self._last_bm25: tuple[tuple, tuple[np.ndarray, np.ndarray]] | None = None

    def refresh(self, store: Store, made: IndexArrays | None = None) -> ResidentIndex:
        """Reopen when the store has changed since the last load (from `made`, its arrays when the
        caller has opened them already); the roots (a few rows: a description changes without a
        new generation) are read every time."""
        if (store.get_meta("generation") or "") != self.generation:
            self._open(made or arrays_of(store))
        self.folders = {root.path: root for root in store.roots()}
        return self

    def open_last(self, store: Store) -> None:
        """Open an older generation's arrays (`last_made_arrays`), if kept, when nothing is open:
        the last loaded state, answered from while the current generation's are made."""
        arrays = last_made_arrays(store) if self.arrays is None else None
        if arrays is not None:
            self._open(arrays)
            self.folders = {root.path: root for root in store.roots()}

    @classmethod
    def if_made(cls, store: Store) -> ResidentIndex | None:
        """The index from the arrays of the store's generation when they are made already (`oboyu
        index` makes them at the end of a run, a long-lived process when it opens the index);
        None otherwise: a one-shot query ranks in SQL rather than make them."""
        arrays = made_arrays(store)
        if arrays is None:
            return None
        resident = cls()
        resident._open(arrays)
        resident.folders = {root.path: root for root in store.roots()}
        return resident

    def _open(self, arrays: IndexArrays) -> None:
        self._last_scores = self._last_bm25 = None
        self.arrays = arrays
        self._scan = None  # made by the first vector search: a keyword search needs no onnxruntime
        self._neighbours = Neighbours.of(arrays.folder)
        self.has_vector = np.asarray(arrays.embedded)
        self._embedded = int(self.has_vector.sum())  # counted once, not at each query's two scans
        self._leads_embedded = self.has_vector & arrays.leads
        lengths = np.asarray(arrays.lengths)
        average = lengths.mean() if len(lengths) and lengths.mean() > 0 else 1.0
        self.length_norm = (BM25_K1 * (1 - BM25_B + BM25_B * lengths / average)).astype(np.float32)
        self.generation = arrays.generation

    @property
    def roots(self) -> dict[str, str]:
        """Path of each indexed file -> its root."""
        return self.arrays.roots if self.arrays else {}

    @property
    def _index(self) -> IndexArrays:
        if self.arrays is None:
            raise OboyuError("the index is not open yet")
        return self.arrays

    # --- Ranker ---------------------------------------------------------------------------------

    @property
    def embedded_rows(self) -> int:
        """Rows with their vector (counted once, when the arrays were opened)."""
        return self._embedded

    def model_id(self) -> str | None:
        return self.arrays.model_id if self.arrays else None

    def chunks_by_id(self, ids: list[str]) -> dict[str, SearchHit]:
        return {cid: self._index.hit(row) for cid, row in self._index.rows_of(ids).items()}

    def files_of_chunks(self, ids: list[str]) -> dict[str, str]:
        return {cid: self._index.path_of(row) for cid, row in self._index.rows_of(ids).items()}

    def folders_of(self, paths: list[str]) -> dict[str, Root]:
        return {path: self.folders[self.roots[path]] for path in paths if self.roots.get(path) in self.folders}

    def vector_scores(self, query_vector: np.ndarray, n: int, filters: Filters | None = None,
                      leads_only: bool = False) -> Scores:
        """The n best rows by cosine: those the int8 scan's bound cannot rule out, or past the
        line the graph's best candidates, scored exactly."""
        _unfiltered(filters)
        if not self._embedded:
            return []
        if self._neighbours is not None:  # its graphs hold the embedded rows only: no mask to apply
            rows = self._neighbours.rows(query_vector, max(n, ANN_CANDIDATES), leads_only)
        else:
            score, bound = self._approximate(query_vector)
            eligible: np.ndarray | None = self._leads_embedded if leads_only else self.has_vector
            if not leads_only and self._embedded == len(self.has_vector):
                eligible = None  # the usual case: no mask to apply
            rows = candidates(score, bound, eligible, n)
        exact = self._index.vector_rows(rows) @ query_vector.astype(np.float32)
        return self._top(rows, exact.astype(np.float32), n)

    def cosine_spread(self, query_vector: np.ndarray) -> tuple[float, float, int]:
        """From the embedded vectors' mean and second moment, kept with the arrays: no scan."""
        count = self._embedded
        if not count:
            return 0.0, 0.0, 0
        query = query_vector.astype(np.float64)
        mean = float(query @ self._index.mean)
        variance = float(query @ self._index.moment @ query) - mean * mean
        return mean, max(variance, 0.0) ** 0.5, count

    def cosines(self, ids: list[str], query_vector: np.ndarray) -> dict[str, float]:
        found = [(cid, row) for cid, row in self._index.rows_of(ids).items() if self.has_vector[row]]
        if not found:
            return {}
        exact = self._index.vector_rows(np.array([row for _, row in found])) @ query_vector.astype(np.float32)
        return {cid: float(value) for (cid, _), value in zip(found, exact)}

    def _approximate(self, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The int8 scan of the query against every row; hybrid asks twice a query: one scan."""
        if self._scan is None:
            self._scan = CodeScan(self._index, min(os.cpu_count() or 1, 4))
        key = query_vector.astype(np.float32).tobytes()
        last = self._last_scores
        if last is None or last[0] != key or last[1] != self.generation:
            last = self._last_scores = (key, self.generation, self._scan.approximate(query_vector))
        return last[2]

    def keyword_scores(self, terms: list[str], n: int, filters: Filters | None = None,
                       weights: Mapping[str, float] | None = None, leads_only: bool = False) -> Scores:
        _unfiltered(filters)
        scores, hit = self._bm25(terms, weights)
        eligible = np.flatnonzero(hit & self._index.leads if leads_only else hit)
        return self._top(eligible, scores[eligible], n)

    def _bm25(self, terms: list[str], weights: Mapping[str, float] | None) -> tuple[np.ndarray, np.ndarray]:
        """Every row's BM25 score and whether it holds a term; hybrid asks twice a query (its
        passages and its files' first passages): one sum."""
        key = (tuple(sorted(set(terms))), tuple(sorted((weights or {}).items())), self.generation)
        if self._last_bm25 is not None and self._last_bm25[0] == key:
            return self._last_bm25[1]
        index = self._index
        total = index.rows
        scores = np.zeros(total, dtype=np.float32)
        hit = np.zeros(total, dtype=bool)
        for term in key[0]:  # one order: float32 sums in another differ in the last bit, and ties flip
            found = index.postings(term)
            if found is None:
                continue
            rows, tf = found
            weight = (weights or {}).get(term, 1.0)
            scores[rows] += weight * idf(total, len(rows)) * tf * (BM25_K1 + 1) / (tf + self.length_norm[rows])
            hit[rows] = True
        self._last_bm25 = (key, (scores, hit))
        return scores, hit

    def term_rarity(self, terms: list[str]) -> dict[str, float]:
        index = self._index
        return {t: idf(index.rows, index.document_frequency(t)) for t in sorted(set(terms))}

    def terms_in(self, ids: list[str], terms: list[str]) -> dict[str, set[str]]:
        rows = self._index.rows_of(ids)
        held: dict[str, set[str]] = {cid: set() for cid in ids}
        wanted = np.array(sorted(rows.values()), dtype=np.int64)
        for term in set(terms):
            found = self._index.postings(term)
            if found is None or not len(found[0]) or not len(wanted):  # a term whose last passage went: none
                continue
            holding = found[0]  # ascending rows: looked up, not scanned
            at = np.minimum(np.searchsorted(holding, wanted), len(holding) - 1)
            inside = set(wanted[holding[at] == wanted].tolist())
            for cid, row in rows.items():
                if row in inside:
                    held[cid].add(term)
        return held

    def _top(self, rows: np.ndarray, scores: np.ndarray, n: int) -> Scores:
        """The n best of these rows (their scores given in the same order), best first; ties by
        chunk id, as the SQL legs order them."""
        if len(rows) > n:
            picked = np.argpartition(-scores, n - 1)[:n]
            rows, scores = rows[picked], scores[picked]
        names, values = np.asarray(self._index.ids[rows]).tolist(), scores.tolist()  # one read, not one a row
        order = sorted(range(len(names)), key=lambda i: (-values[i], names[i]))
        return [(names[i], values[i]) for i in order]


def _unfiltered(filters: Filters | None) -> None:
    if filters is not None and not filters.is_empty():
        raise OboyuError("a filtered search ranks in the index file (SqlRanker), not from memory")
