"""`oboyu doctor`: what this machine offers the embedding engine, what the engine chose, and how
fast it embeds here (a two-second self-benchmark)."""

from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

from oboyu import __version__
from oboyu.documents.chunking import TARGET_TOKENS
from oboyu.models.embedding import Embedder
from oboyu.models.openvino_engine import probe_summary
from oboyu.models.probe import probe_sentences
from oboyu.models.providers import choose_here, cpu_description, physical_cores
from oboyu.paths import cache_dir, models_dir


def machine_report(index: Path) -> dict:
    import onnxruntime as ort

    cpu, features = cpu_description()
    choice = choose_here()
    return {
        "oboyu": __version__,
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": sys.version.split()[0],
        "cpu": cpu,
        "cpu_features": features,
        "threads": physical_cores(),  # onnxruntime's intra-op threads: one a physical core
        "onnxruntime": ort.__version__,
        "available_providers": ort.get_available_providers(),
        "chosen_provider": choice.provider,
        "why": choice.reason,
        "cache": str(cache_dir()),
        "models": str(models_dir()),
        "index": str(index),
    }


def chunk_sized_passages(embedder: Embedder, count: int, tokens: int = TARGET_TOKENS) -> list[str]:
    """`count` passages of probe sentences, each about as many tokens as a chunk the indexer cuts:
    timed on single sentences, the rate was several times what indexing reaches."""
    sentences, at, out = probe_sentences(), 0, []
    for _ in range(count):
        text = ""
        while True:
            longer = f"{text} {sentences[at % len(sentences)]}".strip()
            at += 1
            if text and embedder.count_tokens([embedder.passage_text(longer)])[0] > tokens:
                break
            text = longer
        out.append(embedder.passage_text(text))
    return out


def self_benchmark(embedder: Embedder, seconds: float = 2.0) -> dict:
    """Embeds passages as long as indexing makes them (batches formed as indexing forms them) for
    about `seconds`, then times single queries: what this machine's engine does, in its own words."""
    started = time.perf_counter()
    embedder.load(passages=True)
    load_seconds = time.perf_counter() - started
    texts = chunk_sized_passages(embedder, 16)
    tokens = sum(len(e.ids) for e in embedder.tokenizer.encode_batch(texts))
    rounds, spent = 0, 0.0
    while spent < seconds / 2 or rounds == 0:
        started = time.perf_counter()
        embedder.embed(texts)
        spent += time.perf_counter() - started
        rounds += 1
    latencies = []
    queries = [embedder.info.query_prefix + text for text in probe_sentences()]
    deadline = time.perf_counter() + seconds / 2
    for query in queries * 10:
        started = time.perf_counter()
        embedder.embed([query], session=embedder.onnxruntime_session)
        latencies.append(time.perf_counter() - started)
        if time.perf_counter() > deadline:
            break
    return {
        "model": embedder.info.model_id,
        "model_folder": str(embedder.model_dir),
        "provider": embedder.provider,
        "query_provider": embedder.query_provider,
        "engine": f"{embedder.engine} ({embedder.engine_reason})",
        "openvino_here": probe_summary(embedder.manifest),
        "load_seconds": round(load_seconds, 3),
        "passages_per_second": round(rounds * len(texts) / spent, 1),
        "tokens_per_second": round(rounds * tokens / spent),
        "query_ms_p50": round(statistics.median(latencies) * 1000, 2),
        "queries_timed": len(latencies),
    }
