"""Index a development set from ../shared/eval (one file per document) and measure vector search.

    python benchmarks/eval_dev.py ../shared/eval/dev/manpages-ja [--work DIR] [--limit N]

Prints index time, chunk count and document-level Recall@1, Recall@10 and MRR@10 (a document
ranks by its best chunk; a query hits when its relevant document is in the top 10).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from oboyu.engine import load_default_embedder
from oboyu.indexer import Indexer
from oboyu.progress import ProgressLine
from oboyu.store import Store

CHUNKS_FETCHED = 200  # enough chunks to find the 10 best distinct documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--work", type=Path, help="folder for the files and the index (default: a temp dir)")
    parser.add_argument("--limit", type=int, help="only the first N queries")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="oboyu-eval-"))
    corpus = work / "docs"
    corpus.mkdir(parents=True, exist_ok=True)
    docs = [json.loads(line) for line in gzip.open(args.dataset / "docs.jsonl.gz", "rt", encoding="utf-8")]
    path_to_id = {}
    for doc in docs:
        path = corpus / f"{doc['id'].replace('/', '_')}.txt"
        path.write_text(doc["text"], encoding="utf-8")
        path_to_id[str(path.resolve())] = doc["id"]
    queries = [json.loads(line) for line in open(args.dataset / "queries.jsonl", encoding="utf-8")]
    if args.limit:
        queries = queries[: args.limit]

    embedder = load_default_embedder(ProgressLine())
    db = work / "index.duckdb"
    db.unlink(missing_ok=True)
    with Store(db) as store:
        stats = Indexer(store, embedder, ProgressLine()).index([corpus])
        _, chunks = store.counts()
        print(f"indexed {len(docs)} files, {chunks} chunks in {stats.seconds:.1f}s "
              f"({chunks / stats.seconds:.1f} chunks/s)")
        ranks, latencies = [], []
        for q in queries:
            started = time.perf_counter()
            vector = embedder.embed_queries([q["query"]])[0]
            hits = store.search(vector, CHUNKS_FETCHED)
            latencies.append(time.perf_counter() - started)
            ranked = list(dict.fromkeys(path_to_id[h.path] for h in hits))
            ranks.append(ranked.index(q["relevant_doc_id"]) + 1 if q["relevant_doc_id"] in ranked else None)
    n = len(ranks)
    recall1 = sum(1 for r in ranks if r == 1) / n
    recall10 = sum(1 for r in ranks if r and r <= 10) / n
    mrr10 = sum(1 / r for r in ranks if r and r <= 10) / n
    print(f"{n} queries: Recall@1 {recall1:.3f}  Recall@10 {recall10:.3f}  MRR@10 {mrr10:.3f}  "
          f"query p50 {statistics.median(latencies) * 1000:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
