"""Keystroke-to-results latency of the interactive app, and its start to a usable frame.

    python -m benchmarks.speed.tui_latency --db INDEX [--queries ../shared/eval/dev/manpages-ja/queries.jsonl] [-n 40] [--gap 0.15]

Keystroke latency: the app runs headless under Textual's Pilot with the model loaded; each query
is typed one character at a time with --gap seconds between keys (a person's pace), and the
latency is the time from the last key to the results list showing that query's answer. Start:
`oboyu tui` in a real terminal (tmux), from launch until the search box is drawn, and until the
first query's results are drawn.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import time
from pathlib import Path

from textual.keys import _character_to_key  # how Pilot names a typed character

from benchmarks import harness
from oboyu.models.loading import load_default_embedder
from oboyu.modes import Mode
from oboyu.search.evaluate import read_queries
from oboyu.tui.app import OboyuApp


async def keystrokes(db: Path, queries: list[str], gap: float, mode: Mode) -> tuple[list[float], list[float]]:
    app = OboyuApp(db, load_default_embedder(), mode=mode)
    latencies, searches = [], []
    async with app.run_test(size=(120, 36)) as pilot:
        box = app.query_one("#query")
        for query in ["warm up", *queries]:
            box.value = ""
            await pilot.pause(0.3)
            for i, char in enumerate(query):
                if i == len(query) - 1:
                    last_key = time.perf_counter()
                await pilot.press(_character_to_key(char))
                if i < len(query) - 1:
                    await pilot.pause(gap)
            query = box.value  # a few punctuation marks (、) have no key Pilot can press
            deadline = time.monotonic() + 30
            while (app.shown is None or app.shown.query != query) and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            if app.shown is None or app.shown.query != query:
                raise SystemExit(f"no answer to {query!r} (typed {box.value!r})")
            if query != "warm up" and query:
                latencies.append((app.shown_at - last_key) * 1000)
                searches.append(app.last_search_seconds * 1000)
    return latencies, searches


def terminal_start(db: Path, query: str, runs: int) -> tuple[list[float], list[float]]:
    """Seconds from launching `oboyu tui` in tmux to the search box, and to the first results."""
    socket = f"oboyu-bench-{os.getpid()}"
    to_box, to_results = [], []
    for _ in range(runs):
        command = f"{shlex.join(harness.OBOYU)} tui --db {shlex.quote(str(db))}"
        started = time.perf_counter()
        socket = f"oboyu-bench-{os.getpid()}-{len(to_box)}"  # a fresh server each run
        subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "b", "-x", "120", "-y", "36", command], check=True)
        try:
            box = wait_screen(socket, "Search your documents", started)
            subprocess.run(["tmux", "-L", socket, "send-keys", "-t", "b", "-l", query], check=True)
            typed = time.perf_counter()
            wait_screen(socket, "Results · ", started)
            to_box.append(box)
            to_results.append(time.perf_counter() - typed)
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    return to_box, to_results


def wait_screen(socket: str, text: str, started: float, timeout: float = 120) -> float:
    while time.perf_counter() - started < timeout:
        screen = subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", "b"], capture_output=True, text=True).stdout
        if text in screen:
            return time.perf_counter() - started
        time.sleep(0.01)
    raise SystemExit(f"{text!r} did not appear within {timeout}s")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--db", type=Path, required=True, help="an index (e.g. of ../shared/eval/dev/manpages-ja)")
    parser.add_argument("--queries", type=Path, default=harness.dev_set("manpages-ja") / "queries.jsonl")
    parser.add_argument("-n", type=int, default=40, help="queries to type")
    parser.add_argument("--gap", type=float, default=0.15, help="seconds between keys")
    parser.add_argument("--mode", type=Mode, choices=list(Mode), default=Mode.HYBRID)
    parser.add_argument("--start-runs", type=int, default=5)
    args = parser.parse_args()
    queries = [q.text for q in read_queries(args.queries)[: args.n]]
    # the terminal runs first: after a Pilot run in this process, tmux sessions fail to start
    box, first = terminal_start(args.db, queries[0], args.start_runs)
    latencies, searches = asyncio.run(keystrokes(args.db, queries, args.gap, args.mode))
    print(f"keystroke to results ({args.mode}, {len(latencies)} queries, {args.gap * 1000:.0f} ms between keys): "
          f"{harness.latency(latencies)}; search alone p50 {harness.median(searches):.1f} ms")
    print(f"start in tmux ({len(box)} runs): search box drawn after median {harness.median(box):.2f} s "
          f"(min {min(box):.2f}, max {max(box):.2f}); first results {harness.median(first):.2f} s after typing "
          "(the model loads meanwhile)")


if __name__ == "__main__":
    main()
