"""Incremental update speed on 10,000 files, as a person meets it: `oboyu index` processes on a
generated tree, then the watch mode's delay from a saved file to a search that finds it.

    python -m benchmarks.speed.reindex_speed [--files 10000] [--runs 5] [--work DIR]

Prints a Markdown table. The model comes from the usual cache dir (built on first use); the
index and the embedding cache live in the work dir, so the first index embeds everything.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import harness
from oboyu.errors import IndexBusyError
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.store import open_for_reading
from oboyu.models.loading import load_default_embedder
from oboyu.modes import Mode
from oboyu.search.query import search
from oboyu.search.rankers import SqlRanker

WORDS = ["議事録", "予算", "会議", "確定申告", "領収書", "バックアップ", "復元", "データベース", "玉ねぎ", "味噌", "旅行", "新幹線", "backup", "restore", "database", "meeting", "budget", "travel", "kernel", "network", "schedule", "invoice"]


def sentence(rng: random.Random) -> str:
    return "".join(rng.choice(WORDS) + "の" for _ in range(rng.randint(8, 20))) + "話。"


def make_tree(root: Path, files: int, rng: random.Random) -> list[Path]:
    paths = []
    for i in range(files):
        path = root / f"folder-{i % 100:02d}" / f"note-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# メモ {i}\n\n{sentence(rng)}\n", encoding="utf-8")
        paths.append(path)
    return paths


def oboyu(env: dict, *args: str) -> tuple[float, str]:
    """Wall seconds of one `oboyu` process, and the last line it wrote to stderr."""
    done, seconds = harness.timed(lambda: subprocess.run([*harness.OBOYU, *args], env=env, capture_output=True, text=True, check=True))
    return seconds, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def found(db: Path, embedder, word: str) -> bool:
    try:
        with open_for_reading(db, wait_seconds=2) as store:
            return any(word in r.snippet for r in search(SqlRanker(store), embedder, word, k=5, mode=Mode.KEYWORD))
    except IndexBusyError:
        return False


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=None, help="Work dir (default: a new temporary one).")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="oboyu-reindex-"))
    rng = random.Random(6)
    tree, db = work / "tree", work / "index.duckdb"
    env = dict(os.environ, OBOYU_DB=str(db), OBOYU_EMBEDDING_CACHE=str(work / "embeddings.sqlite3"))
    paths = make_tree(tree, args.files, rng)
    rows = []

    seconds, summary = oboyu(env, "index", str(tree))
    rows.append(("first index (everything embedded)", f"{seconds:.1f} s", summary))

    walls = [oboyu(env, "index")[0] for _ in range(args.runs)]
    rows.append(("update, nothing changed: `oboyu index` wall", f"{harness.median(walls):.2f} s", harness.runs_text(walls)))

    embedder = load_default_embedder()
    library = harness.repeat(lambda: Indexer(IndexFile(db), embedder).update(), args.runs)
    rows.append(("update, nothing changed: `Indexer.update()` in process", f"{harness.median(library):.2f} s", harness.runs_text(library)))

    walls, lines = [], []
    for _ in range(args.runs):
        for path in rng.sample(paths, 10):
            path.write_text(f"# 更新\n\n{sentence(rng)}\n", encoding="utf-8")
        seconds, summary = oboyu(env, "index")
        walls.append(seconds)
        lines.append(summary)
    rows.append(("update after editing 10 files: `oboyu index` wall (model load and embedding included)",
                 f"{harness.median(walls):.2f} s", harness.runs_text(walls) + "; " + lines[-1]))

    embed_seconds, totals = [], []
    original = embedder.embed_ids  # what the indexer's meaning pass calls, on token ids

    def timed_embed(token_ids, *a, **kw):
        started = time.perf_counter()
        try:
            return original(token_ids, *a, **kw)
        finally:
            embed_seconds[-1] += time.perf_counter() - started

    embedder.embed_ids = timed_embed
    for _ in range(args.runs):
        for path in rng.sample(paths, 10):
            path.write_text(f"# 再更新\n\n{sentence(rng)}\n", encoding="utf-8")
        embed_seconds.append(0.0)
        totals.append(harness.seconds(lambda: Indexer(IndexFile(db), embedder).update()))
    rest = [t - e for t, e in zip(totals, embed_seconds)]
    rows.append(("update after editing 10 files, in process: total", f"{harness.median(totals):.2f} s", harness.runs_text(totals)))
    rows.append(("  of which embedding", f"{harness.median(embed_seconds):.2f} s", harness.runs_text(embed_seconds)))
    rows.append(("  the rest (crawl, compare, read, store)", f"{harness.median(rest):.2f} s", harness.runs_text(rest)))

    watcher = subprocess.Popen([*harness.OBOYU, "index", "--watch", "-q"], env=env,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert watcher.stderr.readline().startswith("watching"), "the watcher did not start"
        delays = []
        for trial in range(args.runs):
            word = f"watchword{trial}x{rng.randrange(10**6)}"
            target = tree / "folder-00" / f"{word}.md"
            started = time.perf_counter()
            target.write_text(f"# 新しいメモ\n\n{word} を探す。\n", encoding="utf-8")
            while not found(db, embedder, word):
                time.sleep(0.02)
            delays.append(time.perf_counter() - started)
        rows.append(("watch: file saved to found by a search (small file, embedding included)",
                     f"{harness.median(delays):.2f} s", harness.runs_text(delays)))
    finally:
        watcher.terminate()
        watcher.wait()

    print(f"{args.files:,} files under {tree}\n")
    print(harness.table(["measure", "median", "runs / notes"], rows, "lrl"))


if __name__ == "__main__":
    main()
