"""Snippets: the sentence of a passage that shares most words with the query, widened with its
neighbours up to a length, and where the query's words are in it."""

from __future__ import annotations

import functools
import re
import unicodedata

from oboyu.documents.chunking import split_sentences
from oboyu.documents.extracted import LINE_BREAK
from oboyu.documents.keywords import match_spans, query_words

SNIPPET_CHARS = 200


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
    """Sentences within lines: a spreadsheet's rows and a list's items end at their line, with no
    full stop (a trial's snippet of four rows was the first 200 characters, the row asked about
    cut off)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for end, after in [*(m.span() for m in LINE_BREAK.finditer(text)), (len(text), len(text))]:
        spans += [(start + a, start + b) for a, b in split_sentences(text[start:end])]
        start = after
    return tuple(spans)


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
    term_set = set(query_words(query) if terms is None else terms)
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
    if end - start > limit:
        start, end = _around_first_match(text, start, end, term_set, limit)
    snippet = re.sub(r"\s+", " ", text[start:end]).strip()
    if len(snippet) > limit:
        snippet = snippet[: limit - 1].rstrip() + "…"
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text.rstrip()) and not snippet.endswith("…") else ""
    snippet = prefix + snippet + suffix
    return snippet, match_spans(snippet, term_set)


def _around_first_match(text: str, start: int, end: int, terms: set[str], limit: int) -> tuple[int, int]:
    """A window of a sentence longer than a snippet (a line with no full stop: a log, a minified
    file) that holds its first match, a third of the way in; where none matches or the first is
    within the snippet's length of the start, its start (a
    user trial: a 500 KB line's passage showed its first 200 characters, the word asked for not
    among them)."""
    found = match_spans(text[start:end], terms)
    if not found or found[0][1] <= limit - 1:  # none, or the first shows from the start
        return start, end
    match = start + found[0][0]
    begin = max(start, match - limit // 3)
    gap = text.find(" ", begin, match)  # start at a word where the text has spaces
    if 0 <= gap - begin < 20:
        begin = gap + 1
    return begin, min(end, begin + limit - 2)  # room for the ellipses on either side
