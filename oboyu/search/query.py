"""Search: a vector leg (the embedding model) and a keyword leg (BM25 over MeCab words), fused in
hybrid mode; results grouped per file by default, each with a query-aware snippet."""

from __future__ import annotations

import functools
import re
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime

from oboyu.documents.chunking import split_sentences
from oboyu.models.embedding import Embedder
from oboyu.errors import OboyuError
from oboyu.search.fusion import convex_with_files
from oboyu.documents.keywords import match_spans, words
from oboyu.models.rerank import Reranker
from oboyu.search.resident import ResidentIndex
from oboyu.index.store import Filters, Store

SNIPPET_CHARS = 200


MODES = ("hybrid", "vector", "keyword")
CANDIDATES = 100  # chunks each leg contributes to fusion
# hybrid: three legs of equal weight, each scaled to [0, 1]: passages by meaning, passages by
# words, and files by the meaning of their first passage (`lead`)
HYBRID_WEIGHTS = {"vector": 1 / 3, "keyword": 1 / 3, "lead": 1 / 3}
RERANK_DEPTH = 30  # fused chunks the reranker reads, when one is installed


@dataclass
class Result:
    rank: int
    score: float
    path: str
    start_line: int
    end_line: int
    heading: str
    title: str | None
    snippet: str
    chunk_id: str
    mode: str = "vector"
    matches: list[tuple[int, int]] = field(default_factory=list)  # query words in the snippet
    ranks: dict[str, int | None] = field(default_factory=dict)  # each leg's rank of this chunk
    leg_scores: dict[str, float | None] = field(default_factory=dict)  # each leg's raw score
    other_matches: int = 0  # further matching chunks of the same file (grouped results)
    page_start: int | None = None  # PDF pages of the passage, from 1
    page_end: int | None = None

    @property
    def location(self) -> str:
        """Where the passage is, for people: `path:lines`, or `path (p. N)` in a PDF."""
        if self.page_start is not None:
            pages = f"{self.page_start}" if self.page_end in (None, self.page_start) else f"{self.page_start}-{self.page_end}"
            return f"{self.path} (p. {pages})"
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def to_json(self) -> dict:
        return asdict(self)


