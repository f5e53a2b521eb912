"""What a `--path` filter costs a query: keyword searches of an index with a pattern, the first
(the matching files are found) and then the same filter again (found once per index state).

    python -m benchmarks.speed.path_filter INDEX.duckdb [--runs 3]

INDEX: e.g. the --db of `oboyu eval` on ../shared/eval/dev/manpages-ja (1,724 files).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import harness
from oboyu.index.store import Store
from oboyu.modes import Mode
from oboyu.search.filters import make_filters
from oboyu.search.query import search
from oboyu.search.rankers import SqlRanker

QUERIES = ["ファイル", "ディレクトリ", "プロセス", "ネットワーク", "権限", "設定", "表示", "削除", "圧縮", "検索"]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("db", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with Store(args.db, read_only=True) as store:
        for patterns in (["*.txt"], ["!a*"]):
            filters = make_filters(patterns)
            first = harness.seconds(lambda: search(SqlRanker(store), None, QUERIES[0], 10, filters, mode=Mode.KEYWORD)) * 1000
            times = [harness.seconds(lambda: search(SqlRanker(store), None, query, 10, filters, mode=Mode.KEYWORD)) * 1000
                     for _ in range(args.runs) for query in QUERIES]
            print(f"--path {' '.join(patterns)}: first query {first:.1f} ms, then p50 {harness.median(times):.1f} ms")


if __name__ == "__main__":
    main()
