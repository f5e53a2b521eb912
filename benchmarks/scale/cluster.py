"""The same first index made by one process and by `--cluster local` (Ray on this machine), and
the figures docs/scale.md builds its model on: each run's time, the cluster's overhead a passage,
the engine's rate a core, the single writer's rate, and the bytes a passage costs on the network.

    python -m benchmarks.scale.cluster [--files 2000] [--note-chars 800] [--rounds 1] [--work DIR]

The notes are the progressive benchmark's (paragraphs of the dev sets' documents). Each run
indexes them into an empty index with an empty embedding cache, in this process (the default
model built already): the plain Indexer, then the same with a local Ray cluster's workers; with
--rounds N the two alternate and the medians are reported. The time each run spends in the
index's writes (Store.write_documents, Store.add_vectors) is timed by wrapping them, which gives
the rate one DuckDB writer absorbs while it does nothing else; the indexer's CPU time with the
cluster (this process only: the workers are others) is what each passage costs the one driver. Bytes a passage: a sample of files
prepared as a worker prepares them, pickled as Ray sends them, plus the text sent to be embedded
and the vector that comes back. Prints a Markdown table and writes benchmarks/results/cluster.json.
The index's writes alone, outside an indexing run: `benchmarks.speed.writer`.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import harness
from benchmarks.corpora import write_notes
from oboyu.documents.chunking import Chunker
from oboyu.documents.crawl import FileEntry, crawl
from oboyu.index.cluster import Cluster
from oboyu.index.embedding_cache import EmbeddingCache
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.preparing import Prepared, prepare_file
from oboyu.index.records import embedding_text
from oboyu.index.store import Store
from oboyu.models.default.build import ensure_default_model
from oboyu.models.embedding import Embedder


class WriteTimer:
    """Seconds spent in the index's writes."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._originals: dict[str, Callable] = {}

    def __enter__(self) -> WriteTimer:
        for name in ("write_documents", "add_vectors"):
            original = getattr(Store, name)
            self._originals[name] = original

            def timed(store, *args, _original=original):
                value, took = harness.timed(lambda: _original(store, *args))
                self.seconds += took
                return value

            setattr(Store, name, timed)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, original in self._originals.items():
            setattr(Store, name, original)


def one_run(folder: Path, work: Path, embedder: Embedder, cluster: bool) -> dict:
    db = work / f"{'cluster' if cluster else 'single'}-{time.monotonic_ns()}.duckdb"
    cache = EmbeddingCache(work / f"cache-{time.monotonic_ns()}.sqlite3")
    phases: dict[str, float] = {}
    started, cpu_started = time.perf_counter(), time.process_time()

    def on_progress(step) -> None:
        phases.setdefault(step.phase, time.perf_counter() - started)

    with WriteTimer() as writes:
        if cluster:
            said: list[tuple[float, str]] = []
            with Cluster("local", embedder, lambda line: said.append((time.perf_counter() - started, line))) as workers:
                stats = Indexer(IndexFile(db), embedder, on_progress=on_progress, cache=cache, workers=workers).index([folder])
            ready = next(t for t, line in said if line.endswith("ready"))
            workers_count = int(next(line for _, line in said if line.endswith("ready")).split()[0])
        else:
            stats = Indexer(IndexFile(db), embedder, on_progress=on_progress, cache=cache).index([folder])
            ready, workers_count = 0.0, 0
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    with Store(db, read_only=True) as store:
        chunks = store.counts()[1]
    return {"seconds": seconds, "meaning_started": phases.get("meaning", seconds), "chunks": chunks,
            "embedded": stats.chunks, "files": stats.added, "write_seconds": writes.seconds,
            "workers_ready": ready, "workers": workers_count, "process_cpu_seconds": cpu}


