"""A warm process's memory while it answers `oboyu query`, and how long each handed-off query
takes end to end: starts `oboyu serve` on an index (the example notes, indexed into a temporary
one, unless --db), hands it N queries one after another as new `oboyu query` processes, and
reports its resident memory, how many MeCab dictionaries it has mapped, and the queries' wall
time (p50 / p95 since the checkpoint before) at each checkpoint. A process that answers all day
must stay flat (a user trial: 3.8 GB after 145 queries, a dictionary more a query, until taggers
were pooled). Linux only (/proc).

    python -m benchmarks.speed.serve_memory [--db INDEX] [--queries 20 40 80] [--command OBOYU]
        [--questions QUERIES.jsonl]

--questions: a development set's questions (its `query` fields, in order) instead of `予定 N`,
which no passage of a large index answers (so every one runs the token match on a new passage).

--command: the `oboyu` a person runs (e.g. `~/.local/bin/oboyu`, installed by pipx or uv); by
default `python -m oboyu.cli` of this checkout, whose editable install adds about 35 ms to each
Python start (its import finder).
"""

from __future__ import annotations

import json
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
    p.add_argument("--questions", type=Path, help="a queries.jsonl whose `query` fields are asked in order")
    args = p.parse_args()
    questions = [json.loads(line)["query"] for line in args.questions.read_text(encoding="utf-8").splitlines()
                 if line.strip()] if args.questions else []
    if questions and len(questions) < max(args.queries):
        sys.exit(f"{args.questions} holds {len(questions)} questions, fewer than {max(args.queries)}")
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
                    subprocess.run([*oboyu, "query", questions[asked] if questions else f"予定 {asked}", "-k", "1"], env=env, capture_output=True, check=False)
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
