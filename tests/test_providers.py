"""Provider choice for every platform (faked), the probe that proves an accelerator before use
(with sessions that fail, diverge or agree), the CPU path for real, and `oboyu doctor`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from oboyu.errors import OboyuError
from oboyu.models import embedding
from oboyu.models.embedding import Embedder
from oboyu.models.manifest import ONNXRUNTIME
from oboyu.models.providers import CPU, Choice, choose, physical_cores, provider_name, session_providers

COREML, CUDA, TRT, DML = ("CoreMLExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider",
                          "DmlExecutionProvider")


@pytest.mark.parametrize(("available", "system", "machine", "expected"), [
    ([COREML, CPU], "Darwin", "arm64", COREML),
    ([COREML, CPU], "Darwin", "x86_64", CPU),  # an Intel Mac: CoreML there runs no faster than the CPU path
    ([CPU], "Darwin", "arm64", CPU),  # an onnxruntime built without CoreML
    ([TRT, CUDA, CPU], "Linux", "x86_64", CUDA),  # TensorRT's libraries are a package of their own
    ([CUDA, CPU], "Linux", "x86_64", CUDA),
    ([CUDA, CPU], "Windows", "AMD64", CUDA),
    ([DML, CPU], "Windows", "AMD64", DML),
    ([DML, CPU], "Linux", "x86_64", CPU),
    ([CPU], "Linux", "aarch64", CPU),
    ([CPU], "Windows", "AMD64", CPU),
])
def test_choice_follows_the_platform(available: list[str], system: str, machine: str, expected: str) -> None:
    assert choose(available, system, machine).provider == expected


def test_an_override_wins_and_must_be_available() -> None:
    assert choose([CUDA, CPU], "Linux", "x86_64", override="cpu").provider == CPU
    assert choose([CUDA, CPU], "Linux", "x86_64", override="CUDAExecutionProvider").provider == CUDA
    with pytest.raises(OboyuError, match=r"provider coreml is not available.*CUDAExecutionProvider"):
        choose([CUDA, CPU], "Linux", "x86_64", override="coreml")


def test_provider_names_and_session_lists() -> None:
    assert provider_name("TensorRT") == TRT and provider_name("dml") == DML
    assert session_providers(CPU) == [CPU]
    assert session_providers(TRT) == [TRT, CUDA, CPU]  # CUDA, then the CPU take what TensorRT leaves
    assert session_providers(CUDA)[-1] == CPU and session_providers(COREML)[-1] == CPU


def test_threads_are_physical_cores_within_the_affinity(monkeypatch, tmp_path) -> None:
    import os

    from oboyu.models import providers

    # 2 sockets x 2 cores x 2 hardware threads: 8 logical CPUs, 4 physical cores
    blocks = [f"processor\t: {i}\nphysical id\t: {i // 4}\ncore id\t\t: {(i // 2) % 2}\n" for i in range(8)]
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("\n".join(blocks))
    real_path = providers.Path
    monkeypatch.setattr(providers, "Path", lambda p: cpuinfo if p == "/proc/cpuinfo" else real_path(p))
    monkeypatch.setattr(providers.platform, "system", lambda: "Linux")
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(8)), raising=False)
    assert physical_cores() == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2}, raising=False)
    assert physical_cores() == 3  # a process pinned to 3 CPUs gets 3 threads, not 4


class FakeAccelerated:
    """A CPU session that says it runs on `FakeExecutionProvider`; `skew` bends its vectors, like
    a provider that runs a node wrong."""

    def __init__(self, inner, skew: bool):
        self.inner, self.skew = inner, skew

    def get_providers(self) -> list[str]:
        return ["FakeExecutionProvider", CPU]

    def get_outputs(self):
        return self.inner.get_outputs()

    def run(self, names, feeds):
        (vectors,) = self.inner.run(names, feeds)
        if not self.skew:
            return [vectors]
        bent = vectors + 0.5 * np.roll(vectors, 1, axis=1)
        return [bent / np.linalg.norm(bent, axis=1, keepdims=True)]


@pytest.fixture
def fake_accelerator(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model_dir: Path):
    """Embedders that believe the platform chose `FakeExecutionProvider`; `behaviour` says what
    its session does: 'fail' (onnxruntime refuses it), 'diverge' or 'agree'."""
    monkeypatch.setenv("OBOYU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(embedding, "choose_here", lambda requested=None: Choice("FakeExecutionProvider", "test"))
    real, real_probe, real_problem = Embedder._make_session, Embedder.probe_agreement, embedding.provider_problem
    probes: list[float] = []

    def make(behaviour: str) -> tuple[Embedder, list[str]]:
        notices: list[str] = []

        def session(self, provider):
            if provider == CPU or behaviour == "fail":
                return real(self, provider)  # onnxruntime cannot start the unknown provider
            return FakeAccelerated(real(self, CPU), skew=behaviour == "diverge")

        def probe(self, ours, theirs):
            probes.append(real_probe(self, ours, theirs))
            return probes[-1]

        monkeypatch.setattr(Embedder, "_make_session", session)
        monkeypatch.setattr(Embedder, "probe_agreement", probe)
        # onnxruntime knows no such provider: only 'fail' lets it say so before the model is loaded
        monkeypatch.setattr(embedding, "provider_problem", lambda p: real_problem(p) if behaviour == "fail" else None)
        return Embedder(model_dir, notify=notices.append, engine=ONNXRUNTIME), notices

    make.probes = probes
    return make


def test_a_provider_that_fails_to_load_is_dropped_with_its_reason(fake_accelerator) -> None:
    embedder, notices = fake_accelerator("fail")
    vector = embedder.embed_queries(["検索"])[0]
    assert embedder.provider == CPU and abs(float(vector @ vector) - 1) < 1e-5
    assert len(notices) == 1 and notices[0].startswith("FakeExecutionProvider dropped: ")
    assert "\n" not in notices[0] and notices[0].endswith("embedding on the CPU")
    again, notices = fake_accelerator("fail")
    again.load()
    assert again.provider == CPU and "found earlier" in notices[0]  # remembered: not tried again


def test_a_provider_asked_for_that_fails_leaves_the_platforms_accelerator(fake_accelerator, monkeypatch) -> None:
    """TensorRT asked for without its libraries: the platform's own accelerator, not the CPU."""
    platform_choice = Choice("FakeExecutionProvider", "test")
    monkeypatch.setattr(embedding, "choose_here",
                        lambda requested=None: Choice("AskedExecutionProvider", "asked") if requested else platform_choice)
    embedder, notices = fake_accelerator("agree")
    embedder.requested_provider = "asked"
    monkeypatch.setattr(embedding, "provider_problem",
                        lambda p: "its libraries are missing" if p == "AskedExecutionProvider" else None)
    embedder.load(passages=True)
    assert embedder.provider == "FakeExecutionProvider"
    assert notices == ["AskedExecutionProvider dropped: its libraries are missing; trying FakeExecutionProvider"]


