"""Progressive indexing on a large first index, as a person meets it: how soon after `oboyu index`
starts does a query from another process find a file of the folder, how long until every file is
searchable by its words, and how fast the meaning pass then makes vectors.

    python -m benchmarks.scale.progressive [--files 10000] [--meaning-seconds 120] [--work DIR]

The notes are cut from the dev sets' documents (manpages-ja, debian-reference): consecutive
paragraphs up to --note-chars characters each, so that their text is real Japanese and English.
`oboyu index` runs as a new process on the default model (built already) with an empty index and
an empty embedding cache. A second process asks `oboyu query WORD --mode keyword --json` over and
over; the first answer holding a file of the folder is the time to first results. The meaning
pass is watched for --meaning-seconds (its rate, and the ETA to full coverage), then the run is
interrupted with Ctrl+C (SIGINT) and resumed by `oboyu index`, which the benchmark also times
until the first vector it adds. Prints a Markdown table.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import harness
from benchmarks.corpora import write_notes
from oboyu.errors import IndexBusyError
from oboyu.index.store import open_for_reading
from oboyu.models.default.build import ensure_default_model
from oboyu.progress import format_duration

MEANING_PASS = "keyword search is ready"
PROBE = "ファイル"  # a word most notes hold


def keyword_hit(env: dict, db: Path, folder: Path) -> bool:
    done = subprocess.run([*harness.OBOYU, "query", PROBE, "--mode", "keyword", "--json", "--all",
                           "--db", str(db)], env=env, capture_output=True, text=True)
    try:
        return any(r["path"].startswith(str(folder)) for r in json.loads(done.stdout or "[]"))
    except json.JSONDecodeError:
        return False


def coverage(db: Path) -> tuple[int, int] | None:
    try:
        with open_for_reading(db, wait_seconds=5) as store:
            return store.vector_coverage()
    except (IndexBusyError, OSError):
        return None


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--note-chars", type=int, default=1_400, help="characters of text per note")
    parser.add_argument("--meaning-seconds", type=float, default=120.0, help="how long the meaning pass is watched")
    parser.add_argument("--work", type=Path, help="work folder (default: a temporary one, removed)")
    args = parser.parse_args()
    # a shell that starts this in the background ignores SIGINT, and the indexer would inherit
    # that and never stop: a handler here resets it to the default in the children
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = args.work or Path(tempfile.mkdtemp(prefix="oboyu-progressive-"))
    folder, db, cache = work / "notes", work / "index.duckdb", work / "cache"
    shutil.rmtree(folder, ignore_errors=True)
    db.unlink(missing_ok=True)
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    (cache / "models").symlink_to(ensure_default_model().parent, target_is_directory=True)
    size = write_notes(folder, args.files, args.note_chars)
    env = {**os.environ, "OBOYU_CACHE_DIR": str(cache)}

    started = time.perf_counter()
    indexer = subprocess.Popen([*harness.OBOYU, "index", str(folder), "--db", str(db)], env=env,
                               stderr=subprocess.PIPE, text=True)
    keyword_done: list[float] = []

    def read_stderr() -> None:
        assert indexer.stderr is not None
        for line in indexer.stderr:
            if line.startswith(MEANING_PASS) and not keyword_done:
                keyword_done.append(time.perf_counter() - started)

    threading.Thread(target=read_stderr, daemon=True).start()
    first = None
    while first is None and indexer.poll() is None:
        if db.exists() and keyword_hit(env, db, folder):
            first = time.perf_counter() - started
        else:
            time.sleep(0.5)
    while not keyword_done and indexer.poll() is None:
        time.sleep(0.2)
    meaning_start = coverage(db)
    t0 = time.perf_counter()
    time.sleep(args.meaning_seconds)
    meaning_end = coverage(db)
    t1 = time.perf_counter()
    indexer.send_signal(signal.SIGINT)
    indexer.wait()
    assert meaning_start is not None and meaning_end is not None
    rate = (meaning_end[0] - meaning_start[0]) / (t1 - t0)
    chunks = meaning_end[1]

    resume_started = time.perf_counter()
    resumed = subprocess.Popen([*harness.OBOYU, "index", "--db", str(db)], env=env,
                               stderr=subprocess.DEVNULL)
    before = meaning_end[0]
    while (now := coverage(db)) is None or now[0] <= before:
        time.sleep(0.2)
    resume_first = time.perf_counter() - resume_started
    resumed.send_signal(signal.SIGINT)
    resumed.wait()

    print(f"{args.files:,} notes ({size / 1e6:.1f} MB, {chunks:,} chunks); {harness.machine()}\n")
    print(harness.table_head(["measure", "measured"], "lr"))
    print(f"| first keyword result from another process | {first:.1f} s |" if first else "| first keyword result | none |")
    print(f"| every file searchable by its words (keyword pass) | {keyword_done[0]:.1f} s "
          f"({args.files / keyword_done[0]:,.0f} files/s, {chunks / keyword_done[0]:,.0f} chunks/s) |")
    print(f"| meaning pass rate (over {t1 - t0:.0f} s) | {rate:.1f} chunks/s |")
    print(f"| full meaning coverage at that rate (projected) | {format_duration(chunks / rate)} |")
    print(f"| interrupted, resumed: first new vector after | {resume_first:.1f} s |")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
