"""Search: a vector leg (the embedding model) and a keyword leg (BM25 over MeCab words), fused in
hybrid mode with a file leg; results grouped per file by default, each with a query-aware snippet.

A query goes: parse (words, filters) -> rank (a `Ranker`: SQL or in memory) -> fuse -> rerank
(when a cross-encoder is installed) -> group per file -> confidence (in hybrid, a share of it
orders the best files) -> snippets."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from oboyu.documents.filetypes import part_location
from oboyu.documents.keywords import fallback_terms, query_words
from oboyu.errors import OboyuError
from oboyu.index.records import SearchHit, embedding_text
from oboyu.models.embedding import Embedder
from oboyu.models.rerank import Reranker
from oboyu.models.token_match import token_match
from oboyu.modes import Mode
from oboyu.paths import disk_path
from oboyu.search.confidence import Model, gather, model_for, reference_for
from oboyu.search.filters import Filters
from oboyu.search.fusion import convex_with_files
from oboyu.search.languages import ACROSS_WINDOW, across_languages, unknown_to_the_model
from oboyu.search.rankers import BM25_K1, Ranker, Scores
from oboyu.search.snippets import make_snippet
from oboyu.text import calm_capitals, query_text, written_in

CANDIDATES = 100  # chunks each leg contributes to fusion
RERANK_DEPTH = 30  # fused chunks the reranker reads, when one is installed
# files whose confidence is weighed whatever -k, those shown by default first: a user trial's
# answer (confidence 0.045, the best) was the fusion's 20th file, so `-k 10` hid it and `-k 20`
# showed it second; 30 costs no collection anything (docs/decisions.md)
ORDER_DEPTH = 30
FILE_LEGS = ("lead", "lead_words")


@dataclass(frozen=True)
class Fusion:
    """How hybrid search fuses its legs, each scaled to [0, 1]: passages by meaning (`vector`) and
    by words (`keyword`), and files by the meaning (`lead`) and the words (`lead_words`) of their
    first passage, where a document says what it is about. Set by hand (docs/decisions.md);
    fitted leave-one-collection-out they did worse (`benchmarks.quality.fusion`, docs/relevance.md)."""

    vector: float = 1 / 3
    keyword: float = 1 / 3
    lead: float = 1 / 3
    lead_words: float = 1 / 6
    # the keyword leg's best counts fully only when it reaches this share of what every query
    # word, matched, would score: one common word of several cannot lead the fusion alone
    keyword_ceiling: float = 0.5
    # a query of a few words (as typed into a search box) names index terms, found best where a
    # document says what it is about: `lead_words` weighs fully up to this many words, and less
    # for each word a longer query has, whose words spread through a document's text
    lead_words_full_until: int = 3
    # the best files are ordered by the fusion plus this share of their confidence: fusion scales
    # each leg over whatever candidates came back, and where two files come out near level, the
    # absolute evidence (cosine, lead over the other files, words held) decides
    confidence_share: float = 0.2

    def weights(self, query_words: int) -> dict[str, float]:
        lead_words = self.lead_words * min(1.0, self.lead_words_full_until / max(1, query_words))
        return {"vector": self.vector, "keyword": self.keyword, "lead": self.lead, "lead_words": lead_words}


HYBRID = Fusion()


JSON_KEYS = {"confidence": "score", "ranking_score": "fused"}


# the model reads about 512 tokens (some 700 to 1,000 Japanese characters) of a query; far longer
# pastes only cost time (100,000 characters: 9 s) and echo back in full
MAX_QUERY_CHARS = 1000


@dataclass
class Result:
    rank: int
    confidence: float  # the estimated probability that the result is relevant (`search.confidence`); JSON `score`
    path: str
    start_line: int
    end_line: int
    heading: str
    title: str | None
    snippet: str
    chunk_id: str
    mode: Mode = Mode.VECTOR  # how it was judged: the search's mode, or keyword for a passage whose vector is not made yet
    matches: list[tuple[int, int]] = field(default_factory=list)  # query words in the snippet
    ranks: dict[str, int | None] = field(default_factory=dict)  # each leg's rank of this chunk
    leg_scores: dict[str, float | None] = field(default_factory=dict)  # each leg's raw score
    other_matches: int = 0  # further matching chunks of the same file (grouped results)
    page_start: int | None = None  # the parts of the passage: pages, slides, rows, ... (`part`)
    page_end: int | None = None
    file_type: str = ""
    weak: bool = False  # left out by default: under the threshold, or beside a good match under the hide line
    evidence: dict[str, float] = field(default_factory=dict)  # what the confidence was computed from
    ranking_score: float = 0.0  # what orders the results: the mode's score (hybrid: fusion plus a share of the confidence); JSON `fused`
    copies: list[str] = field(default_factory=list)  # other files with the same content, folded into this one
    folder: str | None = None  # the name of the indexed folder the file belongs to
    folder_description: str | None = None  # that folder's description, in its owner's words (None when none)
    likely: bool = True  # shown, at or over the good-match line; one under it beside a good match is shown, but unlikely
    across_languages: bool = False  # a Japanese passage asked in English, none holding its words: never weak (`across_languages`)

    @property
    def part(self) -> str:
        """`p. 3`, `slides 2-3`, `rows 10-40`; '' in a format without parts."""
        return part_location(self.file_type, self.page_start, self.page_end)

    @property
    def readable_score(self) -> str:
        """The confidence as people read it, `?` across languages, where it cannot be told (JSON and
        CSV keep the number beside `across_languages`)."""
        return "?" if self.across_languages else f"{self.confidence:.3f}"

    @property
    def location(self) -> str:
        """Where the passage is, for people: `path:lines`, or `path (p. 3)`, `path (slide 2)`."""
        if self.page_start is not None:
            return f"{self.path} ({self.part})"
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def to_json(self) -> dict:
        """The result as `--json` gives it; the keys `score` and `fused` predate the attributes'
        names and stay, as scripts read them. `likely` is null where it cannot be told (across
        languages: a user trial's script read `likely: true` beside a score of 0 as sure)."""
        shown = {JSON_KEYS.get(key, key): value for key, value in asdict(self).items()}
        if self.across_languages:
            shown["likely"] = None
        return shown


def has_words(query: str) -> bool:
    """Whether a query holds a letter, a digit or an emoji (🍣 is a word here). `!!!???` or `。、「」`
    has nothing to match, and its vector lies near every passage's: a trial's got a minified
    script as a "good match"."""
    return any(ch.isalnum() or unicodedata.category(ch) == "So" for ch in query)


def search(
    ranker: Ranker,
    embedder: Embedder | None,
    query: str,
    k: int = 10,
    filters: Filters | None = None,
    mode: Mode = Mode.HYBRID,
    group: bool = True,
    reranker: Reranker | None = None,
    everywhere_ranker: Ranker | None = None,
) -> list[Result]:
    """The k best files (or chunks, with group=False) for a query, ranked by `ranker`: a
    SqlRanker over an open Store, or a ResidentIndex for unfiltered searches from memory. A
    reranker reorders the best RERANK_DEPTH chunks of the mode's ranking. With filters, each result is
    also weighed against every indexed file, ranked by `everywhere_ranker` (the index's arrays,
    where the caller has them: far cheaper than SQL over a large index), else by `ranker`."""
    query = query_text(query)  # a lone surrogate from an MCP client or a script, escapes; spaces around change the vector
    if not query.strip():
        raise OboyuError("the query is empty")
    if not has_words(query):
        raise OboyuError("the query is only punctuation: there is nothing to search for; add a word")
    if len(query) > MAX_QUERY_CHARS:
        raise OboyuError(f"the query is {len(query):,} characters long; shorten it to at most {MAX_QUERY_CHARS:,}")
    if k < 1:
        raise OboyuError("-k must be at least 1")
    indexed_with = ranker.model_id()
    if indexed_with is None:
        return []
    if mode.uses_vectors:
        if embedder is None:
            raise OboyuError(f"{mode} search needs the embedding model")
        if indexed_with != embedder.info.model_id:
            raise OboyuError(
                f"the index was built with model {indexed_with}, but {embedder.info.model_id} is loaded; "
                "run `oboyu index` again to re-embed it"
            )
    terms = query_words(query)  # once: for the keyword leg and for every snippet
    vector = query_vector(embedder, query) if embedder is not None and mode.uses_vectors else None
    legs = rank_chunks(ranker, embedder, query, terms, max(CANDIDATES, k * 3), filters, mode, vector)
    rarity = ranker.term_rarity(terms)  # after the keyword leg, which SQL ranking reads it with
    full_match = best_bm25(rarity)
    files = ranker.files_of_chunks(list({cid for ranking in legs.values() for cid, _ in ranking}))
    fused = fuse(legs, mode, files, full_match, len(set(terms)))
    if reranker is not None and fused:
        legs["rerank"] = rerank(reranker, query, fused[:RERANK_DEPTH], ranker)
        fused = legs["rerank"] + fused[RERANK_DEPTH:]
    # hybrid orders its best ORDER_DEPTH files; with vectors, at least the ACROSS_WINDOW best are
    # judged, so that the verdict is the same for -k 3 as for -k 10
    depth = max(k, ORDER_DEPTH) if mode is Mode.HYBRID and reranker is None \
        else max(k, ACROSS_WINDOW) if mode.uses_vectors else k
    if group:  # twice the files asked for: copies of one file fold into one result
        matching = {cid for cid, _ in legs.get("keyword", [])} if mode is Mode.HYBRID else None
        chosen, others = best_per_file(files, fused, 2 * depth, matching)
        hits = ranker.chunks_by_id([cid for cid, _ in chosen])
        chosen, copies = fold_copies(chosen, hits, depth)
    else:
        chosen, others, copies = fused[:depth], {}, {}
        hits = ranker.chunks_by_id([cid for cid, _ in chosen])
    pools = legs
    if filters is not None and not filters.is_empty():
        # a result is weighed against every indexed file, not only those the filters let in: a user
        # trial's filter that left one unrelated note made it look like an answer (0.02 -> 0.33)
        everywhere = rank_chunks(everywhere_ranker or ranker, embedder, query, terms, max(CANDIDATES, k * 3), None,
                                 mode, vector)
        pools = {leg: _merged(everywhere.get(leg, []), legs.get(leg, [])) for leg in ("vector", "keyword")}
        files.update(ranker.files_of_chunks([cid for pool in pools.values() for cid, _ in pool if cid not in files]))
    # copies of a file count as that file when confidence weighs a result's lead over the others
    content_of = {hit.path: hit.content for hit in hits.values() if hit.content}
    same_file = {cid: content_of.get(path, path) for cid, path in files.items()}
    in_pool = {cid for cid, _ in pools.get("vector", [])}
    outside = [cid for cid, _ in chosen if cid not in in_pool]
    exact = ranker.cosines(outside, vector) if vector is not None and outside else {}
    evidence = gather(ranker.terms_in([cid for cid, _ in chosen], terms), terms, rarity, same_file,
                      pools.get("vector", []), pools.get("keyword", []),
                      ranker.cosine_spread(vector) if vector is not None else (0.0, 0.0, 0),
                      reference_for(indexed_with), full_match, exact)
    judge = model_for(indexed_with, mode)
    # an index still being built: a passage whose vector is not made yet has only keyword evidence
    by_keyword = model_for(indexed_with, Mode.KEYWORD)
    waiting = set() if mode is Mode.KEYWORD else set(outside) - exact.keys()
    # a file leg ranks files: a passage shows its file's rank and score there
    key = {leg: (lambda cid: files.get(cid)) if leg in FILE_LEGS else (lambda cid: cid) for leg in legs}
    leg_ranks = {leg: {key[leg](cid): r for r, (cid, _) in enumerate(ranking, start=1)} for leg, ranking in legs.items()}
    leg_scores = {leg: {key[leg](cid): score for cid, score in ranking} for leg, ranking in legs.items()}
    judges = {cid: by_keyword if cid in waiting else judge for cid, _ in chosen}
    confidences = {cid: judges[cid].probability(evidence[cid]) for cid, _ in chosen}
    if mode is Mode.HYBRID and reranker is None:  # a cross-encoder's order stands as it gave it
        chosen = surer_first(with_confidence(chosen, confidences), judges, confidences)
    # hybrid judges the files it ordered; another mode its k shown (a good match it would not show
    # must not make the shown ones "less likely" rather than "no good match")
    judged = chosen if mode is Mode.HYBRID and reranker is None else chosen[:k]
    good_match, first_match = has_good_match(judged, judges, confidences, embedder, query, hits)
    if good_match and mode is Mode.HYBRID and not legs.get("keyword") and unknown_to_the_model(query, embedder):
        good_match = False  # no word in the folder, none the model knows: nothing matched it
    # told no good match, a question in English may be asking Japanese notes (whatever -k: the same
    # verdict for one result as for ten); one with a good match, in either language, is judged as ever.
    # Its Japanese results cannot be told (none weak, none less likely); its English ones can, and are weak.
    untold: set[str] = set()
    window = chosen[:max(k, ACROSS_WINDOW)]  # those whose words were weighed: none further down is promoted
    if not good_match and mode.uses_vectors and across_languages(
            query, [(hits[cid].text, evidence[cid].idf_coverage) for cid, _ in window], embedder):
        untold = {cid for cid, _ in window if written_in(hits[cid].text) == "japanese"}

    def weak(cid: str) -> bool:
        return cid not in untold and judges[cid].weak(confidences[cid], good_match)

    if (mode is Mode.HYBRID and reranker is None) or untold:
        chosen = shown_first(chosen, weak)
    results = []
    folders = ranker.folders_of(list(dict.fromkeys(hits[cid].path for cid, _ in chosen[:k])))
    for rank, (cid, score) in enumerate(chosen[:k], start=1):
        hit = hits[cid]
        folder = folders.get(hit.path)
        snippet, matches = make_snippet(hit.text, query, terms=terms)
        found_by = Mode.KEYWORD if cid in waiting else mode
        confidence, is_weak = confidences[cid], weak(cid)
        results.append(
            Result(
                rank=rank, confidence=round(confidence, 4), path=disk_path(hit.path), start_line=hit.start_line,
                end_line=hit.end_line, heading=hit.heading, title=hit.title,
                snippet=snippet, chunk_id=cid, mode=found_by, matches=matches,
                ranks={leg: ranks.get(key[leg](cid)) for leg, ranks in leg_ranks.items()},
                leg_scores={leg: _rounded(scores.get(key[leg](cid))) for leg, scores in leg_scores.items()},
                other_matches=others.get(cid, 0), page_start=hit.page_start, page_end=hit.page_end,
                file_type=hit.file_type, weak=is_weak,
                # a weak result is not likely either (a user trial read weak and likely at once as a contradiction)
                likely=not is_weak and (cid in untold or confidence >= judges[cid].threshold),  # untold: none set apart
                evidence={name: round(value, 4) for name, value in asdict(evidence[cid]).items()}
                | ({"token_match": round(first_match[1], 4)} if first_match and first_match[0] == cid else {}),
                ranking_score=round(float(score), 4), copies=copies.get(cid, []),
                folder=folder.name if folder else None, folder_description=folder.description if folder else None,
                across_languages=cid in untold,
            )
        )
    return results


UNLIKELY = "less likely: under the good-match line"  # what the front ends call that tail


def unlikely_from(results: list[Result]) -> int:
    """Where the shown results' tail of unlikely ones starts (their count when there is none): the
    results after the last one at or over the good-match line, or all of them when none is (a
    question whose tokens find their like in its first result has a good match, its confidences
    all under the line). A user trial: beside a 0.83 answer, nine files at 0.004, all looking
    alike; they stay (the right answer is sometimes among them: docs/relevance.md) and the front
    ends set them apart. Another: `zzzz qqqq` passed by its tokens, its results at 0.024 unmarked."""
    shown = [r for r in results if not r.weak]
    last_likely = max((i for i, r in enumerate(shown) if r.likely), default=None)
    return 0 if last_likely is None else last_likely + 1


def has_good_match(chosen: Scores, judges: dict[str, Model], confidences: dict[str, float], embedder: Embedder | None,
                   query: str, hits: dict[str, SearchHit]) -> tuple[bool, tuple[str, float] | None]:
    """Whether the query has a good match, and the first result's token match where it was asked.
    Where the model has a match line, a query whose best result is not SURE is told by how well
    its tokens find their like in the first result (`token_match.token_match`): on collections no
    fitting saw, that catches far more of the questions a folder cannot answer, at the same share
    of answerable ones lost, than the threshold does (docs/relevance.md). Elsewhere: a result at
    or over the threshold."""
    if not chosen:
        return False, None
    first, best = chosen[0][0], max(confidences.values())
    if embedder is not None and judges[first].asks_token_match(best):
        hit = hits[first]
        match = token_match(embedder, query, embedding_text(hit.title, hit.heading, hit.text))
        if match is not None:
            return judges[first].has_good_match(best, match), (first, match)
    return any(confidences[cid] >= judges[cid].threshold for cid, _ in chosen), None


def with_confidence(chosen: Scores, confidences: dict[str, float], fusion: Fusion = HYBRID) -> Scores:
    """The fused results ordered by their score plus the fusion's share of their confidence."""
    scored = [(cid, score + fusion.confidence_share * confidences[cid]) for cid, score in chosen]
    return sorted(scored, key=lambda item: -item[1])


SURER_BY = 5  # a likely result this many times as sure as the one above it goes above it


def surer_first(chosen: Scores, judges: dict[str, Model], confidences: dict[str, float]) -> Scores:
    """The order with each likely result (at or over its good-match line) moved above those right
    before it that are at least SURER_BY times less sure. Three user trials read `0.055` first and
    `0.282` second as a mistake; a rule over the same cached candidates as `benchmarks.quality.fusion`
    (an experiment, not kept), chosen out of fold among 3, 5, 10 and 30 times, raised macro nDCG@10
    (docs/relevance.md). Likely first, whatever the gap, cost two collections a point."""
    out = list(chosen)
    for i in range(1, len(out)):
        j = i
        while j > 0:
            cid, above = out[j][0], out[j - 1][0]
            if confidences[cid] < judges[cid].threshold or confidences[cid] < SURER_BY * confidences[above]:
                break
            out[j - 1], out[j] = out[j], out[j - 1]
            j -= 1
    return out


def shown_first(chosen: Scores, weak: Callable[[str], bool]) -> Scores:
    """The results shown by default (not weak) before those left out, each part in its order."""
    return sorted(chosen, key=lambda item: weak(item[0]))


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _merged(*pools: Scores) -> Scores:
    """One leg's candidates from several rankings of it, best first, each chunk once."""
    scores = {cid: score for pool in pools for cid, score in pool}
    return sorted(scores.items(), key=lambda item: -item[1])


def query_vector(embedder: Embedder, query: str) -> np.ndarray:
    """The query's vector; one typed in capitals throughout is read in lower case (`calm_capitals`)."""
    return embedder.embed_queries([calm_capitals(query)])[0]


def rank_chunks(ranker: Ranker, embedder: Embedder | None, query: str, terms: list[str], n: int,
                filters: Filters | None, mode: Mode, vector: np.ndarray | None = None) -> dict[str, Scores]:
    """Each leg's n best chunks for the mode (the caller has checked the model); `vector`: the
    query's, when the caller has embedded it already."""
    legs: dict[str, Scores] = {}
    if mode.uses_vectors:
        assert embedder is not None
        if vector is None:
            vector = query_vector(embedder, query)
        legs["vector"] = ranker.vector_scores(vector, n, filters)
        if mode is Mode.HYBRID:
            legs["lead"] = ranker.vector_scores(vector, n, filters, leads_only=True)
    if mode is not Mode.VECTOR:
        fallback = fallback_terms(terms)  # the words' bigrams, for compounds the dictionary did not know
        legs["keyword"] = ranker.keyword_scores([*terms, *fallback], n, filters, weights=fallback)
        if mode is Mode.HYBRID:
            legs["lead_words"] = ranker.keyword_scores([*terms, *fallback], n, filters, weights=fallback, leads_only=True)
    return legs


def rerank(reranker: Reranker, query: str, candidates: Scores, ranker: Ranker) -> Scores:
    """The candidates in the cross-encoder's order, with its scores."""
    hits = ranker.chunks_by_id([cid for cid, _ in candidates])
    ids = [cid for cid, _ in candidates if cid in hits]
    scores = reranker.score(query, [hits[cid].text for cid in ids])
    return sorted(zip(ids, map(float, scores)), key=lambda item: -item[1])


def best_bm25(rarity: dict[str, float]) -> float:
    """The BM25 score a passage holding every query word (often) would reach; the keyword leg's
    scale in hybrid fusion is the fusion's keyword ceiling of it when its best candidate falls short."""
    return sum(value * (BM25_K1 + 1) for value in rarity.values())


def fuse(legs: dict[str, Scores], mode: Mode, files: dict[str, str], full_match: float = 0.0,
         query_words: int = 1, fusion: Fusion = HYBRID) -> Scores:
    """The mode's ranking; in hybrid, the legs fused: `full_match`, the BM25 a passage holding
    every query word would reach (`best_bm25`), and `query_words`, the query's distinct words."""
    if mode is not Mode.HYBRID:
        return list(legs[mode])  # its one leg, named as the mode
    passages = {leg: legs[leg] for leg in ("vector", "keyword")}
    ceiling = fusion.keyword_ceiling * full_match
    return convex_with_files(passages, {leg: legs[leg] for leg in FILE_LEGS}, files, fusion.weights(query_words),
                             {"keyword": ceiling, "lead_words": ceiling})


def fold_copies(chosen: Scores, hits: dict[str, SearchHit], k: int) -> tuple[Scores, dict[str, list[str]]]:
    """The first k results of distinct content, each with the paths of its copies among the
    rest (`のコピー.xlsx`, `(1).epub`: one answer, not a list of the same file). A copy on disk
    is shown before one that is not: a folder moved and indexed at its new place, the old place's
    rows kept while it is missing (an unmounted drive's are), showed the old path."""
    kept: Scores = []
    first: dict[str, int] = {}  # content hash -> its place in kept
    copies: dict[str, list[str]] = {}
    for cid, score in chosen:
        hit = hits.get(cid)
        if hit is None:
            continue
        place = first.get(hit.content) if hit.content else None
        if place is not None:
            shown = kept[place][0]
            if not os.path.lexists(disk_path(hits[shown].path)) and os.path.lexists(disk_path(hit.path)):
                kept[place] = (cid, kept[place][1])
                copies[cid] = [*copies.pop(shown), disk_path(hits[shown].path)]
            else:
                copies[shown].append(disk_path(hit.path))
        elif len(kept) < k:
            kept.append((cid, score))
            copies[cid] = []
            if hit.content:
                first[hit.content] = len(kept) - 1
    return kept, copies


def best_per_file(
    files: dict[str, str], fused: Scores, k: int, matching: set[str] | None = None
) -> tuple[Scores, dict[str, int]]:
    """The best chunk of each of the k best files, and how many more chunks each file had (of
    those `matching`, when given: hybrid counts passages holding a query word, not every passage
    near the query's meaning, which made a 190-passage log `+189 more` for a word it lacks)."""
    best: dict[str, tuple[str, float]] = {}
    counts: dict[str, int] = {}
    for cid, score in fused:
        path = files.get(cid)
        if path is None:
            continue
        if path not in best or matching is None or cid in matching:
            counts[path] = counts.get(path, 0) + 1
        best.setdefault(path, (cid, score))
    chosen = list(best.values())[:k]
    return chosen, {cid: counts[files[cid]] - 1 for cid, _ in chosen}
