"""Words for keyword search: MeCab (fugashi + unidic-lite) for Japanese, Snowball's stemmer for English.

Text is NFKC-normalised and lower-cased; punctuation, symbols, particles and auxiliary verbs are
dropped (they carry no topic and make the longest posting lists); single-kanji words stay.

Japanese spellings of one word meet: each word is indexed as UniDic's lemma, which folds
inflections (開かれた → 開く), okurigana (引越し → 引っ越し), old kanji (學校 → 学校), long-vowel
variants (コンピュータ → コンピューター) and loanwords in hiragana (かれー → カレー); what the dictionary
does not know is folded from katakana to hiragana, and a hiragana run with a long-vowel mark
(みーてぃんぐ) is read as the katakana word it spells before tagging.

A word the dictionary does not know is often a compound of words it does (ジャーナリングファイルシステム,
ケーパビリティバージョン: 0.17-0.24% of the Japanese words of the development sets): the index also
holds its character bigrams, marked apart from words, and a query's words are looked up among them
too (`fallback_terms`), so that ファイルシステム finds the compound at a fraction of a word's weight.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

from oboyu.pools import Pool
from oboyu.text import pieces

_DROP_POS = {"助詞", "助動詞", "補助記号", "記号", "空白"}
_ASCII_WORD = re.compile(r"[a-z][a-z0-9_]*")
_PUNCT_ONLY = re.compile(r"^[\W_]+$")

BIGRAM_MARK = "::"  # starts a character bigram's term; no word has it (punctuation is dropped)
FALLBACK_WEIGHT = 0.25  # all of a query word's bigrams together weigh this much of the word


def _new_tagger():
    import fugashi

    return fugashi.Tagger()


def _new_stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


TAGGERS: Pool = Pool(_new_tagger)  # MeCab's: one a thread at a time (`oboyu.pools`)
STEMMERS: Pool = Pool(_new_stemmer)


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """An English word's stem by Snowball's English stemmer (Porter2), so that index, indexes,
    indexed and indexing meet, and meeting and meetings. The light stemmer written here before
    removed one ending only: a user trial's "meetings" missed "meeting" (meet), and "notes" met
    "not". PyStemmer's C (3 µs a word; `snowballstemmer`'s pure Python, used before, took 54 µs,
    and its import, 25 ms of a one-shot query, read all its 36 languages); cached, since a
    person's words repeat."""
    if len(word) <= 2 or not _ASCII_WORD.fullmatch(word):
        return word
    with STEMMERS.borrowed() as stemmer:  # one a thread at a time: a Snowball stemmer keeps its word in itself
        return stemmer.stemWord(word)


def words(text: str) -> list[str]:
    """The words of a text, in order (repeats kept)."""
    return [term for term, _, _, _ in _terms_with_spans(unicodedata.normalize("NFKC", text).lower())]


# English function words, as `stem` leaves them: a question's "how", "to" and "in" matched any
# English file (a user trial: "how to file taxes in Germany" found docker.txt by "to" and "in").
# Japanese particles are dropped by their part of speech already; passages keep these words.
ENGLISH_FUNCTION_WORDS = frozenset(stem(word) for word in (
    "a", "an", "the", "and", "or", "but", "nor", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from",
    "as", "into", "onto", "about", "than", "then", "so", "is", "are", "was", "were", "be", "been", "being", "am",
    "do", "does", "did", "have", "has", "had", "i", "me", "my", "we", "our", "you", "your", "he", "him", "his",
    "she", "her", "it", "its", "they", "them", "their", "this", "that", "these", "those", "there", "here", "what",
    "which", "who", "whom", "whose", "when", "where", "why", "how", "can", "could", "would", "should", "will",
    "shall", "may", "might", "must",
))


def query_words(text: str) -> list[str]:
    """A query's terms: its words less English function words, unless those are all it has."""
    terms = words(text)
    return [term for term in terms if term not in ENGLISH_FUNCTION_WORDS] or terms


def term_counts(text: str) -> Counter[str]:
    """A passage's index terms: its words, and the character bigrams of those the dictionary
    does not know."""
    counts: Counter[str] = Counter()
    for term, _, _, unknown in _terms_with_spans(unicodedata.normalize("NFKC", text).lower()):
        counts[term] += 1
        if unknown:
            counts.update(bigrams(term))
    return counts


def counts_of(texts: list[str]) -> list[Counter[str]]:
    """`term_counts` of each text: a worker process's share of a large re-analysis."""
    return [term_counts(text) for text in texts]


