"""Ranking chunks for a query, behind one interface: `Ranker`. `SqlRanker` ranks inside the
DuckDB file (every filter applies); `ResidentIndex` (oboyu.search.resident) holds the vectors and
postings as memory-mapped arrays for long-lived processes and ranks with NumPy.

Both give the same scores: cosine (vectors are L2-normalised, so the inner product) and BM25 over
the keyword postings (any query term may match), best first, ties by chunk id.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from oboyu.errors import OboyuError
from oboyu.index.columns import registered, sql_strings
from oboyu.index.records import Root, SearchHit
from oboyu.index.store import Store
from oboyu.paths import is_within
from oboyu.search.filters import Filters

BM25_K1, BM25_B = 0.9, 0.4
LITERAL_IDS = 20_000
_MATCHED: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # (index, generation, filters) -> (kept, left out)

Scores = list[tuple[str, float]]  # (chunk id, score), best first


# BM25 in SQL, as both passes read it: the index's statistics, the query's terms with their
# weights (bound first: term, weight, ...), then the terms again for their postings
BM25_SUM = (f"sum(w.weight * ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5)) * p.tf * ({BM25_K1} + 1)"
            f" / (p.tf + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * l.length / stats.avgdl)))")
BM25_FROM = "matched p JOIN df USING (term) JOIN wanted w USING (term) JOIN kw_lengths l ON l.chunk_id = p.chunk_id"


def _bm25_inputs(terms: int, materialized: str = "") -> str:
    weighed, placeholders = ", ".join("(?, ?)" for _ in range(terms)), ", ".join("?" for _ in range(terms))
    return (f"WITH stats AS (SELECT count(*) AS n, avg(length) AS avgdl FROM kw_lengths), "
            f"wanted(term, weight) AS (VALUES {weighed}), "
            f"matched AS {materialized} (SELECT chunk_id, term, tf FROM kw_postings WHERE term IN ({placeholders})), "
            f"df AS {materialized} (SELECT term, count(*) AS df FROM matched GROUP BY term)")


def idf(total: int, df: int) -> float:
    """BM25's inverse document frequency, as both rankers compute it."""
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


class Ranker(Protocol):
    def model_id(self) -> str | None:
        """The model the ranked vectors came from (None: an empty index)."""

    def vector_scores(self, query_vector: np.ndarray, n: int, filters: Filters | None = None,
                      leads_only: bool = False) -> Scores:
        """The n best chunks by cosine among those passing the filters (with `leads_only`, each
        file's first chunk only)."""

    def keyword_scores(self, terms: list[str], n: int, filters: Filters | None = None,
                       weights: Mapping[str, float] | None = None, leads_only: bool = False) -> Scores:
        """The n best chunks by BM25 over the query's terms, each term's part multiplied by its
        weight (1 when not given); with `leads_only`, each file's first chunk only."""

    def chunks_by_id(self, ids: list[str]) -> dict[str, SearchHit]:
        """Display fields of these chunks."""

    def cosine_spread(self, query_vector: np.ndarray) -> tuple[float, float, int]:
        """Mean and standard deviation of the query's cosine to the index's passages, and how many
        they were: how alike an arbitrary passage looks."""

    def term_rarity(self, terms: list[str]) -> dict[str, float]:
        """Each term's BM25 idf in the whole index (a term no chunk holds: the highest)."""

    def terms_in(self, ids: list[str], terms: list[str]) -> dict[str, set[str]]:
        """Which of the terms each chunk holds (its title and heading count)."""

    def files_of_chunks(self, ids: list[str]) -> dict[str, str]:
        """chunk id -> path of its file."""

    def folders_of(self, paths: list[str]) -> dict[str, Root]:
        """Indexed file (the index's path) -> the indexed folder it belongs to."""

    def cosines(self, ids: list[str], query_vector: np.ndarray) -> dict[str, float]:
        """The query's cosine to each of these chunks that has its vector (an index being built
        gets its keyword terms first, its vectors after)."""


