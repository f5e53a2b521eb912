"""Where a layer's attention goes: onnxruntime's attention operators on e5-small's shapes, timed
as single-operator graphs, with the QKV projection they all start with timed alone so that the
attention core (scores, softmax, weighted sum) can be read off.

    python -m benchmarks.hardware.attention [--shapes 8x256 1x256 16x128] [--rounds 5] [--runs 3]
    python -m benchmarks.hardware.avx2_only python -m benchmarks.hardware.attention   # the AVX2-only class

Per batch shape (passages x tokens, a few padded in each passage as in a length-sorted batch):
- `QAttention`: oboyu's graph, the projection in int8 and the core in fp32, one operator;
- the projection alone (MatMulIntegerToFloat), the part every form shares;
- `MultiHeadAttention` after the projection, with the padding mask;
- the same without a mask: onnxruntime's CPU flash-attention kernel, which it uses only when no
  mask or bias is given, so only for batches of passages of one length;
- the core in standard operators (MatMul, Softmax), as the QDQ graph for OpenVINO has it.
Medians of all runs, taken in interleaved rounds after a few seconds of warm-up.
"""

from __future__ import annotations

import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from benchmarks import harness
from oboyu.models.providers import cpu_session_options

HIDDEN, HEADS = 384, 12
WARM_UP_SECONDS = 3.0
MS = "com.microsoft"
PROJECT = helper.make_node("MatMulIntegerToFloat", ["x", "w", "xs", "ws", "xz", "", "bias"], ["qkv"], domain=MS)
SPLIT = helper.make_node("Split", ["qkv", "thirds"], ["q", "k", "v"], axis=-1)


def spelled_out() -> list:
    """The attention core in standard operators, from the projection's (batch, seq, 3H)."""
    nodes = [PROJECT, SPLIT]
    for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [helper.make_node("Reshape", [name, "heads"], [f"{name}.split"]),
                  helper.make_node("Transpose", [f"{name}.split"], [f"{name}.t"], perm=perm)]
    return nodes + [
        helper.make_node("Cast", ["mask"], ["mask.f"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "mask.f"], ["padding"]),
        helper.make_node("Mul", ["padding", "minus"], ["padding.bias"]),
        helper.make_node("Unsqueeze", ["padding.bias", "axes"], ["bias4"]),
        helper.make_node("MatMul", ["q.t", "k.t"], ["scores"]),  # the 1/sqrt(d) scale folds into Q's weights
        helper.make_node("Add", ["scores", "bias4"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v.t"], ["context"]),
        helper.make_node("Transpose", ["context"], ["context.t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["context.t", "hidden"], ["y"]),
    ]


FORMS = {
    "QAttention (oboyu's graph)": [helper.make_node("QAttention", ["x", "w", "bias", "xs", "ws", "mask", "xz"], ["y"],
                                                    domain=MS, num_heads=HEADS)],
    "the projection alone": [helper.make_node("MatMulIntegerToFloat", ["x", "w", "xs", "ws", "xz", "", "bias"], ["y"], domain=MS)],
    "MultiHeadAttention, masked": [PROJECT, SPLIT, helper.make_node("MultiHeadAttention", ["q", "k", "v", "", "mask"], ["y"],
                                                                    domain=MS, num_heads=HEADS)],
    "MultiHeadAttention, no mask (flash)": [PROJECT, SPLIT, helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"],
                                                                             domain=MS, num_heads=HEADS)],
    "standard operators": spelled_out(),
}
PROJECTION = "the projection alone"


def constants() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "w": rng.integers(-127, 128, (HIDDEN, 3 * HIDDEN), dtype=np.int8),
        "ws": rng.uniform(0.001, 0.011, 3 * HIDDEN).astype(np.float32),
        "bias": rng.normal(0, 1, 3 * HIDDEN).astype(np.float32),
        "xs": np.array(0.02, np.float32), "xz": np.array(128, np.uint8),
        "thirds": np.array([HIDDEN] * 3, np.int64), "heads": np.array([0, 0, HEADS, HIDDEN // HEADS], np.int64),
        "hidden": np.array([0, 0, HIDDEN], np.int64), "axes": np.array([1, 2], np.int64),
        "one": np.array(1.0, np.float32), "minus": np.array(-10000.0, np.float32),
    }


def session(nodes: list) -> tuple[ort.InferenceSession, bool]:
    """One form as a graph of its own, and whether it takes the mask."""
    used = {name for node in nodes for name in node.input}
    masked = "mask" in used
    inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, ["batch", "seq", HIDDEN])]
    if masked:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "seq"]))
    initializers = [numpy_helper.from_array(value, name) for name, value in constants().items() if name in used]
    graph = helper.make_graph(nodes, "attention", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return ort.InferenceSession(model.SerializeToString(), cpu_session_options(), providers=["CPUExecutionProvider"]), masked


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--shapes", nargs="+", default=["8x256", "1x256", "16x128", "1x512"],
                        help="batch shapes, PASSAGESxTOKENS (2,048 tokens is oboyu's batch budget)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds over all forms and shapes")
    parser.add_argument("--runs", type=int, default=3, help="runs of each a round")
    args = parser.parse_args()
    shapes = [tuple(int(n) for n in shape.split("x")) for shape in args.shapes]
    sessions = {form: session(nodes) for form, nodes in FORMS.items()}
    rng = np.random.default_rng(1)
    runs = {}
    for batch, seq in shapes:
        x = rng.integers(0, 256, (batch, seq, HIDDEN), dtype=np.uint8)
        mask = np.ones((batch, seq), np.int32)
        mask[1:, seq - seq // 8:] = 0  # the batch's longest passage fills it; the others are a little shorter
        for form, (run, masked) in sessions.items():
            feed = {"x": x, "mask": mask} if masked else {"x": x}
            runs[form, batch, seq] = lambda run=run, feed=feed: run.run(None, feed)
    warm_until = time.perf_counter() + WARM_UP_SECONDS
    while time.perf_counter() < warm_until:
        for run_once in runs.values():
            run_once()
    rounds = harness.interleaved(runs, args.rounds, measure=lambda run_once: harness.repeat(run_once, args.runs))
    ms = {key: 1e3 * harness.median([took for each in rounds[key] for took in each]) for key in runs}
    print(harness.machine())
    for batch, seq in shapes:
        projection = ms[PROJECTION, batch, seq]
        print(f"\n{batch} x {seq} tokens: {'ms':>8} {'core ms':>8} {'µs a token':>11}")
        for form in FORMS:
            took = ms[form, batch, seq]
            core = f"{took - projection:8.2f}" if form != PROJECTION else f"{'':8}"
            print(f"{form:>36} {took:8.2f} {core} {1e3 * took / (batch * seq):11.2f}")


if __name__ == "__main__":
    main()
