"""The default model's graph for GPU providers: which graph each provider runs, the float16 graph
built once into the model's folder (nothing left by a failed build), and its vectors, run here on
the CPU, against the INT8 graph's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from oboyu.models import embedding
from oboyu.models.default import gpu
from oboyu.models.embedding import Embedder
from oboyu.models.manifest import DEFAULT_GPU_GRAPH, MODEL_FILE, ONNXRUNTIME
from oboyu.models.providers import CPU, Choice
from oboyu.paths import cache_dir

CUDA, TRT, COREML = "CUDAExecutionProvider", "TensorrtExecutionProvider", "CoreMLExecutionProvider"


@pytest.fixture
def model_copy(model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The installed default model, its files linked into a folder of the test's own; a cache
    folder of its own too (the providers' verdicts)."""
    monkeypatch.setenv("OBOYU_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / model_dir.name
    copy.mkdir()
    for file in model_dir.iterdir():
        if file.is_file():
            (copy / file.name).symlink_to(file)
    return copy


def test_each_provider_runs_its_graph(model_copy: Path) -> None:
    embedder = Embedder(model_copy, provider="cpu", engine=ONNXRUNTIME)
    assert embedder.graph_name(CPU) == MODEL_FILE and embedder.graph_name(COREML) == MODEL_FILE
    assert embedder.graph_name(CUDA) == embedder.graph_name(TRT) == DEFAULT_GPU_GRAPH
    converted = Embedder(model_copy, manifest={**embedder.manifest, "source": {"model": "elsewhere"},
                                               "variants": {"fp16": {"file": "model.fp16.onnx"}}})
    assert converted.graph_name(CUDA) == "model.fp16.onnx"  # a converted model's own variant
    del converted.manifest["variants"]
    assert converted.graph_name(CUDA) == MODEL_FILE  # none: the model itself


def test_the_gpu_graph_is_built_once_and_embeds_like_the_int8_one(model_copy: Path) -> None:
    said: list[str] = []
    embedder = Embedder(model_copy, provider="cpu", engine=ONNXRUNTIME, notify=said.append)
    built = embedder.model_file(CUDA)
    assert built == model_copy / DEFAULT_GPU_GRAPH and built.is_file() and len(said) == 1
    assert not list(model_copy.glob(".gpu-*"))
    stamp = built.stat().st_mtime_ns
    assert embedder.model_file(CUDA) == built and built.stat().st_mtime_ns == stamp and len(said) == 1
    graph = ort.InferenceSession(str(built), providers=[CPU])
    assert graph.get_inputs()[0].type == "tensor(int64)" and graph.get_outputs()[0].type == "tensor(float)"
    assert embedder.probe_agreement(graph, embedder.session) > 0.99
    vector = embedder.embed([embedder.passage_text("会議の議事録")], session=graph)
    assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-3)


def test_a_failed_build_leaves_nothing_and_no_verdict(model_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken():
        raise OSError(28, "No space left on device")

    (model_copy / ".gpu-killed").mkdir()  # a killed build's scratch folder
    monkeypatch.setattr(gpu, "float16_graph", broken)
    with pytest.raises(OSError):
        gpu.gpu_model_file(model_copy)
    assert not (model_copy / gpu.GPU_FOLDER).exists() and not list(model_copy.glob(".gpu-*"))
    # the provider is not blamed: no verdict is kept, so the next process builds and probes again
    monkeypatch.setattr(embedding, "provider_problem", lambda provider: None)  # as where CUDA starts
    said: list[str] = []
    embedder = Embedder(model_copy, provider="cpu", engine=ONNXRUNTIME, notify=said.append)
    assert embedder._accelerated_session(Choice(CUDA, "test")) is None
    assert "could not be built (" in said[-1] and "No space left" in said[-1]
    assert not (cache_dir() / "provider-checks.json").exists()


def test_a_build_that_loses_the_race_takes_the_winners_graph(model_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where there is no file lock (Windows), two processes may build at once: the second rename
    fails, and the first one's graph is used."""
    real = gpu.float16_graph

    def built_elsewhere_meanwhile():
        graph = real()
        gpu.save_external(graph, (model_copy / gpu.GPU_FOLDER).mkdir() or model_copy / DEFAULT_GPU_GRAPH)
        return graph

    monkeypatch.setattr(gpu, "float16_graph", built_elsewhere_meanwhile)
    assert gpu.gpu_model_file(model_copy) == model_copy / DEFAULT_GPU_GRAPH
    assert not list(model_copy.glob(".gpu-*"))


class RecordingSession:
    """Records the batches it is given; `provider` is the one it says it runs on."""

    def __init__(self, provider: str):
        self.provider, self.batches = provider, []

    def get_providers(self) -> list[str]:
        return [self.provider, CPU]

    def run(self, _outputs, feed):
        self.batches.append(feed["input_ids"].shape)
        return [np.zeros((feed["input_ids"].shape[0], 384), np.float32)]


def test_a_gpu_session_gets_larger_batches(model_copy: Path) -> None:
    embedder = Embedder(model_copy, provider="cpu", engine=ONNXRUNTIME)
    ids = [[5] * 200 for _ in range(100)]
    cpu, cuda = RecordingSession(CPU), RecordingSession(CUDA)
    embedder.embed_ids(ids, session=cpu)
    embedder.embed_ids(ids, session=cuda)
    assert max(rows * length for rows, length in cpu.batches) <= embedding.DEFAULT_TOKEN_BUDGET
    assert max(rows for rows, _ in cuda.batches) == embedding.MAX_BATCH  # within GPU_TOKEN_BUDGET
    assert sum(rows for rows, _ in cuda.batches) == sum(rows for rows, _ in cpu.batches) == 100


def test_no_gpu_graph_is_built_for_a_provider_that_cannot_start(model_copy: Path) -> None:
    """This onnxruntime has no CUDA: dropped with its reason before anything is built."""
    said: list[str] = []
    embedder = Embedder(model_copy, provider="cpu", engine=ONNXRUNTIME, notify=said.append)
    assert embedder._accelerated_session(Choice(CUDA, "test")) is None
    assert said and said[0].startswith(f"{CUDA} dropped: ") and not (model_copy / gpu.GPU_FOLDER).exists()
