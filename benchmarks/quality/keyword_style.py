"""Keyword-style queries: 2–3 content words drawn from a document's title, as people type into a
search box, and whether hybrid search beats plain reciprocal rank fusion on them.

For each document with a title, its nouns (MeCab) are sampled (a fixed seed) into a query of 2 or
3 words; the document is the one relevant answer. Each query is run as oboyu's hybrid search and
as plain RRF (k = 60) of the same vector and keyword legs, one result per file; MRR@10 and
Recall@10 of both are printed.

    python -m benchmarks.quality.keyword_style [--sets debian-reference manpages-ja] [--db-dir /tmp] [--queries 400]

The index of each set is the one `oboyu eval --db DIR/eval-SET.duckdb` makes (built here when absent).
"""

from __future__ import annotations

from benchmarks import harness
from benchmarks.corpora import keyword_queries
from oboyu.documents.keywords import words
from oboyu.index.store import Store
from oboyu.models.loading import load_default_embedder
from oboyu.modes import Mode
from oboyu.search.evaluate import doc_id_of
from oboyu.search.fusion import rrf
from oboyu.search.query import CANDIDATES, rank_chunks, search
from oboyu.search.resident import ResidentIndex


def reciprocal_rank(ranked: list[str], relevant: str) -> float:
    return next((1 / i for i, doc in enumerate(ranked[:10], start=1) if doc == relevant), 0.0)


def main() -> None:
    parser = harness.parser(__doc__)
    harness.add_dev_sets(parser, ["debian-reference", "manpages-ja"])
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    embedder = load_default_embedder()
    print(harness.table_head(["set", "queries", "hybrid MRR@10", "RRF MRR@10", "hybrid R@10", "RRF R@10"], "lrrrrr"))
    for name in args.sets:
        db = harness.eval_index(name, args.db_dir, embedder)
        queries = keyword_queries(name, args.queries)
        with Store(db, read_only=True) as store:
            resident = ResidentIndex().refresh(store)
            scores = {"hybrid": [0.0, 0.0], "rrf": [0.0, 0.0]}
            for text, relevant in queries:
                hybrid = [doc_id_of(r.path) for r in search(resident, embedder, text, 10, mode=Mode.HYBRID)]
                legs = rank_chunks(resident, embedder, text, words(text), CANDIDATES, None, Mode.HYBRID)
                files = resident.files_of_chunks([cid for leg in ("vector", "keyword") for cid, _ in legs[leg]])
                fused = rrf({leg: legs[leg] for leg in ("vector", "keyword")})
                plain = list(dict.fromkeys(doc_id_of(files[cid]) for cid, _ in fused if cid in files))
                for key, ranked in (("hybrid", hybrid), ("rrf", plain)):
                    scores[key][0] += reciprocal_rank(ranked, relevant)
                    scores[key][1] += relevant in ranked[:10]
            n = len(queries)
            print(harness.table_row([name, n, f"{scores['hybrid'][0] / n:.3f}", f"{scores['rrf'][0] / n:.3f}",
                                     f"{scores['hybrid'][1] / n:.3f}", f"{scores['rrf'][1] / n:.3f}"]), flush=True)


if __name__ == "__main__":
    main()
