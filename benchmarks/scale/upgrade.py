"""An upgrade at archive size: how long, and in how much memory, the first open of an index whose
keyword analysis changed takes to make its keyword index anew (`oboyu.index.reanalysis`).

    python -m benchmarks.scale.upgrade build OUT.duckdb --passages 1000000
    python -m benchmarks.scale.upgrade measure OUT.duckdb [--workers | --no-workers]

`build` writes an index of real text, no vectors needed (the upgrade reads passages only): the
development set manpages-ja's documents cut into pieces of 500 characters (at most 20 a document),
copied under new paths and ids until there are --passages, its keyword index emptied and its
schema set to 9, as an oboyu of that version left it. About 1.5 minutes a million passages.

`measure` CHANGES the file it is given (run it on a copy): opens it, which upgrades it, in a
process of its own, and prints the wall time and the peak resident memory of that process (the
workers, 0.2 GB each, are apart). `--workers` (the default) analyses as `oboyu` does, in worker
processes; `--no-workers` in the process alone, to measure what they add.
"""

from __future__ import annotations

import argparse  # BooleanOptionalAction
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import harness

PIECE_CHARS, PIECES_A_DOCUMENT = 500, 20
OPEN = """
import json, resource, sys, time
from pathlib import Path
from oboyu.index import reanalysis
from oboyu.index.store import Store
if __name__ == "__main__":  # a spawned worker imports this again
    reanalysis._may_spawn = lambda: sys.argv[2] == "workers"
    started = time.perf_counter()
    Store(Path(sys.argv[1])).close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps({"seconds": round(time.perf_counter() - started, 1), "peak_mb": peak}))
"""


def build(out: Path, passages: int) -> int:
    """A schema-9 index of at least `passages` passages at `out`; how many it holds."""
    from oboyu.index.records import ChunkRecord, DocumentRecord
    from oboyu.index.store import Store

    if out.exists():
        raise SystemExit(f"{out} exists; give a new path")
    batch = []
    for k, doc in enumerate(harness.dev_docs("manpages-ja")):
        text = doc.get("text") or ""
        pieces = [text[i : i + PIECE_CHARS] for i in range(0, len(text), PIECE_CHARS)][:PIECES_A_DOCUMENT]
        path = f"/corpus/d{k}.txt"
        records = [ChunkRecord(f"{path}#{i}", i, "", i + 1, i + 1, 0, len(p), p, {}) for i, p in enumerate(pieces)]
        batch.append((DocumentRecord(path, "/corpus", 1, 1, path, "utf-8", "text", doc.get("title")), records,
                      np.zeros((len(records), 4), dtype=np.float32)))
    with Store(out) as store:
        store.set_model("upgrade-benchmark", 4)
        store.write_documents(batch)
        con = store.con
        have = con.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
        last = con.execute("SELECT max(id) FROM documents").fetchone()[0]  # type: ignore[index]
        con.execute("CREATE TEMP TABLE d0 AS SELECT * FROM documents")
        con.execute("CREATE TEMP TABLE c0 AS SELECT * FROM chunks")
        for copy in range(1, -(-passages // have)):
            shift = copy * (last + 1)
            con.execute(f"INSERT INTO documents SELECT id + {shift}, path || '.{copy}', root, size, mtime_ns, sha256, "
                        "encoding, file_type, title, indexed_at FROM d0")
            con.execute(f"INSERT INTO chunks SELECT id || '.{copy}', document_id + {shift}, ordinal, heading, start_line, "
                        "end_line, start_char, end_char, text, page_start, page_end FROM c0")
        con.execute("DELETE FROM kw_postings")
        con.execute("DELETE FROM kw_lengths")
        con.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
        return con.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]


def measure(index: Path, workers: bool) -> dict:
    """Open (and so upgrade) `index` in a new process: its seconds and peak memory."""
    done = subprocess.run([sys.executable, "-c", OPEN, str(index), "workers" if workers else "alone"],
                          capture_output=True, text=True, cwd=harness.ROOT)
    if done.returncode:
        raise SystemExit(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = harness.parser(__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    making = commands.add_parser("build")
    making.add_argument("out", type=Path)
    making.add_argument("--passages", type=int, default=1_000_000)
    measuring = commands.add_parser("measure")
    measuring.add_argument("index", type=Path)
    measuring.add_argument("--workers", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    if args.command == "build":
        started = time.perf_counter()
        print(f"{build(args.out, args.passages):,} passages in {time.perf_counter() - started:.0f} s: {args.out}")
    else:
        print(json.dumps({**measure(args.index, args.workers), "workers": args.workers}))


if __name__ == "__main__":
    main()