def test_a_provider_that_diverges_is_dropped(fake_accelerator) -> None:
    embedder, notices = fake_accelerator("diverge")
    embedder.load()
    assert embedder.provider == CPU
    assert len(fake_accelerator.probes) == 1 and fake_accelerator.probes[0] < embedding.PROVIDER_MIN_COSINE
    assert "differ from the CPU's (min cosine" in notices[0]


def test_a_provider_that_agrees_is_used_and_probed_once(fake_accelerator, model_dir: Path) -> None:
    first, notices = fake_accelerator("agree")
    texts = ["passage: 検索エンジンの仕組み", "passage: 猫が昼寝をしている"]
    assert np.allclose(first.embed(texts), Embedder(model_dir, engine=ONNXRUNTIME).embed(texts), atol=1e-6)
    assert first.provider == "FakeExecutionProvider" and notices == []
    assert fake_accelerator.probes == [pytest.approx(1.0, abs=1e-5)]
    second, _ = fake_accelerator("agree")
    second.load()
    assert second.provider == "FakeExecutionProvider" and len(fake_accelerator.probes) == 1


def test_doctor_reports_the_machine_and_times_the_cpu(oboyu_env: dict[str, str]) -> None:
    result = subprocess.run([sys.executable, "-m", "oboyu.cli", "doctor", "--json", "--seconds", "0.4"],
                            env=oboyu_env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert CPU in report["available_providers"] and report["chosen_provider"] == CPU
    assert report["threads"] == physical_cores()
    benchmark = report["benchmark"]
    assert benchmark["query_provider"] == CPU and benchmark["model"].startswith("intfloat/multilingual-e5-small@")
    # passages: onnxruntime on the CPU, or OpenVINO where it is installed and proven here
    assert benchmark["provider"] == CPU or benchmark["provider"].startswith("OpenVINO CPU")
    if benchmark["provider"].startswith("OpenVINO CPU"):  # chosen by this machine's probe, which says how fast
        assert "x onnxruntime's speed here; new indexes use it" in benchmark["openvino_here"]
    assert benchmark["passages_per_second"] > 0 and benchmark["query_ms_p50"] > 0
    text = subprocess.run([sys.executable, "-m", "oboyu.cli", "doctor", "--seconds", "0.2"], env=oboyu_env,
                          capture_output=True, text=True, timeout=300).stdout
    # a user trial read "chosen provider: CPU..." above "provider: OpenVINO CPU" as a contradiction
    assert f"onnxruntime's pick: {CPU}" in text and f"queries made on: {CPU}" in text
    assert f"passages made on: {benchmark['provider'].split(' (')[0]}" in text


def test_an_unavailable_provider_is_a_one_line_error(oboyu_env: dict[str, str]) -> None:
    result = subprocess.run([sys.executable, "-m", "oboyu.cli", "--provider", "coreml", "doctor", "--seconds", "0.2"],
                            env=oboyu_env, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert result.stderr.strip().startswith("oboyu: error: provider coreml is not available")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_provider_asked_for_is_checked_before_the_index_changes(tmp_path: Path, oboyu_env: dict[str, str]) -> None:
    """A user trial: `oboyu --provider bogus index` (or cuda, with no GPU) re-embedded the index,
    dropping every vector, and only then said the provider was not there; a query with any
    provider asked for on an index whose passages OpenVINO made said the index must be
    re-embedded (a query's vector is onnxruntime's either way)."""
    from conftest import EXAMPLE_NOTES, run_oboyu

    assert run_oboyu(oboyu_env, "index", str(EXAMPLE_NOTES)).returncode == 0
    before = json.loads(run_oboyu(oboyu_env, "status", "--json").stdout)
    for asked in (("--provider", "bogus"), ("--provider", "nosuchprovider")):
        done = run_oboyu(oboyu_env, *asked, "index")
        assert done.returncode == 2 and done.stderr.strip().startswith(f"oboyu: error: provider {asked[1]} is not "
                                                                       "available"), done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = run_oboyu({**oboyu_env, "OBOYU_PROVIDER": "nonesuch"}, "index")
    assert done.returncode == 2 and "provider nonesuch is not available" in done.stderr, done.stderr
    assert json.loads(run_oboyu(oboyu_env, "status", "--json").stdout) == before  # vectors, model, counts as they were
    plain = run_oboyu(oboyu_env, "query", "カレーの作り方", "--json")
    on_cpu = run_oboyu(oboyu_env, "--provider", "cpu", "query", "カレーの作り方", "--json")
    assert on_cpu.returncode == plain.returncode == 0, on_cpu.stderr
    assert [r["path"] for r in json.loads(on_cpu.stdout)] == [r["path"] for r in json.loads(plain.stdout)]


def residual_norm_graph() -> bytes:
    """A residual's Add and LayerNormalization on (batch, sequence, hidden): the shapes onnxruntime
    fuses into SkipLayerNormalization."""
    from onnx import TensorProto, helper, numpy_helper

    hidden = 8
    nodes = [helper.make_node("Add", ["x", "residual"], ["sum"]),
             helper.make_node("LayerNormalization", ["sum", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-12)]
    value = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", "sequence", hidden]) for name in ("x", "residual", "y")]
    weights = [numpy_helper.from_array(np.linspace(0.5, 1.5, hidden, dtype=np.float32), "gamma"),
               numpy_helper.from_array(np.linspace(-0.1, 0.1, hidden, dtype=np.float32), "beta")]
    model = helper.make_model(helper.make_graph(nodes, "residual", value[:2], value[2:], weights),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_cpu_sessions_keep_a_residuals_add_and_layer_norm_apart(tmp_path: Path, model_dir: Path, monkeypatch) -> None:
    """onnxruntime's SkipLayerNormalization ran 7x slower on the CPU than the two operators it
    fuses: oboyu's CPU sessions leave them apart, accelerators keep the fusion."""
    import onnx
    import onnxruntime as ort

    from oboyu.models.providers import cpu_session_options, disabled_optimizers

    feeds = {"x": np.random.default_rng(0).normal(size=(2, 3, 8)).astype(np.float32)}
    feeds["residual"] = feeds["x"][::-1].copy()
    outputs = {}
    for provider in (CPU, CUDA):
        options = cpu_session_options()
        options.optimized_model_filepath = str(tmp_path / f"{provider}.onnx")
        session = ort.InferenceSession(residual_norm_graph(), options, providers=[CPU],
                                       disabled_optimizers=disabled_optimizers(provider))
        ops = {node.op_type for node in onnx.load(options.optimized_model_filepath).graph.node}
        assert ("SkipLayerNormalization" in ops) == (provider == CUDA), ops
        outputs[provider] = session.run(None, feeds)[0]
    assert np.allclose(outputs[CPU], outputs[CUDA], atol=1e-5)

    made: list[dict] = []
    real = ort.InferenceSession
    monkeypatch.setattr(ort, "InferenceSession", lambda *args, **kwargs: made.append(kwargs) or real(*args, **kwargs))
    Embedder(model_dir, engine=ONNXRUNTIME).load()
    assert made and made[-1]["disabled_optimizers"] == disabled_optimizers(CPU)


def test_why_a_provider_did_not_start_is_one_plain_line(tmp_path: Path) -> None:
    from oboyu.models.providers import _library_problem, start_failure

    assert start_failure(CUDA, "") == f"this onnxruntime ({onnxruntime.__version__}) has no {CUDA}"
    assert start_failure(CPU, "EP Error boom when using [...]\n") == "boom"
    assert start_failure(CPU, "") == "onnxruntime could not start it"
    # a provider library the loader refuses: its own words, one line
    (tmp_path / "libonnxruntime_providers_cuda.so").write_bytes(b"not a shared library")
    problem = _library_problem(CUDA, tmp_path)
    assert problem and "libonnxruntime_providers_cuda.so" in problem and "\n" not in problem
    assert _library_problem(CPU, tmp_path) is None


def test_a_provider_this_onnxruntime_lacks_is_found_out_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    """The plain CPU wheel has no CUDA: said in one line, before any graph is built for it, with
    nothing of onnxruntime's own printed."""
    from oboyu.models.providers import provider_problem

    assert provider_problem(CPU) is None
    problem = provider_problem(CUDA)
    assert problem and "\n" not in problem
    out, err = capfd.readouterr()
    assert out == "" and err == ""