def search(
    store: Store | None,
    embedder: Embedder | None,
    query: str,
    k: int = 10,
    filters: Filters | None = None,
    mode: str = "hybrid",
    group: bool = True,
    resident: ResidentIndex | None = None,
    reranker: Reranker | None = None,
) -> list[Result]:
    """The k best files (or chunks, with group=False) for a query. A long-lived caller passes a
    ResidentIndex to rank from memory (unfiltered queries); with no store, the resident index
    answers as last loaded. A reranker reorders the best RERANK_DEPTH chunks of the mode's ranking."""
    if not query.strip():
        raise OboyuError("the query is empty")
    if k < 1:
        raise OboyuError("-k must be at least 1")
    if mode not in MODES:
        raise OboyuError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if store is None and (resident is None or filters not in (None, Filters())):
        raise OboyuError("a filtered search needs the index file")
    if resident is not None and (filters is None or filters == Filters()):
        if store is not None:
            resident.refresh(store)  # reads the generation: the model id comes with the loaded state
        indexed_with = resident.model_id
    else:
        resident = None
        indexed_with = store.get_meta("model_id")
    if indexed_with is None:
        return []
    if mode in ("hybrid", "vector"):
        if embedder is None:
            raise OboyuError(f"{mode} search needs the embedding model")
        if indexed_with != embedder.info.model_id:
            raise OboyuError(
                f"the index was built with model {indexed_with}, but {embedder.info.model_id} is loaded; "
                "run `oboyu index` again to re-embed it"
            )
    terms = words(query)  # once: for the keyword leg and for every snippet
    legs = rank_chunks(store, embedder, query, terms, max(CANDIDATES, k * 3), filters, mode, resident)
    source: Store | ResidentIndex = resident if resident is not None else store
    files = source.files_of_chunks(list({cid for ranking in legs.values() for cid, _ in ranking}))
    fused = fuse(legs, mode, files)
    if reranker is not None and fused:
        legs["rerank"] = rerank(reranker, query, fused[:RERANK_DEPTH], source)
        fused = legs["rerank"] + fused[RERANK_DEPTH:]
    if group:
        chosen, others = _best_per_file(files, fused, k)
    else:
        chosen, others = fused[:k], {}
    hits = source.chunks_by_id([cid for cid, _ in chosen])
    # a file leg ranks files: a passage shows its file's rank and score there
    key = {leg: (lambda cid: files.get(cid)) if leg == "lead" else (lambda cid: cid) for leg in legs}
    leg_ranks = {leg: {key[leg](cid): r for r, (cid, _) in enumerate(ranking, start=1)} for leg, ranking in legs.items()}
    leg_scores = {leg: {key[leg](cid): score for cid, score in ranking} for leg, ranking in legs.items()}
    results = []
    for rank, (cid, score) in enumerate(chosen, start=1):
        hit = hits[cid]
        snippet, matches = make_snippet(hit.text, query, terms=terms)
        results.append(
            Result(
                rank=rank, score=round(float(score), 4), path=hit.path, start_line=hit.start_line,
                end_line=hit.end_line, heading=hit.heading, title=hit.title,
                snippet=snippet, chunk_id=cid, mode=mode, matches=matches,
                ranks={leg: ranks.get(key[leg](cid)) for leg, ranks in leg_ranks.items()},
                leg_scores={leg: _rounded(scores.get(key[leg](cid))) for leg, scores in leg_scores.items()},
                other_matches=others.get(cid, 0), page_start=hit.page_start, page_end=hit.page_end,
            )
        )
    return results


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def rank_chunks(
    store: Store | None, embedder: Embedder | None, query: str, terms: list[str], n: int, filters: Filters | None,
    mode: str, resident: ResidentIndex | None = None,
) -> dict[str, list[tuple[str, float]]]:
    """Each leg's n best chunks for the mode (the caller has checked the model)."""
    legs: dict[str, list[tuple[str, float]]] = {}
    if mode in ("hybrid", "vector"):
        vector = embedder.embed_queries([query])[0]
        legs["vector"] = resident.vector_scores(vector, n) if resident else store.vector_scores(vector, n, filters)
    if mode == "hybrid":
        legs["lead"] = resident.vector_scores(vector, n, leads_only=True) if resident else \
            store.vector_scores(vector, n, filters, leads_only=True)
    if mode in ("hybrid", "keyword"):
        legs["keyword"] = resident.keyword_scores(terms, n) if resident else store.keyword_scores(terms, n, filters)
    return legs


def rerank(reranker: Reranker, query: str, candidates: list[tuple[str, float]],
           source: Store | ResidentIndex) -> list[tuple[str, float]]:
    """The candidates in the cross-encoder's order, with its scores."""
    hits = source.chunks_by_id([cid for cid, _ in candidates])
    ids = [cid for cid, _ in candidates if cid in hits]
    scores = reranker.score(query, [hits[cid].text for cid in ids])
    return sorted(zip(ids, map(float, scores)), key=lambda item: -item[1])


def fuse(legs: dict[str, list[tuple[str, float]]], mode: str, files: dict[str, str]) -> list[tuple[str, float]]:
    if mode != "hybrid":
        return list(legs[mode])
    passages = {leg: legs[leg] for leg in ("vector", "keyword")}
    return convex_with_files(passages, {"lead": legs["lead"]}, files, HYBRID_WEIGHTS)


def _best_per_file(
    files: dict[str, str], fused: list[tuple[str, float]], k: int
) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """The best chunk of each of the k best files, and how many more chunks each file had."""
    best: dict[str, tuple[str, float]] = {}
    counts: dict[str, int] = {}
    for cid, score in fused:
        path = files.get(cid)
        if path is None:
            continue
        counts[path] = counts.get(path, 0) + 1
        best.setdefault(path, (cid, score))
    chosen = list(best.values())[:k]
    return chosen, {cid: counts[files[cid]] - 1 for cid, _ in chosen}


