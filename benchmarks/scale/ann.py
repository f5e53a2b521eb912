"""Approximate nearest neighbours for archives past the exact scan's reach (a few million
passages): which library, measured. Each candidate indexes the same vectors and answers the same
real queries, one at a time on this machine's cores, against the exact top ten.

    python -m benchmarks.scale.ann make OUT.npy --rows 1000000
    python -m benchmarks.scale.ann measure OUT.npy [--queries 200] [--only usearch-i8,faiss-ivf] [--json NAME]

`make` writes --rows vectors (float16, row-major, 384 a row) that look like passages of real
documents: the 15,921 distinct passage vectors of the development collections' indexes (from
--db-dir, as `benchmarks.quality.ranking` makes them) are the seeds, and each new vector lies
between a seed and one of its ten nearest seeds (a uniform point on the segment, as SMOTE
makes samples), plus noise shaped like the seeds' own covariance (scale 0.6), normalised. So
rows fill the space the real passages span instead of piling up as copies: at 7,960 rows, their
nearest neighbours' cosines are close to real passages' (printed by `make`). An estimate of an
archive's vectors, not one: embedding a million distinct passages takes days on 2 cores.

`measure` asks --queries questions of the development sets (embedded by the default model as
queries), finds each one's exact top ten over all rows (float32 products, in blocks), then for
each candidate: build seconds, the process's memory growth, the index's bytes on disk, and per
query latency (p50, p95) and recall@10 against the exact top ten at each search setting.
usearch is a dependency; faiss-cpu comes with the `bench` extra: a missing one is said and left out.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from benchmarks import harness

DIMENSIONS = 384
BLOCK = 262_144  # rows generated, added or scanned at a time
NEIGHBOURS = 10
NOISE = 0.6  # matches real passages: nearest-neighbour cosine median 0.934 against 0.931 (see `make`)
SEED = 20261128


def seed_vectors(db_dir: Path) -> np.ndarray:
    """The distinct passage vectors of every development collection's index in `db_dir`."""
    import duckdb

    found = []
    for db in sorted(db_dir.glob("transfer-*.duckdb")):
        with duckdb.connect(str(db), read_only=True) as con:
            found.append(np.stack(con.execute("SELECT vector FROM embeddings").fetchnumpy()["vector"]))
    if not found:
        raise SystemExit(f"no transfer-*.duckdb in {db_dir}: `python -m benchmarks.quality.ranking --db-dir {db_dir}` makes them")
    seeds = np.vstack(found).astype(np.float32)
    seeds /= np.linalg.norm(seeds, axis=1, keepdims=True)
    return np.unique(seeds.round(5), axis=0)


def nearest_seeds(seeds: np.ndarray, k: int) -> np.ndarray:
    """Each seed's k nearest other seeds, by cosine."""
    out = np.empty((len(seeds), k), np.int64)
    for start in range(0, len(seeds), 4096):
        scores = seeds[start : start + 4096] @ seeds.T
        scores[np.arange(len(scores)), np.arange(start, start + len(scores))] = -2.0
        out[start : start + len(scores)] = np.argpartition(-scores, k, axis=1)[:, :k]
    return out


def synthetic(seeds: np.ndarray, rows: int, seed: int = SEED) -> Iterator[np.ndarray]:
    """`rows` vectors in blocks, each between a seed and a near seed, with covariance-shaped noise."""
    rng = np.random.default_rng(seed)
    near = nearest_seeds(seeds, NEIGHBOURS)
    centred = seeds - seeds.mean(axis=0)
    shape = np.linalg.cholesky(np.cov(centred.T) + 1e-6 * np.eye(DIMENSIONS)).astype(np.float32)
    made = 0
    while made < rows:
        n = min(BLOCK, rows - made)
        a = rng.integers(0, len(seeds), n)
        b = near[a, rng.integers(0, NEIGHBOURS, n)]
        t = rng.random((n, 1), dtype=np.float32)
        block = seeds[a] + t * (seeds[b] - seeds[a]) + NOISE * (rng.standard_normal((n, DIMENSIONS), dtype=np.float32) @ shape.T)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        made += n
        yield block


def nn_cosines(vectors: np.ndarray) -> np.ndarray:
    scores = vectors @ vectors.T
    np.fill_diagonal(scores, -2.0)
    return scores.max(axis=1)