@dataclass(frozen=True)
class VectorPass:
    """One unfiltered scan of every vector for a query: its n best passages, its n best first
    passages, and the (mean, standard deviation, count) of its cosines."""

    key: bytes  # the query vector's float32 bytes
    generation: bytes  # the index's, when read
    n: int
    best: Scores
    leads: Scores
    spread: tuple[float, float, int]

    def first(self, n: int) -> VectorPass:
        return VectorPass(self.key, self.generation, n, self.best[:n], self.leads[:n], self.spread)


@dataclass(frozen=True)
class KeywordPass:
    """One unfiltered BM25 pass for a query's terms (and their weights): its n best passages, its
    n best first passages, each term's document frequency and the passages counted."""

    key: tuple[tuple[str, float], ...]  # (term, weight), terms sorted
    generation: bytes  # the index's, when read
    n: int
    best: Scores
    leads: Scores
    df: dict[str, int]
    total: int

    def first(self, n: int) -> KeywordPass:
        return KeywordPass(self.key, self.generation, n, self.best[:n], self.leads[:n], self.df, self.total)


def _ranked(rows: list[tuple], kind: str) -> Scores:
    """One part of a pass's rows, best first (UNION ALL keeps no order between its parts)."""
    return sorted(((cid, float(score)) for part, cid, score in rows if part == kind), key=lambda item: (-item[1], item[0]))


# chunks from which display fields are looked up row by row (20 of them: 92 against 52 ms at
# 101,381 chunks, 470 against 76 ms at 1,013,810; below, by id: 15 against 30 ms at 14,483)
ROW_LOOKUP_FROM = 50_000


