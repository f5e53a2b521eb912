"""Where the time of one hybrid query goes, step by step, in one warm process.

    python benchmarks/search_breakdown.py INDEX.duckdb [--runs 3]

Runs four Japanese queries `runs` times each and prints the median of every step.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from oboyu.models.loading import load_default_embedder
from oboyu.documents.keywords import words
from oboyu.search.query import _best_per_file, fuse, make_snippet, search
from oboyu.index.store import Store

QUERIES = ["絶対パスを表示する", "ファイルをコピーする", "ネットワークインターフェースを設定する", "ソケットへの接続を受ける"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    embedder = load_default_embedder()
    times: dict[str, list[float]] = {}

    def timed(step, fn):
        started = time.perf_counter()
        value = fn()
        times.setdefault(step, []).append((time.perf_counter() - started) * 1000)
        return value

    with Store(args.db, read_only=True) as store:
        for query in QUERIES * args.runs:
            vector = timed("embed query", lambda: embedder.embed_queries([query])[0])
            by_vector = timed("vector leg", lambda: store.vector_scores(vector, 100))
            by_words = timed("keyword leg", lambda: store.keyword_scores(words(query), 100))
            fused = timed("fusion", lambda: fuse({"vector": by_vector, "keyword": by_words}, "hybrid"))
            chosen, _ = timed("group per file", lambda: _best_per_file(store.files_of_chunks, fused, 10))
            hits = timed("fetch passages", lambda: store.chunks_by_id([cid for cid, _ in chosen]))
            timed("snippets", lambda: [make_snippet(hit.text, query) for hit in hits.values()])
            timed("whole search()", lambda: search(store, embedder, query, 10))
    for step, values in times.items():
        print(f"{step:>16} {statistics.median(values):7.1f} ms")


if __name__ == "__main__":
    main()
