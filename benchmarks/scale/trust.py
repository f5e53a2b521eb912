"""Two figures the trust issue asks for, measured as a person meets them:

1. `oboyu index` of a folder holding one 5,000-section Markdown file and one ordinary note, as a
   new process: wall time and peak RSS (median of --runs, a fresh index and embedding cache each).
2. MCP `read` latency under 50 concurrent calls, with an indexed file replaced by a FIFO and
   asked for among them: p50 / p95 / max of the calls for ordinary files, and how long the FIFO's
   refusals took.

    python -m benchmarks.scale.trust [--runs 3] [--sections 5000]

Prints a Markdown table. The model comes from the usual cache dir (built on first use).
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client import Client

from benchmarks import harness
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.mcp import OboyuTools, build_server
from oboyu.models.loading import load_default_embedder

EXAMPLES = harness.ROOT / "examples" / "notes"


def glossary(folder: Path, sections: int) -> None:
    lines = ["# 用語集", ""]
    for i in range(sections):
        lines += [f"## 用語 {i}", "", f"用語 {i} は、記録と検索のための第{i}の概念を指す。関連する手順は別紙を参照。", ""]
    (folder / "glossary.md").write_text("\n".join(lines), encoding="utf-8")
    (folder / "memo.md").write_text("# メモ\n\n会議の議事録を共有フォルダに置く。\n", encoding="utf-8")


def index_once(folder: Path, work: Path) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, summary line) of one `oboyu index` process."""
    env = dict(os.environ, OBOYU_DB=str(work / "index.duckdb"), OBOYU_EMBEDDING_CACHE=str(work / "cache.sqlite3"))
    started = time.perf_counter()
    child = subprocess.Popen([*harness.OBOYU, "index", str(folder)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    stderr = child.stderr.read() if child.stderr else ""
    if status != 0:
        raise SystemExit(f"oboyu index failed: {stderr}")
    summary = next(line for line in stderr.replace("\r", "\n").splitlines() if line.startswith("indexed in"))
    return seconds, usage.ru_maxrss / 1024, summary


def mcp_reads(work: Path) -> dict[str, float]:
    root = work / "notes"
    subprocess.run(["cp", "-r", str(EXAMPLES), str(root)], check=True)
    embedder = load_default_embedder().load()
    db = work / "mcp.duckdb"
    Indexer(IndexFile(db), embedder).index([root])
    hostile = root / "home" / "curry.txt"
    hostile.unlink()
    os.mkfifo(hostile)
    ordinary = [p for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".txt", ".html")]
    server = build_server(OboyuTools(db, embedder))
    times: dict[str, list[float]] = {"ordinary": [], "fifo": []}

    async def calls() -> None:
        async with Client(server) as client:
            async def read(path: Path, kind: str) -> None:
                started = time.perf_counter()
                await client.call_tool("read", {"path": str(path)})
                times[kind].append((time.perf_counter() - started) * 1000)

            async with anyio.create_task_group() as group:
                for i in range(50):
                    group.start_soon(read, hostile, "fifo") if i % 5 == 0 else \
                        group.start_soon(read, ordinary[i % len(ordinary)], "ordinary")

    anyio.run(calls)
    ordinary_ms, fifo_ms = sorted(times["ordinary"]), sorted(times["fifo"])
    return {"calls": len(ordinary_ms) + len(fifo_ms), "p50": harness.median(ordinary_ms),
            "p95": ordinary_ms[int(0.95 * (len(ordinary_ms) - 1))], "max": ordinary_ms[-1], "fifo_max": fifo_ms[-1]}


def main() -> None:
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the server logs each refused call
    parser = harness.parser(__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sections", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="oboyu-trust-") as tmp:
        folder = Path(tmp) / "folder"
        folder.mkdir()
        glossary(folder, args.sections)
        runs = []
        for run in range(args.runs):
            work = Path(tmp) / f"run{run}"
            work.mkdir()
            runs.append(index_once(folder, work))
        reads = mcp_reads(Path(tmp))
    seconds = [r[0] for r in runs]
    rss = [r[1] for r in runs]
    print(harness.table_head(["what", "figure"]))
    print(f"| `oboyu index` of one {args.sections:,}-section file and a note, {args.runs} runs | "
          f"median {harness.median(seconds):.1f} s ({', '.join(f'{s:.1f}' for s in seconds)}), "
          f"peak RSS median {harness.median(rss):.0f} MB ({', '.join(f'{m:.0f}' for m in rss)}); {runs[0][2]} |")
    print(f"| MCP `read`, {reads['calls']:.0f} concurrent calls, one indexed file replaced by a FIFO | ordinary files "
          f"p50 {reads['p50']:.1f} ms, p95 {reads['p95']:.1f} ms, max {reads['max']:.1f} ms; the FIFO refused in at most "
          f"{reads['fifo_max']:.1f} ms |")


if __name__ == "__main__":
    main()
