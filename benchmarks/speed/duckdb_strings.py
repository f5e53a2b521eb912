"""Why `oboyu.index.columns` records pandas as absent while DuckDB reads oboyu's arrays: DuckDB
asks for pandas at every Python string of an object array, and where pandas is not installed each
ask is a failed import. Inserts two columns of 20,000 strings (one nullable) each way, alternated.

    python -m benchmarks.speed.duckdb_strings [--runs 5]
"""

from __future__ import annotations

import duckdb

from benchmarks import harness
from oboyu.index.columns import insert_columns, nullable_strings, objects


def insert(guarded: bool, n: int = 20_000) -> float:
    """Seconds of the insert alone (the arrays made first)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a VARCHAR, b VARCHAR)")
    texts = objects([f"chunk text number {i} 日本語" * 20 for i in range(n)])
    titles = nullable_strings([None if i % 3 else f"title {i}" for i in range(n)])

    def plain() -> None:  # the same insert without the guard
        for name, array in (("x1", texts), ("x2", titles.values), ("x3", titles.null)):
            con.register(name, array)
        con.execute("INSERT INTO t SELECT x1.column0, CASE WHEN x3.column0 THEN NULL ELSE x2.column0 END "
                    "FROM x1 POSITIONAL JOIN x2 POSITIONAL JOIN x3")

    seconds = harness.seconds((lambda: insert_columns(con, "t", [texts, titles])) if guarded else plain)
    assert con.execute("SELECT count(*), count(b) FROM t").fetchone() == (n, len(range(0, n, 3)))
    return seconds


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    times = harness.interleaved({"plain": lambda: insert(False), "guarded": lambda: insert(True)}, args.runs, measure=harness.call)
    plain, guarded = harness.median(times["plain"]), harness.median(times["guarded"])
    print(f"40,000 strings: plain {plain:.3f} s, guarded {guarded:.3f} s (median of {args.runs}): {plain / guarded:.1f}x")


if __name__ == "__main__":
    main()
