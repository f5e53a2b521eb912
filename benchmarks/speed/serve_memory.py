"""A warm process's memory while it answers `oboyu query`, and how long each handed-off query
takes end to end: starts `oboyu serve` on an index (the example notes, indexed into a temporary
one, unless --db), hands it N queries one after another as new `oboyu query` processes, and
reports its resident memory, how many MeCab dictionaries it has mapped, and the queries' wall
time (p50 / p95 since the checkpoint before) at each checkpoint. A process that answers all day
must stay flat (a user trial: 3.8 GB after 145 queries, a dictionary more a query, until taggers
were pooled). Linux only (/proc).

    python -m benchmarks.speed.serve_memory [--db INDEX] [--queries 20 40 80] [--command OBOYU]

--command: the `oboyu` a person runs (e.g. `~/.local/bin/oboyu`, installed by pipx or uv); by
default `python -m oboyu.cli` of this checkout, whose editable install adds about 35 ms to each
Python start (its import finder).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import OBOYU, ROOT, log, median, p95, parser, table


def resident_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def dictionaries(pid: int) -> int:
    return sum("sys.dic" in line for line in Path(f"/proc/{pid}/maps").read_text().splitlines())


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--db", type=Path, help="an index (default: the example notes, indexed into a temporary one)")
    p.add_argument("--queries", type=int, nargs="+", default=[20, 40, 80], help="checkpoints: queries answered")
    p.add_argument("--command", help="the oboyu command to run (default: python -m oboyu.cli)")
    args = p.parse_args()
    oboyu = [args.command] if args.command else list(OBOYU)
    if not sys.platform.startswith("linux"):
        sys.exit("serve_memory reads /proc: Linux only")
    with tempfile.TemporaryDirectory(prefix="oboyu-serve-memory-") as tmp:
        env = dict(os.environ, OBOYU_DB=str(args.db or Path(tmp) / "index.duckdb"))
        env.pop("OBOYU_NO_HANDOFF", None)
        if args.db is None:
            subprocess.run([*oboyu, "index", str(ROOT / "examples" / "notes"), "-q"], env=env, check=True)
        server = subprocess.Popen([*oboyu, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            assert server.stderr is not None
            server.stderr.readline()  # `oboyu: serving ...`: listening
            rows = [["0 (started)", f"{resident_mb(server.pid):.0f}", dictionaries(server.pid), "-"]]
            asked = 0
            for checkpoint in sorted(args.queries):
                times = []
                while asked < checkpoint:
                    started = time.perf_counter()
                    subprocess.run([*oboyu, "query", f"予定 {asked}", "-k", "1"], env=env, capture_output=True, check=False)
                    times.append((time.perf_counter() - started) * 1000)
                    asked += 1
                time.sleep(0.2)
                rows.append([str(checkpoint), f"{resident_mb(server.pid):.0f}", dictionaries(server.pid),
                             f"{median(times):.1f} / {p95(times):.1f}" if times else "-"])
                log(f"{checkpoint} queries: {rows[-1][1]} MB, {rows[-1][2]} dictionaries, {rows[-1][3]} ms")
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(table(["queries answered", "resident MB", "MeCab dictionaries mapped", "query p50 / p95 ms"], rows, "rrrr"))


if __name__ == "__main__":
    main()
