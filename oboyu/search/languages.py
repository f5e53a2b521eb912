"""Which writing a query and its results are in: a question in English among Japanese notes
(`across_languages`), one typed as English keywords (`in_english`), and one whose words neither
the folder nor the model knows (`unknown_to_the_model`)."""

from __future__ import annotations

import unicodedata

from oboyu.documents.keywords import ENGLISH_FUNCTION_WORDS, words
from oboyu.models.embedding import Embedder
from oboyu.text import has_japanese, latin_words, written_in

# what the front ends say of results across languages (`across_languages`), at length and in the app's border
ACROSS_LANGUAGES = "asked in English of notes in Japanese: how sure each of those is cannot be told (score ?)"
ACROSS_LANGUAGES_SHORT = "across languages: ?"
ACROSS_WINDOW = 10  # the results looked at for one in Japanese, however few are asked for
HALF_THE_WORDS = 0.5  # a Japanese result holding this share of the query's words judges it by them
# letters a word of the model's tokenizer keeps together at most, on average, for letters that read as no word
MOST_CHARS_PER_PIECE = 2.5


def across_languages(query: str, passages: list[tuple[str, float]], embedder: Embedder | None = None) -> bool:
    """Whether a query told no good match is in English (`in_english`) and among its results
    (each a passage and its share of the query's words, weighted by rarity) is one in Japanese
    while none in Japanese holds half its words (`VPN`, `git log` or a question naming `Zoom`
    twice are judged by their words; `search` asks only where the query has no good match, so an
    English question that an English note answers is judged as ever). The confidence and the
    token match were fitted on questions in their notes' language; across languages they share
    no words, and the token match runs low: 11 of 20 English questions about Japanese notes were
    told "no good match", against 0 of the same 20 in Japanese
    (`benchmarks.quality.cross_language`), and no evidence tells them from off-topic ones well
    enough to draw a line (AUC 0.83 for the token match, 0.67 for the best confidence, against
    0.97 to 0.99 and 0.94 to 0.97 in Japanese). So its Japanese results are neither weak nor less
    likely: they come ranked by meaning, and the front ends say that how sure each is cannot be
    told. Its English results can be told, and are weak (the query has no good match): a user
    trial's English question about golf was shown three English notes as if across languages.
    Any Japanese result counts, not only the first: in a folder of both languages an English
    question is drawn to the English notes, while its answer may be a Japanese one further down
    (the trial's packing list came fifth, after four English notes; the weak ones now go after
    it). The other way is judged as any query: a Japanese question whose first passage is mostly
    Latin letters (a man page's options, an English note) kept every answerable question of the
    development collections, and their off-topic ones were caught (personal: 80% against 65% had
    it counted as across)."""
    if has_japanese(query) or written_in(query) != "latin":
        return False
    shares = [share for text, share in passages if written_in(text) == "japanese"]
    return bool(shares) and max(shares) < HALF_THE_WORDS and in_english(query, embedder)


def in_english(query: str, embedder: Embedder | None = None) -> bool:
    """Whether a query in Latin letters reads as English: it has a function word (how, the, is,
    ...: 53 of the 55 English questions of eval/everyday), or, typed as keywords, at least half its
    words are whole pieces of the model's tokenizer (`fire pit`, `expense deadline`; not `zzzz
    qqqq`, nor `kubectl rollout undo`, whose words a folder holds as written)."""
    if any(word in ENGLISH_FUNCTION_WORDS for word in words(query)):
        return True
    typed = latin_words(query)
    if embedder is None or not typed:
        return False
    return 2 * len(known_to_the_model(typed, embedder)) >= len(typed)


def known_to_the_model(typed: list[str], embedder: Embedder) -> list[str]:
    """The words that are whole pieces of the model's tokenizer, as written or in lower case."""
    tokenizer = embedder.tokenizer

    def whole(word: str) -> bool:
        return any(len(tokenizer.encode(form, add_special_tokens=False).ids) == 1 for form in (word, word.lower()))

    return [word for word in typed if whole(word)]


def unknown_to_the_model(query: str, embedder: Embedder | None) -> bool:
    """Whether a query is letters that read as no word: Latin letters alone (no other writing),
    none of its words a whole piece of the model's tokenizer, and those words falling apart into
    pieces of MOST_CHARS_PER_PIECE characters or fewer on average (`xyzzy plugh`: 9 letters in 5
    pieces; `passport renewal` keeps pieces of 3.75, `kubernetes` 3.3). Asked where no passage of
    the folder holds any of its words, such a query has nothing to be matched by: its pieces
    (`xy`, `zz`) find their like in any passage of code or options, and a user trial's gibberish
    was a good match (of 16 such asked of four development collections, 11, token match 0.78 to
    0.84 against the line's 0.774). No development question is written so; of random strings of 4
    to 8 letters, 98.9% read as no word one at a time, 99.9% two at a time, against 31.7% and 18.2%
    of the words of several pieces in this project's English docs (a script, not kept): a real
    word so asked, that no passage holds, gets its results as weak ones."""
    typed = latin_words(query)
    if embedder is None or not typed or has_japanese(query):
        return False
    if sum(ch.isalpha() for ch in unicodedata.normalize("NFKC", query)) != sum(map(len, typed)):
        return False  # another writing too (Москва): not judged here
    if known_to_the_model(typed, embedder):
        return False
    tokenizer = embedder.tokenizer
    pieces = sum(len(tokenizer.encode(word, add_special_tokens=False).ids) for word in typed)
    return sum(map(len, typed)) <= MOST_CHARS_PER_PIECE * pieces