def words_in(counts: dict[str, int]) -> int:
    """A passage's length for BM25: its words, not the bigrams of its unknown ones."""
    return sum(n for term, n in counts.items() if not term.startswith(BIGRAM_MARK))


def bigrams(word: str) -> list[str]:
    return [BIGRAM_MARK + word[i : i + 2] for i in range(len(word) - 1)]


def fallback_terms(terms: list[str]) -> dict[str, float]:
    """The bigram terms of a query's Japanese words, each weighted so that all of one word's
    together weigh FALLBACK_WEIGHT: a compound the dictionary did not know still answers to its
    parts, below a passage holding the words themselves."""
    out: dict[str, float] = {}
    for term in set(terms):
        if term.isascii() or len(term) < 2:
            continue
        parts = bigrams(term)
        for part in parts:
            out[part] = max(out.get(part, 0.0), FALLBACK_WEIGHT / len(parts))
    return out


# すーぱー, みーてぃんぐ: hiragana, a long-vowel mark, maybe more (not the tail of a katakana word)
_HIRAGANA_LOANWORD = re.compile(r"(?<![\u30a0-\u30ff])[\u3041-\u3096]+ー[\u3041-\u3096ー]*")
_KATAKANA_TO_HIRAGANA = {code: code - 0x60 for code in range(0x30A1, 0x30F7)}


def _as_katakana(match: re.Match) -> str:
    return "".join(chr(ord(ch) + 0x60) if "\u3041" <= ch <= "\u3096" else ch for ch in match.group())


def _base_form(word: str, feature: list[str]) -> str:
    """A word's indexed form: UniDic's lemma where it only respells the word, its dictionary form
    as written otherwise. The lemma folds kana and long-vowel variants (コンピュータ, コンピューター),
    okurigana (引越し, 引っ越し) and old kanji (學校 → 学校); but it also picks one kanji for words
    that sound alike (指す → 差す, 空き → 明き) and puts kanji on kana words (ため → 為), which
    would merge different words: there the dictionary form in the text's own spelling stays."""
    written = feature[10] if len(feature) > 10 and feature[10] not in ("", "*") else word
    lemma = feature[7].split("-", 1)[0] if len(feature) > 7 and feature[7] not in ("", "*") else ""
    if lemma:
        ours, theirs = _KANJI.findall(written), _KANJI.findall(lemma)
        old_forms = [k for k in ours if k not in theirs]
        if ours == theirs or (old_forms and len(ours) == len(theirs) and not any(map(_common_kanji, old_forms))
                              and all(map(_common_kanji, theirs))):
            written = lemma
    return unicodedata.normalize("NFKC", written).lower()


def _common_kanji(ch: str) -> bool:
    """In JIS X 0208's first level (rows 16-47), where the everyday kanji are; old forms
    (學, 國, 會) are in the second."""
    try:
        code = ch.encode("euc_jp")
    except UnicodeEncodeError:
        return False
    return len(code) == 2 and 16 <= code[0] - 0xA0 <= 47


_KANJI = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def fold_kana(word: str) -> str:
    """Katakana as hiragana, so that spellings the dictionary does not know still meet."""
    return word.translate(_KATAKANA_TO_HIRAGANA)


def match_spans(text: str, terms: set[str]) -> list[tuple[int, int]]:
    """Character spans of `text` whose words are among `terms` (for highlighting); inside a word
    the dictionary does not know, the query's words it holds."""
    if not terms:
        return []
    inner = [t for t in terms if len(t) >= 2 and not t.isascii()]  # what may lie inside an unknown compound
    found: list[tuple[int, int, bool]] = []  # (start, end, a one-character word)
    for term, start, end, unknown in _snippet_terms(text):
        for first, last in [(start, end)] if term in terms else _inside(term, start, end, inner) if unknown else []:
            found.append((first, last, len(term) == 1 and not term.isascii()))
    if any(not single for _, _, single in found):
        # a one-kanji word (日, 代) is marked only beside another match (タクシー代), not in every
        # date and compound of the file (a user trial: 日 in 6月18日)
        ends = {e for s, e, single in found if not single}
        starts = {s for s, e, single in found if not single}
        found = [(s, e, single) for s, e, single in found if not single or s in ends or e in starts]
    spans: list[tuple[int, int]] = []
    for first, last, _ in found:
        # pg_restore, foo-bar: join matches split by one punctuation character
        if spans and first - spans[-1][1] <= 1 and _PUNCT_ONLY.match(text[spans[-1][1] : first] or "_"):
            spans[-1] = (spans[-1][0], max(last, spans[-1][1]))
        else:
            spans.append((first, last))
    return spans


