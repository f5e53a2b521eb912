"""Does Ctrl+C always end `oboyu index` as "oboyu: interrupted", exit status 130? SIGINT is sent
to a real `python -m oboyu.cli index` at a random moment (while the commands load, the model
starts, files are read, vectors are made, or after the run has finished), each run with a fresh
index and embedding cache, and the endings are counted.

    python -m benchmarks.hardening.ctrl_c [--runs 50] [--files 24] [--latest 4.0] [--seed N]

Good endings: 130 with the one line, or 0 when the run finished first. Anything else (another
status, a death by the signal, a segmentation fault, a traceback, "unexpected error", or a run
still there 120 s after the signal: a deadlock, then killed) is printed
with the moment and what the run said last, and the script exits 1.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

HUNG_AFTER_SECONDS = 120  # a run still there this long after the signal is killed and counted as hung
HUNG = -1000
WORDS = ("検索", "文書", "メモ", "backup", "手順", "設定", "ファイル", "会議", "議事録", "引っ越し")


def make_notes(folder: Path, files: int, rng: random.Random) -> None:
    folder.mkdir(parents=True)
    for i in range(files):
        paragraphs = (" ".join(rng.choice(WORDS) for _ in range(60)) for _ in range(8))
        (folder / f"note{i}.md").write_text(f"# メモ {i}\n\n" + "\n\n".join(paragraphs), encoding="utf-8")


def interrupted_run(notes: Path, work: Path, delay: float) -> tuple[int, str]:
    env = dict(os.environ, OBOYU_DB=str(work / "index.duckdb"), OBOYU_EMBEDDING_CACHE=str(work / "cache.sqlite3"),
               OBOYU_NO_HANDOFF="1")
    process = subprocess.Popen([sys.executable, "-m", "oboyu.cli", "index", str(notes)], env=env, cwd=harness.ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=HUNG_AFTER_SECONDS)
    except subprocess.TimeoutExpired:  # a deadlock: what the signal left stuck
        process.kill()
        _, err = process.communicate()
        return HUNG, err
    return process.returncode, err


def ending(code: int, err: str) -> str:
    if code == 130 and err.endswith("oboyu: interrupted\n") and "Traceback" not in err:
        return "130, interrupted"
    if code == 0 and "indexed in" in err:
        return "0, finished first"
    if code == HUNG:
        return f"hung (killed after {HUNG_AFTER_SECONDS} s), other"
    return f"{code}, other"


def main() -> None:
    p = harness.parser(__doc__)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--files", type=int, default=24)
    p.add_argument("--latest", type=float, default=4.0, help="the latest moment (seconds) a signal is sent")
    p.add_argument("--seed", type=int, default=20261128)
    args = p.parse_args()
    rng = random.Random(args.seed)
    counts: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        notes = Path(tmp) / "notes"
        make_notes(notes, args.files, rng)
        for run in range(args.runs):
            work = Path(tmp) / f"run{run}"
            work.mkdir()
            delay = rng.uniform(0.05, args.latest)
            code, err = interrupted_run(notes, work, delay)
            kind = ending(code, err)
            counts[kind] += 1
            if kind.endswith("other"):
                harness.log(f"run {run}, SIGINT at {delay:.2f} s: exit {code}; it said: {err[-400:]!r}")
    print(harness.table(["ending", "runs"], [[kind, n] for kind, n in counts.most_common()]))
    sys.exit(1 if any(kind.endswith("other") for kind in counts) else 0)


if __name__ == "__main__":
    main()