def bytes_per_passage(folder: Path, embedder: Embedder, sample: int = 200) -> dict:
    """What a passage costs on the network: its share of a prepared file as pickled for Ray, the
    text sent to be embedded, and the float32 vector that comes back."""
    chunker = Chunker(embedder.count_tokens, embedder.split_by_tokens)
    entries = [e for e in crawl([folder]) if isinstance(e, FileEntry)][:sample]
    prepared_bytes = text_bytes = passages = 0
    for entry in entries:
        outcome = prepare_file(entry, None, embedder, chunker, 50 << 20)
        if isinstance(outcome, Prepared):
            prepared_bytes += len(pickle.dumps(outcome, protocol=5))
            texts = [embedder.passage_text(embedding_text(outcome.document.title, c.heading, c.text)) for c in outcome.chunks]
            text_bytes += len(pickle.dumps(texts, protocol=5))
            passages += len(outcome.chunks)
    vector = embedder.info.dimensions * 4
    return {"prepared": prepared_bytes / passages, "text": text_bytes / passages, "vector": vector,
            "total": (prepared_bytes + text_bytes) / passages + vector, "sample_passages": passages}


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--note-chars", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="oboyu-cluster-bench-"))
    folder = work / "notes"
    shutil.rmtree(folder, ignore_errors=True)
    write_notes(folder, args.files, args.note_chars)
    embedder = Embedder(ensure_default_model())
    try:
        runs = harness.interleaved({kind: lambda kind=kind: one_run(folder, work, embedder, cluster=kind == "cluster")
                                    for kind in ("single", "cluster")}, args.rounds, measure=harness.call, alternate=True,
                                   on_result=lambda round_, kind, run: print(f"round {round_ + 1} {kind}: {json.dumps(run)}", flush=True))
        network = bytes_per_passage(folder, embedder)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)

    def median(kind: str, key: str) -> float:
        return harness.median(r[key] for r in runs[kind])

    single, on_cluster = median("single", "seconds"), median("cluster", "seconds")
    chunks = runs["single"][0]["chunks"]
    workers = runs["cluster"][0]["workers"]
    meaning_seconds = median("cluster", "seconds") - median("cluster", "meaning_started")
    writes = [r["write_seconds"] for r in runs["single"] + runs["cluster"]]
    report = {
        "cpu": harness.machine(), "cores": os.cpu_count(), "files": args.files,
        "chunks": chunks, "rounds": args.rounds, "single_seconds": single, "cluster_seconds": on_cluster,
        "ratio": single / on_cluster, "overhead_ms_per_passage": 1000 * (on_cluster - single) / chunks,
        "cluster_workers": workers, "cluster_startup_seconds": median("cluster", "workers_ready"),
        "engine_passages_per_s_per_core": chunks / meaning_seconds / max(1, workers),
        "writer_passages_per_s": chunks / harness.median(writes),
        "driver_cpu_ms_per_passage": 1000 * median("cluster", "process_cpu_seconds") / chunks,
        "bytes_per_passage": network, "runs": runs,
    }
    out = harness.write_json("cluster.json", report)
    print(f"\n{args.files:,} files, {chunks:,} passages, {os.cpu_count()} CPUs, medians of {args.rounds} round(s)\n")
    print("| | value |\n| --- | ---: |")
    print(f"| one process | {single:.1f} s ({chunks / single:.1f} passages/s) |")
    print(f"| --cluster local ({workers} workers) | {on_cluster:.1f} s ({chunks / on_cluster:.1f} passages/s) |")
    print(f"| one process / cluster | {single / on_cluster:.2f}x |")
    print(f"| cluster overhead | {report['overhead_ms_per_passage']:.2f} ms a passage; "
          f"{report['cluster_startup_seconds']:.1f} s until the workers are ready |")
    print(f"| engine, a worker on one core | {report['engine_passages_per_s_per_core']:.1f} passages/s |")
    print(f"| the writer (DuckDB, its writes alone) | {report['writer_passages_per_s']:,.0f} passages/s |")
    print(f"| the indexer's own CPU with the cluster | {report['driver_cpu_ms_per_passage']:.2f} ms a passage |")
    print(f"| network a passage | {network['total']:,.0f} bytes (prepared {network['prepared']:,.0f}, "
          f"text {network['text']:,.0f}, vector {network['vector']:,}) |")
    print(f"\nwritten to {out.relative_to(harness.ROOT)}")


if __name__ == "__main__":
    main()