def _inside(term: str, start: int, end: int, words: list[str]) -> list[tuple[int, int]]:
    """Where the words lie inside an unknown word's span (the whole span where folding changed its
    length)."""
    found = sorted((term.index(w), term.index(w) + len(w)) for w in words if w in term)
    if not found or len(term) != end - start:
        return [(start, end)] if found else []
    return [(start + a, start + b) for a, b in found]


@functools.lru_cache(maxsize=4096)
def _snippet_terms(text: str) -> tuple[tuple[str, int, int, bool], ...]:
    """The words of a snippet, kept: the same snippets come back query after query."""
    return tuple(_terms_with_spans(text))


def _terms_with_spans(text: str) -> list[tuple[str, int, int, bool]]:
    """(term, start, end, unknown to the dictionary) for each indexable word of `text`; each word
    is normalised on its own, so spans refer to `text` as given."""
    out = []
    # same length, so spans still refer to `text`
    spelled = _HIRAGANA_LOANWORD.sub(_as_katakana, text) if "ー" in text else text
    for offset, piece in pieces(spelled):
        out += _piece_terms(piece, offset)
    return out


def _piece_terms(text: str, pos: int) -> list[tuple[str, int, int, bool]]:
    """`_terms_with_spans` of a piece that starts at `pos`."""
    out: list[tuple[str, int, int, bool]] = []
    base = pos
    with TAGGERS.borrowed() as tagger:  # its tokens are read while it is held: the next parse reuses their memory
        tokens = [(token.white_space, token.surface, token.feature_raw, token.is_unk) for token in tagger(text)]
    for white_space, surface, feature_raw, is_unk in tokens:
        pos += len(white_space)
        start, pos = pos, pos + len(surface)
        word = surface.lower() if surface.isascii() else unicodedata.normalize("NFKC", surface).lower()
        if not word or _PUNCT_ONLY.match(word):
            continue
        # the raw feature line, not fugashi's named tuple (twice as fast): unidic's part of
        # speech first, the lemma eighth (`カレー-curry` for a loanword), the dictionary form in the
        # text's own spelling eleventh; fields with commas are never these
        feature = feature_raw.split(",", 11)
        pos_tag = feature[0]
        if pos_tag in _DROP_POS:
            continue
        if word.isascii():
            out.append((stem(word), start, pos, False))
            continue
        out.append((fold_kana(_base_form(word, feature)), start, pos, bool(is_unk)))
    return _with_joined(out, text, base)


_JOINERS = frozenset("-\u2010\u2011\uff0d_")  # -, ‐, non-breaking ‐, －, and _ (snake_case)
_JOINED_MOST_CHARS = 40


def _with_joined(terms: list[tuple[str, int, int, bool]], text: str, base: int) -> list[tuple[str, int, int, bool]]:
    """The terms, and after each run of Latin words joined by hyphens or underscores (Wi-Fi,
    e-mail, apt-get, MAX_RETRIES) the run as one word: a note's Wi-Fi meets a query's wifi, WiFi or
    ワイファイ (whose lemma is wifi), e-mail meets email, MAX_RETRIES meets maxRetries and is more
    than a max and a retries. The parts stay terms, so that apt get still finds apt-get."""
    out: list[tuple[str, int, int, bool]] = []
    run: list[tuple[int, int]] = []  # spans of the current run's Latin words
    hyphened = False

    def close() -> None:
        nonlocal run, hyphened
        if hyphened and len(run) > 1:
            joined = "".join(text[a - base : b - base] for a, b in run)
            joined = unicodedata.normalize("NFKC", joined).lower()
            if len(joined) <= _JOINED_MOST_CHARS and joined.isalnum():
                out.append((stem(joined), run[0][0], run[-1][1], False))
        run, hyphened = [], False

    for term in terms:
        word, start, end, unknown = term
        # ワイファイ's term is wifi too: the text itself must be Latin
        latin = word.isascii() and not unknown and unicodedata.normalize("NFKC", text[start - base : end - base]).isascii()
        gap = text[run[-1][1] - base : start - base] if run else None
        if latin and gap is not None and (gap == "" or gap in _JOINERS):
            hyphened = hyphened or gap != ""
            run.append((start, end))
        else:
            close()
            if latin:
                run = [(start, end)]
        out.append(term)
    close()
    return out
