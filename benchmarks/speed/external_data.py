"""Session start and peak memory of one ONNX model saved as one file against its weights saved as
external data (what the conversion pipeline installs), each in a fresh process, median of runs.

    python -m benchmarks.speed.external_data [MODEL.onnx] [--runs 5]

MODEL defaults to the default model (built on first use).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

from benchmarks import harness
from oboyu.models.default.build import ensure_default_model
from oboyu.models.install import save_with_external_data
from oboyu.models.manifest import MODEL_FILE

PROBE = (
    "import sys, time, onnxruntime as ort\n"
    "o = ort.SessionOptions(); o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL\n"
    "t = time.perf_counter()\n"
    "ort.InferenceSession(sys.argv[1], o, providers=['CPUExecutionProvider'])\n"
    "seconds = time.perf_counter() - t\n"
    f"peak = {harness.PEAK_RSS_MB}\n"
    "print(seconds, peak)\n"
)


def measure(model: Path) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(model)], capture_output=True, text=True, check=True)
    seconds, peak = done.stdout.split()
    return float(seconds), float(peak)


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("model", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    model = args.model or ensure_default_model() / MODEL_FILE
    with tempfile.TemporaryDirectory(prefix="oboyu-external-") as tmp:
        # both layouts written afresh, whichever the given model has
        one_file, external = Path(tmp) / "one-file.onnx", Path(tmp) / MODEL_FILE
        onnx.save_model(onnx.load(str(model)), str(one_file))
        save_with_external_data(one_file, external)
        results = harness.interleaved({"one file": lambda: measure(one_file), "external data": lambda: measure(external)},
                                      args.runs, measure=harness.call)
        size_mb = one_file.stat().st_size / 1e6
    print(f"{model} ({size_mb:.1f} MB), median of {args.runs} fresh processes:")
    for name, runs in results.items():
        print(f"  {name:>13}: session {harness.median(r[0] for r in runs):.3f} s, "
              f"peak RSS {harness.median(r[1] for r in runs):.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
