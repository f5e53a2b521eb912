"""How much of a result's confidence should order hybrid's best files: each share's MRR@10 on the
dev sets' queries and on keyword-style queries (`benchmarks.quality.keyword_style`).

Each query is searched once with fusion alone (the share set to 0); its ten best files are then
re-ordered by fusion plus each share of their confidence, as `search()` does with
`CONFIDENCE_SHARE`. A share of "alone" orders by the confidence only.

    python -m benchmarks.quality.confidence_share [--sets personal debian-reference manpages-ja] [--db-dir /tmp]

The index of each set is the one `oboyu eval --db DIR/eval-SET.duckdb` makes (built here when absent).
"""

from __future__ import annotations

from benchmarks import harness
from benchmarks.corpora import keyword_queries
from oboyu.index.store import Store
from oboyu.models.loading import load_default_embedder
from oboyu.search import query as hybrid
from oboyu.search.evaluate import doc_id_of
from oboyu.search.resident import ResidentIndex

SHARES = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0, None)  # None: the confidence alone


def mrr_by_share(resident: ResidentIndex, embedder, queries: list[tuple[str, set[str]]]) -> list[float]:
    totals = [0.0] * len(SHARES)
    for text, relevant in queries:
        results = hybrid.search(resident, embedder, text, 10)
        for i, share in enumerate(SHARES):
            key = (lambda r: -r.confidence) if share is None else (lambda r, share=share: -(r.ranking_score + share * r.confidence))
            ranked = [doc_id_of(r.path) for r in sorted(results, key=key)]
            totals[i] += next((1 / rank for rank, doc in enumerate(ranked, start=1) if doc in relevant), 0.0)
    return [total / len(queries) for total in totals]


def main() -> None:
    parser = harness.parser(__doc__)
    harness.add_dev_sets(parser)
    args = parser.parse_args()
    hybrid.CONFIDENCE_SHARE = 0.0  # fusion alone; the shares are applied here
    embedder = load_default_embedder()
    print(harness.table_head(["set", "queries", *("alone" if s is None else f"{s:g}" for s in SHARES)], "lr" + "r" * len(SHARES)))
    for name in args.sets:
        db = harness.eval_index(name, args.db_dir, embedder)
        asked = [(q.text, set(q.relevant)) for q in harness.dev_queries(name)]
        checks = [(name, asked)]
        if name != "personal":
            checks.append((f"{name}, keyword-style", [(text, {doc}) for text, doc in keyword_queries(name, 400)]))
        with Store(db, read_only=True) as store:
            resident = ResidentIndex().refresh(store)
            for label, queries in checks:
                scores = mrr_by_share(resident, embedder, queries)
                print(harness.table_row([label, len(queries), *(f"{s:.3f}" for s in scores)]), flush=True)


if __name__ == "__main__":
    main()
