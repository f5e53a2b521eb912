"""What a `--path` filter costs a query: keyword searches of an index with a pattern, the first
(the matching files are found) and then the same filter again (found once per index state).

    .venv/bin/python benchmarks/path_filter.py INDEX.duckdb [--runs 3]

INDEX: e.g. the --db of `oboyu eval` on ../shared/eval/dev/manpages-ja (1,724 files).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from oboyu.index.store import Store
from oboyu.search.filters import make_filters
from oboyu.search.query import search

QUERIES = ["ファイル", "ディレクトリ", "プロセス", "ネットワーク", "権限", "設定", "表示", "削除", "圧縮", "検索"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with Store(args.db, read_only=True) as store:
        for patterns in (["*.txt"], ["!a*"]):
            filters = make_filters(patterns)
            started = time.perf_counter()
            search(store, None, QUERIES[0], 10, filters, mode="keyword")
            first = (time.perf_counter() - started) * 1000
            times = []
            for _ in range(args.runs):
                for query in QUERIES:
                    started = time.perf_counter()
                    search(store, None, query, 10, filters, mode="keyword")
                    times.append((time.perf_counter() - started) * 1000)
            print(f"--path {' '.join(patterns)}: first query {first:.1f} ms, then p50 {statistics.median(times):.1f} ms")


if __name__ == "__main__":
    main()
