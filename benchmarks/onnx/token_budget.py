"""Embedding throughput and memory against the token budget of a batch, on real passages.

    python benchmarks/onnx/token_budget.py [--budgets 1024 2048 4096 8192] [--texts 192] [--runs 3]

Each budget runs in a fresh process (onnxruntime's arena keeps its largest allocation, so peak
memory is only comparable between processes): the default model embeds `--texts` passages cut
from manpages-ja documents (up to 1,500 characters each, so 30 to 500 tokens), `runs` times;
it prints the median tokens/s and how much the process's peak RSS grew while embedding.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEV_SET = Path(__file__).resolve().parents[3] / "shared" / "eval" / "dev" / "manpages-ja"


def peak_mb() -> float:
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024


def measure(budget: int, count: int, runs: int) -> None:
    from oboyu.models.loading import load_default_embedder
    from oboyu.search.evaluate import read_jsonl

    embedder = load_default_embedder().load()
    docs = read_jsonl(DEV_SET / "docs.jsonl.gz")[:: 7][:count]
    texts = [embedder.passage_text(doc["text"][:1500]) for doc in docs]
    tokens = sum(len(e.ids) for e in embedder.tokenizer.encode_batch(texts))
    embedder.embed(texts[:4], token_budget=budget)
    before = peak_mb()
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        embedder.embed(texts, token_budget=budget)
        seconds.append(time.perf_counter() - started)
    print(f"{budget}\t{tokens / statistics.median(seconds):.0f}\t{peak_mb() - before:.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--texts", type=int, default=192)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.one:
        measure(args.one, args.texts, args.runs)
        return 0
    print("| token budget | tokens/s (median) | peak RSS growth MB |\n| ---: | ---: | ---: |")
    for budget in args.budgets:
        out = subprocess.run([sys.executable, __file__, "--one", str(budget), "--texts", str(args.texts),
                              "--runs", str(args.runs)], capture_output=True, text=True, check=True).stdout.split()
        print(f"| {out[0]} | {int(out[1]):,} | {out[2]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
