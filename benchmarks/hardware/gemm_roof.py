"""What the CPU's matrix products allow: the default model's linear layers alone, timed as
single-operator graphs with onnxruntime, and the tokens/s they would leave if the model were
nothing else.

    python -m benchmarks.hardware.gemm_roof [--tokens 2048] [--rounds 5] [--runs 3]
    python -m benchmarks.hardware.avx2_only python -m benchmarks.hardware.gemm_roof   # the AVX2-only class

Each layer's product (the fused QKV projection, the attention output, the feed-forward in and
out, with e5-small's shapes) runs on `--tokens` rows of random activations: INT8 as oboyu's
graph does it (DynamicQuantizeMatMul: per-batch activation scales, per-channel int8 weights) and
fp32 (MatMul). Medians of all runs, taken in interleaved rounds after a few seconds of
warm-up. The ceiling is the 12 layers' products per
token and nothing else: no attention, normalisation or GELU. Compare it with benchmarks.hardware.engine's tokens/s.
"""

from __future__ import annotations

import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from benchmarks import harness
from oboyu.models.default.graph import quantize_per_channel
from oboyu.models.providers import cpu_session_options

LAYERS = 12
WARM_UP_SECONDS = 3.0
SHAPES = {"qkv": (384, 1152), "attention out": (384, 384), "feed-forward in": (384, 1536), "feed-forward out": (1536, 384)}


def product_session(k: int, n: int, int8: bool) -> ort.InferenceSession:
    """x[tokens, k] @ W[k, n] as one operator, W random with a typical spread."""
    weight = np.random.default_rng(k * n).normal(0, 0.05, (n, k)).astype(np.float32)
    if int8:
        q, scale = quantize_per_channel(weight)
        node = helper.make_node("DynamicQuantizeMatMul", ["x", "w", "s", ""], ["y"], domain="com.microsoft")
        initializers = [numpy_helper.from_array(q, "w"), numpy_helper.from_array(scale, "s")]
    else:
        node = helper.make_node("MatMul", ["x", "w"], ["y"])
        initializers = [numpy_helper.from_array(np.ascontiguousarray(weight.T), "w")]
    graph = helper.make_graph([node], "product", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["m", k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", n])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return ort.InferenceSession(model.SerializeToString(), cpu_session_options(), providers=["CPUExecutionProvider"])


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--tokens", type=int, default=2048, help="rows per product (oboyu's batches hold about 2,048 tokens)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds over all products")
    parser.add_argument("--runs", type=int, default=3, help="runs of each product a round")
    args = parser.parse_args()
    x_by_k = {k: np.random.default_rng(k).normal(0, 1, (args.tokens, k)).astype(np.float32) for k, _ in SHAPES.values()}
    print(f"{'product':>17} {'k x n':>11} {'int8 GMAC/s':>12} {'fp32 GMAC/s':>12} {'int8/fp32':>10}")
    per_token = {"int8": 0.0, "fp32": 0.0}
    sessions = {(name, kind): product_session(k, n, kind == "int8") for name, (k, n) in SHAPES.items() for kind in per_token}
    products = {(name, kind): lambda session=session, x=x_by_k[SHAPES[name][0]]: session.run(None, {"x": x})
                for (name, kind), session in sessions.items()}
    warm_until = time.perf_counter() + WARM_UP_SECONDS
    while time.perf_counter() < warm_until:  # the first product timed alone read half its later speed
        for product in products.values():
            product()
    rounds = harness.interleaved(products, args.rounds, measure=lambda product: harness.repeat(product, args.runs))
    times = {key: [took for runs in each for took in runs] for key, each in rounds.items()}
    for name, (k, n) in SHAPES.items():
        rate = {}
        for kind in per_token:
            took = harness.median(times[name, kind])
            rate[kind] = args.tokens * k * n / took / 1e9
            per_token[kind] += LAYERS * took / args.tokens
        print(f"{name:>17} {f'{k}x{n}':>11} {rate['int8']:>12.1f} {rate['fp32']:>12.1f} {rate['int8'] / rate['fp32']:>9.2f}x")
    macs = LAYERS * sum(k * n for k, n in SHAPES.values())
    for kind, took in per_token.items():
        print(f"{kind}: the linear layers alone would allow {1 / took:,.0f} tokens/s ({macs * 1e-6:.1f} M multiply-adds a token)")


if __name__ == "__main__":
    main()