class SqlRanker:
    """Ranks in SQL over an open Store. Unfiltered, a query's legs and statistics come from one
    pass over the vectors and one over its terms' postings, kept for the other legs' calls."""

    def __init__(self, store: Store):
        self.store = store
        self.con = store.con
        self._pass: VectorPass | None = None  # the last unfiltered vector pass
        self._words: KeywordPass | None = None  # the last unfiltered keyword pass

    def model_id(self) -> str | None:
        return self.store.model_id()

    @functools.cached_property
    def _chunk_count(self) -> int:
        """Chunks in the index, read once a ranker (one search) rather than at each display-field
        fetch; it only picks how rows are read, which gives the same rows either way."""
        (chunks,) = self.con.execute("SELECT count(*) FROM chunks").fetchone() or (0,)
        return int(chunks)

    def _generation(self) -> bytes:
        """The index's generation (bumped by every write): a kept pass is of the index as it was."""
        return (self.store.get_meta("generation") or "").encode()

    def cosine_spread(self, query_vector: np.ndarray) -> tuple[float, float, int]:
        dim = int(self.store.get_meta("dimensions") or 0)
        if dim == 0:
            return 0.0, 0.0, 0
        kept = self._pass
        if kept is not None and kept.key == query_vector.astype(np.float32).tobytes() and kept.generation == self._generation():
            return kept.spread
        # over every passage: the scan costs what a sample's would (DuckDB reads all rows to draw one)
        mean, std, count = self.con.execute(
            f"SELECT avg(s), stddev_pop(s), count(*) FROM (SELECT array_inner_product(vector, {_vector_literal(query_vector, dim)}) AS s "
            "FROM embeddings)"
        ).fetchone() or (0.0, 0.0, 0)
        return float(mean or 0.0), float(std or 0.0), int(count)

    def vector_scores(self, query_vector: np.ndarray, n: int, filters: Filters | None = None,
                      leads_only: bool = False) -> Scores:
        dim = int(self.store.get_meta("dimensions") or 0)
        if dim == 0:
            return []
        if query_vector.shape[-1] != dim:
            raise OboyuError(f"query vector has {query_vector.shape[-1]} dimensions, the index {dim}")
        if filters is None or filters.is_empty():
            found = self._vector_pass(query_vector, n, dim)
            return found.leads if leads_only else found.best
        literal = _vector_literal(query_vector, dim)
        with self._scope(filters, "e.chunk_id", leads_only) as (join, where, params):
            return self.con.execute(
                f"""
                SELECT e.chunk_id, array_inner_product(e.vector, {literal}) AS score
                FROM embeddings e {join} WHERE {where}
                ORDER BY score DESC, e.chunk_id LIMIT ?
                """,
                [*params, int(n)],
            ).fetchall()

    def _vector_pass(self, query_vector: np.ndarray, n: int, dim: int) -> VectorPass:
        """Every passage's cosine computed once: the n best, the n best first passages of their
        files, and the spread (hybrid asked for them in three scans of every vector: 2.4 s of a
        warm query on a million passages)."""
        key, generation = query_vector.astype(np.float32).tobytes(), self._generation()
        kept = self._pass
        if kept is not None and kept.key == key and kept.generation == generation and kept.n >= n:
            return kept.first(n)
        literal = _vector_literal(query_vector, dim)
        rows = self.con.execute(
            f"""
            WITH s AS MATERIALIZED (SELECT e.chunk_id, array_inner_product(e.vector, {literal}) AS score FROM embeddings e)
            SELECT * FROM (SELECT 'best', chunk_id, score FROM s ORDER BY score DESC, chunk_id LIMIT {int(n)})
            UNION ALL SELECT * FROM (SELECT 'lead', s.chunk_id, s.score FROM s JOIN chunks c ON c.id = s.chunk_id
                                     WHERE c.ordinal = 0 ORDER BY s.score DESC, s.chunk_id LIMIT {int(n)})
            UNION ALL SELECT 'mean', NULL, avg(score) FROM s
            UNION ALL SELECT 'std', NULL, stddev_pop(score) FROM s
            UNION ALL SELECT 'count', NULL, count(*) FROM s
            """
        ).fetchall()
        value = {kind: score for kind, _, score in rows if kind in ("mean", "std", "count")}
        spread = (float(value["mean"] or 0.0), float(value["std"] or 0.0), int(value["count"] or 0))
        self._pass = VectorPass(key, generation, n, _ranked(rows, "best"), _ranked(rows, "lead"), spread)
        return self._pass

    def term_rarity(self, terms: list[str]) -> dict[str, float]:
        terms = sorted(set(terms))
        if not terms:
            return {}
        words = self._words
        if words is not None and set(terms) <= {t for t, _ in words.key} and words.generation == self._generation():
            # read with the keyword legs
            return {t: idf(words.total, words.df.get(t, 0)) for t in terms}
        (total,) = self.con.execute("SELECT count(*) FROM kw_lengths").fetchone() or (0,)
        placeholders = ", ".join("?" for _ in terms)
        found = dict(self.con.execute(
            f"SELECT term, count(*) FROM kw_postings WHERE term IN ({placeholders}) GROUP BY term", terms
        ).fetchall())
        return {t: idf(total, found.get(t, 0)) for t in terms}

    def terms_in(self, ids: list[str], terms: list[str]) -> dict[str, set[str]]:
        held: dict[str, set[str]] = {cid: set() for cid in ids}
        if not ids or not terms:
            return held
        placeholders = ", ".join("?" for _ in set(terms))
        for cid, term in self.con.execute(
            f"SELECT chunk_id, term FROM kw_postings WHERE chunk_id IN ({sql_strings(ids)}) AND term IN ({placeholders})",
            sorted(set(terms)),
        ).fetchall():
            held[cid].add(term)
        return held

    def keyword_scores(self, terms: list[str], n: int, filters: Filters | None = None,
                       weights: Mapping[str, float] | None = None, leads_only: bool = False) -> Scores:
        terms = sorted(set(terms))
        if not terms:
            return []
        if filters is None or filters.is_empty():
            found = self._keyword_pass(terms, n, weights or {})
            return found.leads if leads_only else found.best
        weight_params = [value for t in terms for value in (t, float((weights or {}).get(t, 1.0)))]
        with self._scope(filters, "p.chunk_id", leads_only) as (join, where, params):
            return self.con.execute(
                f"""
                {_bm25_inputs(len(terms))}
                SELECT p.chunk_id, {BM25_SUM} AS score
                FROM {BM25_FROM} {join}, stats
                WHERE {where}
                GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT ?
                """,
                [*weight_params, *terms, *params, int(n)],
            ).fetchall()

    def _keyword_pass(self, terms: list[str], n: int, weights: Mapping[str, float]) -> KeywordPass:
        """Every passage's BM25 computed once (terms sorted and distinct): the n best, the n best
        first passages of their files, and each term's document frequency (hybrid read the query
        terms' postings three times, for both legs and the terms' rarity)."""
        key, generation = tuple((t, float(weights.get(t, 1.0))) for t in terms), self._generation()
        kept = self._words
        if kept is not None and kept.key == key and kept.generation == generation and kept.n >= n:
            return kept.first(n)
        rows = self.con.execute(
            f"""
            {_bm25_inputs(len(terms), "MATERIALIZED")},
            scored AS MATERIALIZED (SELECT p.chunk_id, {BM25_SUM} AS score FROM {BM25_FROM}, stats GROUP BY p.chunk_id)
            SELECT * FROM (SELECT 'best', chunk_id, score FROM scored ORDER BY score DESC, chunk_id LIMIT {int(n)})
            UNION ALL SELECT * FROM (SELECT 'lead', s.chunk_id, s.score FROM scored s JOIN chunks c ON c.id = s.chunk_id
                                     WHERE c.ordinal = 0 ORDER BY s.score DESC, s.chunk_id LIMIT {int(n)})
            UNION ALL SELECT 'df', term, df FROM df
            UNION ALL SELECT 'total', NULL, n FROM stats
            """,
            [value for pair in key for value in pair] + terms,
        ).fetchall()
        self._words = KeywordPass(key, generation, n, _ranked(rows, "best"), _ranked(rows, "lead"),
                                  {term: int(df) for kind, term, df in rows if kind == "df"},
                                  next(int(total) for kind, _, total in rows if kind == "total"))
        return self._words

    @contextlib.contextmanager
    def _scope(self, filters: Filters | None, chunk_column: str,
               leads_only: bool = False) -> Iterator[tuple[str, str, list]]:
        """(join, where, params) restricting a ranking to the chunks that pass the filters (with
        `leads_only`, to each file's first chunk); path patterns become a list of the documents
        they keep, or of those they leave out when that list is the shorter (nothing when they
        keep every document)."""
        filters = filters or Filters()
        where, params = filters.sql()
        lead = " AND c.ordinal = 0" if leads_only else ""
        if filters.path_globs:
            kept, left_out = self._documents_matching(filters)
            if len(left_out) and len(kept) <= len(left_out):
                where, ids = f"{where} AND d.id IN ", kept
            elif len(left_out):
                where, ids = f"{where} AND d.id NOT IN ", left_out
            else:
                ids = None
            if ids is not None and not len(ids):
                where += "(NULL)"
            elif ids is not None and len(ids) <= LITERAL_IDS:  # a literal list plans faster than an array
                where += "(" + ",".join(map(str, ids.tolist())) + ")"
            elif ids is not None:
                with registered(self.con, ids) as (name,):
                    yield self._join(chunk_column), f"{where}(SELECT column0 FROM {name}){lead}", params
                return
        if where == "TRUE":  # no filter: a lead needs only its chunk's row
            yield (f"JOIN chunks c ON c.id = {chunk_column}" if leads_only else ""), where + lead, params
        else:
            yield self._join(chunk_column), where + lead, params

    @staticmethod
    def _join(chunk_column: str) -> str:
        return f"JOIN chunks c ON c.id = {chunk_column} JOIN documents d ON d.id = c.document_id"

    def _documents_matching(self, filters: Filters) -> tuple[np.ndarray, np.ndarray]:
        """Ids of the documents the filters' path patterns keep, and of those they leave out;
        kept per index generation: the same filter over many queries (typing in the app) is
        matched once."""
        key = (str(self.store.path), self.store.get_meta("generation"), filters)
        if key not in _MATCHED:
            roots = tuple(sorted((root.path for root in self.store.roots()), key=len, reverse=True))
            kept: list[int] = []
            left_out: list[int] = []
            for doc_id, path, root in self.con.execute("SELECT id, path, root FROM documents").fetchall():
                holders = tuple(r for r in roots if is_within(path, r)) or (root,)
                (kept if filters.matches_path(path, holders, roots) else left_out).append(doc_id)
            _MATCHED[key] = (np.array(kept, dtype=np.int64), np.array(left_out, dtype=np.int64))
            while len(_MATCHED) > 16:
                _MATCHED.pop(next(iter(_MATCHED)))
        return _MATCHED[key]

    def chunks_by_id(self, ids: list[str]) -> dict[str, SearchHit]:
        if not ids:
            return {}
        by_id = f"FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id IN ({sql_strings(ids)})"
        if self._chunk_count < ROW_LOOKUP_FROM:
            return self._hits(by_id)
        # filtered by id, DuckDB reads every chunk's text before it drops all but these; the ids'
        # row numbers first, then each row alone, skips the rest of the table
        rows = [row for (row,) in self.con.execute(f"SELECT rowid FROM chunks WHERE id IN ({sql_strings(ids)})").fetchall()]
        if not rows:
            return {}
        picked = " UNION ALL ".join(f"SELECT * FROM chunks WHERE rowid = {int(row)}" for row in rows)
        return self._hits(f"FROM ({picked}) c JOIN documents d ON d.id = c.document_id")

    def cosines(self, ids: list[str], query_vector: np.ndarray) -> dict[str, float]:
        dim = self.store.get_meta("dimensions")
        if not ids or dim is None:
            return {}
        literal = _vector_literal(query_vector, int(dim))
        return dict(self.con.execute(f"SELECT chunk_id, array_inner_product(vector, {literal}) FROM embeddings "
                                     f"WHERE chunk_id IN ({sql_strings(ids)})").fetchall())

    def files_of_chunks(self, ids: list[str]) -> dict[str, str]:
        if not ids:
            return {}
        rows = self.con.execute(
            "SELECT c.id, d.path FROM chunks c JOIN documents d ON d.id = c.document_id "
            f"WHERE c.id IN ({sql_strings(ids)})"
        ).fetchall()
        return dict(rows)

    def folders_of(self, paths: list[str]) -> dict[str, Root]:
        if not paths:
            return {}
        roots = {root.path: root for root in self.store.roots()}
        rows = self.con.execute(f"SELECT path, root FROM documents WHERE path IN ({sql_strings(paths)})").fetchall()
        return {path: roots[root] for path, root in rows if root in roots}

    def _hits(self, source: str = "FROM chunks c JOIN documents d ON d.id = c.document_id") -> dict[str, SearchHit]:
        """The display fields of the chunks `source` (a FROM clause naming chunks c and documents d) holds."""
        rows = self.con.execute(
            "SELECT c.id, d.path, d.title, c.heading, c.start_line, c.end_line, c.text, c.page_start, c.page_end, d.file_type, "
            f"d.sha256 {source}"
        ).fetchall()
        return {row[0]: SearchHit(*row) for row in rows}


def _vector_literal(query_vector: np.ndarray, dim: int) -> str:
    """The query vector as a SQL literal: binding a list parameter costs tens of milliseconds in
    DuckDB's Python API."""
    return "[" + ",".join(repr(float(x)) for x in query_vector.astype(np.float32)) + f"]::FLOAT[{dim}]"
