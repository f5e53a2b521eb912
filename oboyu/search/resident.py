"""The index's vectors and keyword postings held in memory, for long-lived processes (the MCP
server, `oboyu eval`, a TUI): each query then costs a matrix product and a few array sums
instead of two table scans. Reloaded when the index's generation (bumped by every write) moves.
"""

from __future__ import annotations

import duckdb
import numpy as np

from oboyu.index.store import BM25_B, BM25_K1, SearchHit, Store


class ResidentIndex:
    def __init__(self) -> None:
        self.generation: str | None = None
        self.model_id: str | None = None  # the model the loaded vectors came from
        self.chunk_ids = np.array([], dtype=object)
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # term -> (chunk rows, tf)
        self.length_norm = np.zeros(0, dtype=np.float32)  # k1 * (1 - b + b * len / avglen)
        self.hits: dict[str, SearchHit] = {}  # display fields of every chunk
        self.leads = np.zeros(0, dtype=bool)  # rows that are their file's first chunk
        self._last_scores: tuple[bytes, str | None, np.ndarray] | None = None

    def refresh(self, store: Store) -> ResidentIndex:
        generation = store.get_meta("generation") or ""
        if generation != self.generation:
            self._load(store)
            self.generation = generation
        return self

    def _load(self, store: Store) -> None:
        self.model_id = store.get_meta("model_id")
        self._last_scores = None
        self.hits = store.all_chunks()
        con = store.con
        # rows are chunks in chunk-id order; the joins to them run in SQL, so that millions of
        # postings come back as three numeric arrays rather than as Python strings
        rows = "(SELECT chunk_id, (row_number() OVER (ORDER BY chunk_id) - 1)::INTEGER AS row FROM embeddings)"
        embeddings = con.execute("SELECT chunk_id, vector FROM embeddings ORDER BY chunk_id").fetchnumpy()
        self.chunk_ids = embeddings["chunk_id"].astype(object)
        total = len(self.chunk_ids)
        self.vectors = np.stack(embeddings["vector"]).astype(np.float32) if total else np.zeros((0, 0), np.float32)
        del embeddings
        self.leads = np.zeros(total, dtype=bool)
        self.leads[_ints(con, f"SELECT r.row FROM chunks c JOIN {rows} r ON r.chunk_id = c.id WHERE c.ordinal = 0")] = True
        lengths = np.zeros(total, dtype=np.float32)
        found = con.execute(f"SELECT r.row, k.length::FLOAT AS length FROM kw_lengths k JOIN {rows} r USING (chunk_id)").fetchnumpy()
        lengths[found["row"].astype(np.int64)] = found["length"]
        average = lengths.mean() if total and lengths.mean() > 0 else 1.0
        self.length_norm = (BM25_K1 * (1 - BM25_B + BM25_B * lengths / average)).astype(np.float32)
        terms = con.execute("SELECT DISTINCT term FROM kw_postings ORDER BY term").fetchnumpy()["term"]
        numbered = "(SELECT term, (row_number() OVER (ORDER BY term) - 1)::INTEGER AS t FROM (SELECT DISTINCT term FROM kw_postings))"
        postings = con.execute(
            f"SELECT n.t, r.row, p.tf::FLOAT AS tf FROM kw_postings p JOIN {rows} r USING (chunk_id) JOIN {numbered} n USING (term)"
        ).fetchnumpy()
        order = np.argsort(postings["t"], kind="stable")
        term_of, row_of, tf_of = postings["t"][order], postings["row"][order].astype(np.int64), postings["tf"][order]
        del postings, order
        self.postings = {}
        if len(term_of):
            starts = np.flatnonzero(np.r_[True, term_of[1:] != term_of[:-1]])
            ends = np.r_[starts[1:], len(term_of)]
            for start, end in zip(starts, ends):
                self.postings[terms[term_of[start]]] = (row_of[start:end], tf_of[start:end])

    def chunks_by_id(self, ids: list[str]) -> dict[str, SearchHit]:
        return {cid: self.hits[cid] for cid in ids if cid in self.hits}

    def files_of_chunks(self, ids: list[str]) -> dict[str, str]:
        return {cid: self.hits[cid].path for cid in ids if cid in self.hits}

    def vector_scores(self, query_vector: np.ndarray, n: int, leads_only: bool = False) -> list[tuple[str, float]]:
        if not len(self.chunk_ids):
            return []
        key = query_vector.astype(np.float32).tobytes()
        last = self._last_scores  # hybrid asks twice per query (passages, then leads): one product
        if last is None or last[0] != key or last[1] != self.generation:
            last = self._last_scores = (key, self.generation, self.vectors @ query_vector.astype(np.float32))
        return self._top(last[2], n, self.leads if leads_only else None)

    def keyword_scores(self, terms: list[str], n: int) -> list[tuple[str, float]]:
        total = len(self.chunk_ids)
        scores = np.zeros(total, dtype=np.float32)
        hit = np.zeros(total, dtype=bool)
        for term in set(terms):
            if term not in self.postings:
                continue
            rows, tf = self.postings[term]
            idf = np.log(1 + (total - len(rows) + 0.5) / (len(rows) + 0.5))
            scores[rows] += idf * tf * (BM25_K1 + 1) / (tf + self.length_norm[rows])
            hit[rows] = True
        return self._top(scores, n, hit)

    def _top(self, scores: np.ndarray, n: int, eligible: np.ndarray | None) -> list[tuple[str, float]]:
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


def _ints(con: duckdb.DuckDBPyConnection, sql: str) -> np.ndarray:
    """The first column of a query, as row numbers."""
    result = con.execute(sql).fetchnumpy()
    return next(iter(result.values())).astype(np.int64)
