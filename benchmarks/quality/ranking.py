"""Ranking on every development collection: MRR@10, nDCG@10, Recall@1 and Recall@10 of the
answerable questions, per collection and mode, and their macro means (each collection weighing
the same). Whether hybrid ranks at least as well as vector is read per collection, not from the mean.

Collections: every development collection (benchmarks/collections.py), each indexed once into
--db-dir (transfer-NAME.duckdb, reused).

    python -m benchmarks.quality.ranking [--modes vector keyword hybrid] [--db-dir DIR] [--json NAME]
                                         [--chunk-tokens N] [--name-words stem|path]

`--chunk-tokens N` indexes with chunks of about N tokens instead of the shipped target (give it a
--db-dir of its own: indexes found there are used as they are). `--name-words` adds the words of
each file's name, or its path in the folder, to its keyword text (`quality.name_words`; a --db-dir
of its own too).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from benchmarks.collections import Collection, ask, collections, index_of
from benchmarks.harness import log, parser, table, write_json
from benchmarks.quality.name_words import add_name_words
from oboyu.modes import Mode
from oboyu.search.evaluate import QueryMetrics, ranking_metrics

METRICS = ("mrr_at_10", "ndcg_at_10", "recall_at_1", "recall_at_10")


def mode_metrics(collection: Collection, db: Path, embedder, mode: Mode) -> list[QueryMetrics]:
    """Each answerable question's metrics in one mode."""
    return [ranking_metrics([right for _, right in found], len(query.relevant))
            for _, query, found in ask(collection, db, embedder, mode, kinds=("answerable",))]


def collection_metrics(per_query: list[QueryMetrics]) -> dict[str, float]:
    return {m: round(statistics.fmean(getattr(q, m) for q in per_query), 4) if per_query else 0.0 for m in METRICS}


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--modes", nargs="+", default=["vector", "keyword", "hybrid"])
    p.add_argument("--db-dir", type=Path, default=Path(tempfile.gettempdir()) / "oboyu-transfer")
    p.add_argument("--json", metavar="NAME", help="also write benchmarks/results/NAME.json")
    p.add_argument("--chunk-tokens", type=int, help="index with this chunk target (tokens) instead of the shipped one")
    p.add_argument("--name-words", choices=["stem", "path"], help="add the file's name (or its path) to its keyword text")
    args = p.parse_args()
    if args.chunk_tokens:
        from oboyu.documents import chunking

        chunking.TARGET_TOKENS = args.chunk_tokens
    from oboyu.models.loading import load_default_embedder

    args.db_dir.mkdir(parents=True, exist_ok=True)
    embedder = load_default_embedder()
    modes = [Mode(m) for m in args.modes]
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for collection in collections():
        db = index_of(collection, args.db_dir, embedder)
        if args.name_words:
            add_name_words(db, args.name_words)
        figures[collection.name] = {}
        for mode in modes:
            per_query = mode_metrics(collection, db, embedder, mode)
            figures[collection.name][mode.value] = collection_metrics(per_query) | {"queries": len(per_query)}
        log(f"{collection.name}: " + ", ".join(f"{m}: {figures[collection.name][m]['ndcg_at_10']:.3f}" for m in args.modes))
    macro = {m: {k: round(statistics.fmean(f[m][k] for f in figures.values()), 4) for k in METRICS} for m in args.modes}
    rows = [[name, *(f"{f[m]['mrr_at_10']:.3f} / {f[m]['ndcg_at_10']:.3f}" for m in args.modes),
             "yes" if "hybrid" in f and "vector" in f and f["hybrid"]["mrr_at_10"] >= f["vector"]["mrr_at_10"] else "no"]
            for name, f in figures.items()]
    rows.append(["macro mean", *(f"{macro[m]['mrr_at_10']:.3f} / {macro[m]['ndcg_at_10']:.3f}" for m in args.modes), ""])
    print(table(["collection", *(f"{m} MRR@10 / nDCG@10" for m in args.modes), "hybrid ≥ vector (MRR)"], rows))
    if args.json:
        write_json(f"{args.json}.json", {"collections": figures, "macro": macro})


if __name__ == "__main__":
    main()