def make(args) -> None:
    seeds = seed_vectors(args.db_dir)
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(seeds))
    half, other = seeds[order[: len(seeds) // 2]], seeds[order[len(seeds) // 2 :]]
    sample = np.vstack(list(synthetic(half, len(other), SEED + 1)))
    real, made = (np.percentile(nn_cosines(x), [10, 50, 90]).round(3).tolist() for x in (other, sample))
    harness.log(f"nearest neighbour's cosine at {len(other):,} rows (p10, p50, p90): real passages {real}, made from "
                f"the other half {made}")
    rows = np.lib.format.open_memmap(args.out, mode="w+", dtype=np.float16, shape=(args.rows, DIMENSIONS))
    done = 0
    for block in synthetic(seeds, args.rows):
        rows[done : done + len(block)] = block
        done += len(block)
        harness.log(f"{done:,} / {args.rows:,} rows")
    rows.flush()


def real_queries(count: int) -> np.ndarray:
    from benchmarks.collections import collections
    from oboyu.models.loading import load_default_embedder

    texts = [q.text for c in collections() for q in c.answerable + c.near + c.off]
    texts = texts[:: max(1, len(texts) // count)][:count]
    return load_default_embedder().embed_queries(texts).astype(np.float32)


def exact_top(rows: np.ndarray, queries: np.ndarray, k: int = 10) -> np.ndarray:
    """Each query's k best rows by float32 cosine, over all rows in blocks."""
    best_scores = np.full((len(queries), k), -np.inf, np.float32)
    best_rows = np.zeros((len(queries), k), np.int64)
    for start in range(0, len(rows), BLOCK):
        scores = queries @ np.asarray(rows[start : start + BLOCK], np.float32).T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        merged_scores = np.hstack([best_scores, np.take_along_axis(scores, top, axis=1)])
        merged_rows = np.hstack([best_rows, top + start])
        keep = np.argsort(-merged_scores, axis=1)[:, :k]
        best_scores, best_rows = np.take_along_axis(merged_scores, keep, 1), np.take_along_axis(merged_rows, keep, 1)
    return best_rows


class Candidate:
    """One library's index: built from row blocks, searched one query at a time at a setting."""

    name = ""
    settings: tuple = ()

    def build(self, blocks: Callable[[], Iterator[tuple[int, np.ndarray]]], rows: int) -> None: ...

    def search(self, query: np.ndarray, setting, k: int) -> np.ndarray: ...

    def save(self, folder: Path) -> int:
        return 0


class Usearch(Candidate):
    def __init__(self, dtype: str):
        from usearch.index import Index

        self.name, self.settings = f"usearch HNSW {dtype}", (256, 512, 1024, 2048, 4096)
        self.index = Index(ndim=DIMENSIONS, metric="cos", dtype=dtype, connectivity=16, expansion_add=128)

    def build(self, blocks, rows):
        for start, block in blocks():
            self.index.add(np.arange(start, start + len(block), dtype=np.uint64), block, threads=0)

    def search(self, query, setting, k):
        self.index.expansion_search = max(setting, k)
        return self.index.search(query, k, threads=1).keys

    def save(self, folder):
        self.index.save(str(folder / "usearch.index"))
        return (folder / "usearch.index").stat().st_size


class FaissIvf(Candidate):
    def __init__(self, rows: int):
        import faiss

        faiss.omp_set_num_threads(2)
        self.faiss = faiss
        lists = int(4 * np.sqrt(rows))
        self.name, self.settings = f"faiss IVF{lists},SQ8", (32, 64, 128, 256)
        self.index = faiss.index_factory(DIMENSIONS, f"IVF{lists},SQ8", faiss.METRIC_INNER_PRODUCT)

    def build(self, blocks, rows):
        first = next(blocks())[1]
        self.index.train(first[: min(len(first), 100_000)])
        for start, block in blocks():
            self.index.add_with_ids(block, np.arange(start, start + len(block), dtype=np.int64))

    def search(self, query, setting, k):
        self.index.nprobe = setting
        return self.index.search(query[None, :], k)[1][0]

    def save(self, folder):
        self.faiss.write_index(self.index, str(folder / "faiss.index"))
        return (folder / "faiss.index").stat().st_size


class FaissHnsw(Candidate):
    def __init__(self):
        import faiss

        faiss.omp_set_num_threads(2)
        self.faiss = faiss
        self.name, self.settings = "faiss HNSW32,SQ8", (64, 128, 256, 512)
        self.index = faiss.index_factory(DIMENSIONS, "HNSW32,SQ8", faiss.METRIC_INNER_PRODUCT)

    def build(self, blocks, rows):
        first = next(blocks())[1]
        self.index.train(first[: min(len(first), 100_000)])
        for _, block in blocks():
            self.index.add(block)

    def search(self, query, setting, k):
        self.index.hnsw.efSearch = max(setting, k)
        return self.index.search(query[None, :], k)[1][0]

    def save(self, folder):
        self.faiss.write_index(self.index, str(folder / "faiss.index"))
        return (folder / "faiss.index").stat().st_size


CANDIDATES: dict[str, Callable[[int], Candidate]] = {
    "usearch-i8": lambda rows: Usearch("i8"),
    "usearch-f16": lambda rows: Usearch("f16"),
    "faiss-ivf": FaissIvf,
    "faiss-hnsw": lambda rows: FaissHnsw(),
}


def rss_mb() -> float:
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024


def measure(args) -> None:
    """The exact top ten once, then each candidate in a process of its own: usearch and faiss
    loaded in one process crash it (a segmentation fault in faiss's training, whichever is first)."""
    import json
    import subprocess
    import sys

    rows = np.load(args.vectors, mmap_mode="r")
    queries = real_queries(args.queries)
    truth, exact_seconds = harness.timed(lambda: exact_top(rows, queries))
    harness.log(f"exact top ten of {len(queries)} queries over {len(rows):,} rows in {exact_seconds:.1f} s")
    report = {"rows": len(rows), "queries": len(queries), "machine": harness.machine(), "candidates": []}
    with tempfile.TemporaryDirectory(prefix="oboyu-ann-", dir=args.scratch) as tmp:
        asked = Path(tmp) / "asked.npz"
        np.savez(asked, queries=queries, truth=truth)
        for key in args.only.split(",") if args.only else CANDIDATES:
            done = subprocess.run([sys.executable, "-m", "benchmarks.scale.ann", "candidate", key, str(args.vectors), str(asked),
                                   "--rescore", str(args.rescore)],
                                  stdout=subprocess.PIPE, text=True)
            if done.returncode == 0 and done.stdout.strip():
                report["candidates"].append(json.loads(done.stdout))
            elif done.returncode != 0:
                harness.log(f"{key}: failed (exit {done.returncode})")
    if args.json:
        harness.write_json(args.json, report)


def candidate(args) -> None:
    """One candidate, built and asked; its figures as one JSON object on stdout."""
    import json

    rows = np.load(args.vectors, mmap_mode="r")
    asked = np.load(args.asked)
    queries, truth = asked["queries"], asked["truth"]
    try:
        chosen = CANDIDATES[args.key](len(rows))
    except ImportError as missing:
        harness.log(f"{args.key}: left out ({missing.name} is not installed; `pip install -e .[bench]` installs it)")
        return

    def blocks() -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, len(rows), BLOCK):
            yield start, np.asarray(rows[start : start + BLOCK], np.float32)

    before = rss_mb()
    _, build_seconds = harness.timed(lambda: chosen.build(blocks, len(rows)))
    memory = rss_mb() - before
    with tempfile.TemporaryDirectory(prefix="oboyu-ann-", dir=args.asked.parent) as tmp:
        size = chosen.save(Path(tmp))
    harness.log(f"{chosen.name}: built in {build_seconds:.0f} s, +{memory:.0f} MB resident, {size:,} bytes saved")
    entry = {"name": chosen.name, "build_s": round(build_seconds, 1), "memory_mb": round(memory), "bytes": size, "settings": []}
    for setting in chosen.settings:
        for query in queries[:5]:
            chosen.search(query, setting, args.rescore or 10)  # warm
        latencies, hits = [], 0
        for query, expected in zip(queries, truth):
            started = time.perf_counter()
            found = np.asarray(chosen.search(query, setting, args.rescore or 10), np.int64)
            if args.rescore:  # the best candidates scored exactly, as oboyu rescores its first pass's
                found = found[found >= 0]
                exact = np.asarray(rows[np.sort(found)], np.float32) @ query
                found = np.sort(found)[np.argsort(-exact)[:10]]
            latencies.append((time.perf_counter() - started) * 1000)
            hits += len(set(found.tolist()) & set(expected.tolist()))
        result = {"setting": setting, "rescored": args.rescore, "recall_at_10": round(hits / (10 * len(queries)), 4),
                  "p50_ms": round(statistics.median(latencies), 2), "p95_ms": round(harness.p95(latencies), 2)}
        entry["settings"].append(result)
        harness.log(f"{chosen.name} @{setting}: recall@10 {result['recall_at_10']}, p50 {result['p50_ms']} ms, "
                    f"p95 {result['p95_ms']} ms")
    print(json.dumps(entry))


def main() -> None:
    p = harness.parser(__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("out", type=Path)
    m.add_argument("--rows", type=int, default=1_000_000)
    m.add_argument("--db-dir", type=Path, default=Path("/tmp/transfer"))
    q = sub.add_parser("measure")
    q.add_argument("vectors", type=Path)
    q.add_argument("--queries", type=int, default=200)
    q.add_argument("--only", default="")
    q.add_argument("--json", default="")
    q.add_argument("--scratch", type=Path, default=None)
    q.add_argument("--rescore", type=int, default=0, help="take this many candidates and rank them by the exact cosine")
    c = sub.add_parser("candidate")
    c.add_argument("key", choices=sorted(CANDIDATES))
    c.add_argument("vectors", type=Path)
    c.add_argument("asked", type=Path)
    c.add_argument("--rescore", type=int, default=0)
    args = p.parse_args()
    {"make": make, "measure": measure, "candidate": candidate}[args.command](args)


if __name__ == "__main__":
    main()
