"""Embedding throughput and memory against the token budget of a batch, on real passages.

    python -m benchmarks.speed.token_budget [--budgets 1024 2048 4096 8192] [--texts 192] [--runs 3]

Each budget runs in a fresh process (onnxruntime's arena keeps its largest allocation, so peak
memory is only comparable between processes): the default model embeds `--texts` passages cut
from manpages-ja documents (up to 1,500 characters each, so 30 to 500 tokens), `runs` times;
it prints the median tokens/s and how much the process's peak RSS grew while embedding.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from benchmarks import harness


def measure(budget: int, count: int, runs: int) -> None:
    from oboyu.models.loading import load_default_embedder

    embedder = load_default_embedder().load()
    docs = harness.dev_docs("manpages-ja")[:: 7][:count]
    texts = [embedder.passage_text(doc["text"][:1500]) for doc in docs]
    tokens = sum(len(e.ids) for e in embedder.tokenizer.encode_batch(texts))
    embedder.embed(texts[:4], token_budget=budget)
    before = harness.peak_rss_mb()
    seconds = harness.repeat(lambda: embedder.embed(texts, token_budget=budget), runs)
    print(f"{budget}\t{tokens / harness.median(seconds):.0f}\t{harness.peak_rss_mb() - before:.0f}")


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--budgets", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--texts", type=int, default=192)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.one:
        measure(args.one, args.texts, args.runs)
        return 0
    rows = []
    for budget in args.budgets:
        out = subprocess.run([sys.executable, "-m", __spec__.name, "--one", str(budget), "--texts", str(args.texts),
                              "--runs", str(args.runs)], cwd=harness.ROOT, capture_output=True, text=True, check=True).stdout.split()
        rows.append((out[0], f"{int(out[1]):,}", out[2]))
    print(harness.table(["token budget", "tokens/s (median)", "peak RSS growth MB"], rows, "rrr"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