def make_filters(
    paths: Iterable[str] = (), types: str | Iterable[str] | None = None, since: str | None = None, until: str | None = None,
    folders: Iterable[str] = (),
) -> Filters:
    """Filters from command-line style values: globs, `md,txt`, dates (`2026-01-31`, an ISO
    time, or an age such as `7d` / `12h`) and indexed folders (their absolute paths)."""
    if isinstance(types, str):
        types = [t for t in (part.strip() for part in types.split(",")) if t]
    return Filters(
        path_globs=tuple(p for p in paths if p),
        types=tuple(types or ()),
        since_ns=parse_time(since) if since else None,
        until_ns=parse_time(until) if until else None,
        folders=tuple(folders),
    )


def parse_time(value: str) -> int:
    """A date, an ISO time or an age (`30m`, `12h`, `7d`, `2w`) as nanoseconds since the epoch."""
    age = re.fullmatch(r"(\d+)\s*([mhdw])", value.strip())
    if age:
        seconds = int(age.group(1)) * {"m": 60, "h": 3600, "d": 86400, "w": 604800}[age.group(2)]
        return int((time.time() - seconds) * 1e9)
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise OboyuError(f"not a date: {value!r} (use 2026-01-31, 2026-01-31T09:00 or an age like 7d)") from None
    return int(moment.timestamp() * 1e9)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _bigrams(norm: str) -> set[str]:
    """Character bigrams (and words for spaced scripts) of normalised text."""
    grams = {norm[i : i + 2] for i in range(len(norm) - 1) if not norm[i : i + 2].isspace()}
    grams.update(w for w in re.findall(r"\w+", norm) if len(w) > 1)
    return grams


# The same passages come back query after query (typing, refining, paging), so their sentence
# spans and sentence features are kept: a few MB for thousands of passages.
@functools.lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(split_sentences(text))


@functools.lru_cache(maxsize=16384)
def _normalised_sentence(sentence: str) -> str:
    return _normalise(sentence)


@functools.lru_cache(maxsize=16384)
def _sentence_bigrams(norm: str) -> frozenset[str]:
    return frozenset(_bigrams(norm))


def make_snippet(
    text: str, query: str, limit: int = SNIPPET_CHARS, terms: list[str] | None = None
) -> tuple[str, list[tuple[int, int]]]:
    """The sentence that shares most words with the query (then most character bigrams),
    widened with its neighbours up to `limit`, and the spans of the query's words in it.
    `terms` are the query's words when the caller has them already."""
    term_set = set(words(query) if terms is None else terms)
    spans = _sentences(text) or ((0, len(text)),)
    # substring tests on the normalised sentences: cheap, and MeCab runs once, on the snippet
    substring_terms = [t for t in term_set if len(t) > 1 or not t.isascii()]
    sentences = [_normalised_sentence(text[a:b]) for a, b in spans]
    hits = [sum(1 for t in substring_terms if t in sentence) for sentence in sentences]
    most = max(hits)
    tied = [i for i, h in enumerate(hits) if h == most]
    best = tied[0]
    if len(tied) > 1:  # bigrams only break ties: most sentences never need them
        wanted = _bigrams(_normalise(query))
        best = max(tied, key=lambda i: (len(_sentence_bigrams(sentences[i]) & wanted), -i))
    lo = hi = best
    while True:
        grew = False
        if hi + 1 < len(spans) and spans[hi + 1][1] - spans[lo][0] <= limit:
            hi += 1
            grew = True
        if lo > 0 and spans[hi][1] - spans[lo - 1][0] <= limit:
            lo -= 1
            grew = True
        if not grew:
            break
    start, end = spans[lo][0], spans[hi][1]
    snippet = re.sub(r"\s+", " ", text[start:end]).strip()
    if len(snippet) > limit:
        snippet = snippet[: limit - 1].rstrip() + "…"
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text.rstrip()) and not snippet.endswith("…") else ""
    snippet = prefix + snippet + suffix
    return snippet, match_spans(snippet, term_set)
