"""Words for keyword search: MeCab (fugashi + unidic-lite) for Japanese, light stemming for English.

Text is NFKC-normalised and lower-cased; punctuation, symbols, particles and auxiliary verbs are
dropped (they carry no topic and make the longest posting lists); verbs and adjectives are
indexed in their dictionary form (開かれた → 開く) so inflections meet; single-kanji words stay.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections import Counter

_DROP_POS = {"助詞", "助動詞", "補助記号", "記号", "空白"}
_INFLECTED_POS = {"動詞", "形容詞", "形状詞"}
_ASCII_WORD = re.compile(r"[a-z][a-z0-9_]*")
_PUNCT_ONLY = re.compile(r"^[\W_]+$")

_local = threading.local()  # a MeCab tagger is not safe to share between threads


def _tagger():
    tagger = getattr(_local, "tagger", None)
    if tagger is None:
        import fugashi

        tagger = _local.tagger = fugashi.Tagger()
    return tagger


def stem(word: str) -> str:
    """Light English stemming (plurals, -ing, -ed, a final e), so that index, indexes, indexed
    and indexing meet; not a full Porter stemmer."""
    if len(word) <= 3 or not _ASCII_WORD.fullmatch(word):
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    elif word.endswith("ing") and len(word) > 5:
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) > 4 and not word.endswith("eed"):
        word = _undouble(word[:-2])
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    """runn -> run, stopp -> stop (but keep ll, ss, zz: install, pass)."""
    if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """The index terms of a text, in order (repeats kept)."""
    return [term for term, _, _ in _terms_with_spans(unicodedata.normalize("NFKC", text).lower())]


def match_spans(text: str, terms: set[str]) -> list[tuple[int, int]]:
    """Character spans of `text` whose words are among `terms` (for highlighting)."""
    if not terms:
        return []
    spans: list[tuple[int, int]] = []
    for term, start, end in _snippet_terms(text):
        if term not in terms:
            continue
        # pg_restore, foo-bar: join matches split by one punctuation character
        if spans and start - spans[-1][1] <= 1 and _PUNCT_ONLY.match(text[spans[-1][1] : start] or "_"):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


@functools.lru_cache(maxsize=4096)
def _snippet_terms(text: str) -> tuple[tuple[str, int, int], ...]:
    """The words of a snippet, kept: the same snippets come back query after query."""
    return tuple(_terms_with_spans(text))


def _terms_with_spans(text: str) -> list[tuple[str, int, int]]:
    """(term, start, end) for each indexable word of `text`; each word is normalised on its own,
    so spans refer to `text` as given."""
    out = []
    pos = 0
    for token in _tagger()(text):
        pos += len(token.white_space)
        surface = token.surface
        start, pos = pos, pos + len(surface)
        word = surface.lower() if surface.isascii() else unicodedata.normalize("NFKC", surface).lower()
        if not word or _PUNCT_ONLY.match(word):
            continue
        # the raw feature line, not fugashi's named tuple (twice as fast): unidic's part of
        # speech first, the dictionary form eleventh; fields with commas are never these
        feature = token.feature_raw.split(",", 11)
        pos_tag = feature[0]
        if pos_tag in _DROP_POS:
            continue
        if pos_tag in _INFLECTED_POS and len(feature) > 10 and feature[10] not in ("", "*"):
            word = unicodedata.normalize("NFKC", feature[10]).lower()
        out.append((stem(word), start, pos))
    return out


def term_counts(text: str) -> Counter[str]:
    return Counter(words(text))
