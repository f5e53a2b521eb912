"""How keyword search folds Japanese spellings: MeCab (UniDic lemmas, kana folded: what oboyu
ships) against Sudachi's normalized forms (sudachipy + sudachidict-core, split mode B), on the
development sets: keyword and hybrid quality, keyword index size, and tokenization speed.

    pip install sudachipy sudachidict-core      # only for this comparison
    python -m benchmarks.quality.keyword_normalizers [--sets personal debian-reference manpages-ja] [--db-dir /tmp]

Each set's index (`oboyu eval --db DIR/eval-SET.duckdb`, built here when absent) is copied, its keyword
postings rebuilt with each way of cutting words, and its queries run in keyword and hybrid mode.
Sudachi's words go through the same filters (particles, auxiliaries, symbols dropped; ASCII words
stemmed; katakana folded to hiragana).
"""

from __future__ import annotations

import shutil
import unicodedata
from collections import Counter
from pathlib import Path

import oboyu.documents.keywords as keywords
import oboyu.search.query as query
from benchmarks import harness
from oboyu.index import schema
from oboyu.index.store import Store
from oboyu.models.loading import load_default_embedder
from oboyu.modes import Mode
from oboyu.search.evaluate import evaluate

DROP = {"助詞", "助動詞", "補助記号", "記号", "空白"}


def sudachi_words():
    from sudachipy import Dictionary, SplitMode

    tokenizer = Dictionary(dict="core").tokenizer()

    def words(text: str) -> list[str]:
        out = []
        text = unicodedata.normalize("NFKC", text).lower()
        for start in range(0, len(text), 4000):  # Sudachi reads at most ~49 KB a call
            for m in tokenizer.tokenize(text[start : start + 4000], SplitMode.B):
                surface = m.surface()
                if not surface.strip() or keywords._PUNCT_ONLY.match(surface) or m.part_of_speech()[0] in DROP:
                    continue
                if surface.isascii():
                    out.append(keywords.stem(surface.lower()))
                else:
                    out.append(keywords.fold_kana(unicodedata.normalize("NFKC", m.normalized_form()).lower()))
        return out

    return words


def rebuild(db: Path, words) -> tuple[int, float]:
    """Keyword postings made anew with `words`; (postings, characters cut a second)."""
    spent, chars = [0.0], [0]

    def timed_counts(text: str) -> Counter[str]:
        counts, took = harness.timed(lambda: Counter(words(text)))
        spent[0] += took
        chars[0] += len(text)
        return counts

    schema.term_counts = timed_counts
    with Store(db) as store, store._transaction():
        store.con.execute("DELETE FROM kw_postings")
        store.con.execute("DELETE FROM kw_lengths")
        schema._index_keywords(store)
        store._bump_generation()
        (postings,) = store.con.execute("SELECT count(*) FROM kw_postings").fetchone() or (0,)
    return postings, chars[0] / spent[0]


def main() -> None:
    parser = harness.parser(__doc__)
    harness.add_dev_sets(parser)
    args = parser.parse_args()
    embedder = load_default_embedder()
    ways = {"MeCab + UniDic lemma (oboyu)": keywords.words, "Sudachi normalized form": sudachi_words()}
    print(harness.table_head(["set", "words", "keyword MRR@10", "keyword R@10", "hybrid MRR@10", "hybrid R@10", "postings", "chars/s"],
                             "llrrrrrr"))
    for name in args.sets:
        db = harness.eval_index(name, args.db_dir, embedder)
        for label, words in ways.items():
            copy = args.db_dir / f"normalizers-{name}.duckdb"
            shutil.copy(db, copy)
            postings, speed = rebuild(copy, words)
            query.words = words
            with Store(copy, read_only=True) as store:
                scores = {s.mode: s for s in evaluate(store, embedder, harness.dev_queries(name), [Mode.KEYWORD, Mode.HYBRID])}
            query.words = keywords.words
            print(harness.table_row([name, label, f"{scores['keyword'].mrr_at_10:.3f}", f"{scores['keyword'].recall_at_10:.3f}",
                                     f"{scores['hybrid'].mrr_at_10:.3f}", f"{scores['hybrid'].recall_at_10:.3f}", f"{postings:,}",
                                     f"{speed:,.0f}"]), flush=True)
            copy.unlink()


if __name__ == "__main__":
    main()
