"""OpenVINO as the passages' engine: when it is chosen, that its vectors agree with onnxruntime's
and do not depend on their batch-mates, that queries stay onnxruntime's, and that an index keeps
the engine its passages' vectors came from (the two engines' vectors never mix, in the index or
the embedding cache)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from oboyu.errors import OboyuError
from oboyu.models.embedding import Embedder
from oboyu.models.manifest import ONNXRUNTIME, OPENVINO, split_engine
from oboyu.models.openvino_engine import choose_engine, openvino_installed, speedup_over
from oboyu.models.probe import probe_sentences
from tests.conftest import EXAMPLE_NOTES, run_oboyu

WITH_FORM = {"id": "m", "engines": {OPENVINO: {"file": "model.openvino.onnx"}}}
WITHOUT_FORM = {"id": "m"}
needs_openvino = pytest.mark.skipif(not openvino_installed(), reason="openvino is not installed (x86 only)")


TIMED_FASTER = {"ok": True, "speedup": 1.5}


@pytest.mark.parametrize(("manifest", "requested", "machine", "system", "installed", "accelerated", "verdict", "engine"), [
    (WITH_FORM, None, "x86_64", "Linux", True, None, TIMED_FASTER, OPENVINO),
    (WITH_FORM, None, "AMD64", "Windows", True, None, TIMED_FASTER, OPENVINO),
    (WITH_FORM, None, "x86_64", "Linux", True, None, None, OPENVINO),  # not yet probed: the probe decides
    (WITH_FORM, None, "x86_64", "Linux", True, None, {"ok": True}, OPENVINO),  # probed before it was timed
    (WITH_FORM, None, "x86_64", "Linux", False, None, None, ONNXRUNTIME),  # not installed
    (WITH_FORM, None, "aarch64", "Linux", True, None, TIMED_FASTER, ONNXRUNTIME),  # ARM
    (WITH_FORM, None, "arm64", "Darwin", True, None, TIMED_FASTER, ONNXRUNTIME),  # Apple silicon: CoreML
    (WITH_FORM, None, "x86_64", "Darwin", True, None, TIMED_FASTER, ONNXRUNTIME),  # an Intel Mac
    (WITH_FORM, None, "x86_64", "Linux", True, "onnxruntime-gpu", TIMED_FASTER, ONNXRUNTIME),  # CUDA leads
    (WITH_FORM, None, "x86_64", "Linux", True, None, {"ok": False, "reason": "r"}, ONNXRUNTIME),  # failed its probe
    (WITH_FORM, None, "x86_64", "Linux", True, None, {"ok": True, "speedup": 0.57}, ONNXRUNTIME),  # slower here
    (WITH_FORM, None, "x86_64", "Linux", True, None, {"ok": True, "speedup": 1.05}, ONNXRUNTIME),  # a near tie
    (WITHOUT_FORM, None, "x86_64", "Linux", True, None, None, ONNXRUNTIME),  # a converted model
    (WITH_FORM, "cpu", "x86_64", "Linux", True, None, TIMED_FASTER, ONNXRUNTIME),  # another provider asked for
    (WITH_FORM, "OpenVINO", "x86_64", "Linux", True, None, {"ok": True, "speedup": 0.57}, OPENVINO),  # asked for
    (WITH_FORM, "OpenVINO", "aarch64", "Linux", True, "onnxruntime-gpu", None, OPENVINO),  # asked for: it wins
])
def test_the_engine_follows_the_machine(manifest, requested, machine, system, installed, accelerated, verdict,
                                        engine) -> None:
    assert choose_engine(manifest, requested, machine, system, installed, accelerated, verdict)[0] == engine


@needs_openvino
@pytest.mark.parametrize(("speedup", "engine"), [(0.57, ONNXRUNTIME), (1.5, OPENVINO)])
def test_the_probe_keeps_openvino_only_where_it_was_faster(model_dir, tmp_path, monkeypatch, speedup, engine) -> None:
    """The probe's timing decides the default engine, and its verdict is kept for later processes.
    The timing is replaced here: which engine is faster depends on the CPU (OpenVINO's INT8
    kernels need VNNI), and a test must not."""
    timed: list[float] = []

    def timing(candidate, reference, rounds: int = 2) -> float:
        timed.append(speedup)
        return speedup

    monkeypatch.setattr("oboyu.models.openvino_engine.speedup_over", timing)
    monkeypatch.setenv("OBOYU_CACHE_DIR", str(tmp_path))  # no verdict yet: the first Embedder probes
    steps: list[str] = []
    chosen = Embedder(model_dir, on_probe=steps.append)
    problem = Embedder(model_dir, engine=ONNXRUNTIME).openvino_problem()  # the verdict just kept
    if problem is not None:
        pytest.skip(f"OpenVINO failed its probe on this machine: {problem}")
    assert (chosen.engine, len(timed), len(steps)) == (engine, 1, 1)
    assert f"{speedup:.2f}x" in chosen.engine_reason
    again = Embedder(model_dir, on_probe=steps.append)  # a later process: the verdict is kept
    assert (again.engine, len(timed), len(steps)) == (engine, 1, 1)
    kept = json.loads((tmp_path / "provider-checks.json").read_text())
    assert [verdict["speedup"] for verdict in kept.values()] == [speedup]
    # the same cache dir seen from another CPU (a network home): that CPU gets its own timing
    monkeypatch.setattr("oboyu.models.providers.cpu_description", lambda: ("Another CPU", ["AVX2"]))
    Embedder(model_dir, on_probe=steps.append)
    assert (len(timed), len(steps)) == (2, 2)


def test_engines_are_timed_on_their_best_interleaved_rounds(monkeypatch) -> None:
    runs: list[str] = []
    times = iter([9.0, 9.0, 3.0, 1.0, 2.0, 4.0, 2.5, 7.0])  # warm-ups, then (candidate, reference) rounds
    clock = {"now": 0.0}

    def run(name: str):
        def go() -> None:
            runs.append(name)
            clock["now"] += next(times)
        return go

    monkeypatch.setattr("oboyu.models.openvino_engine.time.perf_counter", lambda: clock["now"])
    # best candidate 2.0 s (of 3.0, 2.0, 2.5), best reference 1.0 s (of 1.0, 4.0, 7.0)
    assert speedup_over(run("candidate"), run("reference"), rounds=3) == pytest.approx(0.5)
    assert runs == ["candidate", "reference"] * 4


def test_openvino_asked_for_where_it_cannot_run_is_one_line() -> None:
    with pytest.raises(OboyuError, match="no OpenVINO form"):
        choose_engine(WITHOUT_FORM, "openvino", "x86_64", "Linux", True, None)
    with pytest.raises(OboyuError, match="pip install openvino"):
        choose_engine(WITH_FORM, "openvino", "x86_64", "Linux", False, None)


def test_engine_ids_round_trip() -> None:
    assert split_engine("intfloat/multilingual-e5-small@aa932319959c+openvino") == (
        "intfloat/multilingual-e5-small@aa932319959c", OPENVINO)
    assert split_engine("cl-nagoya/a+b@123") == ("cl-nagoya/a+b@123", ONNXRUNTIME)


@needs_openvino
def test_openvino_agrees_with_onnxruntime_and_ignores_batch_mates(model_dir) -> None:
    onnxruntime = Embedder(model_dir, engine=ONNXRUNTIME)
    problem = onnxruntime.openvino_problem()
    if problem is not None:  # this CPU's kernels fail the probe: then it is never chosen
        assert Embedder(model_dir).engine == ONNXRUNTIME
        pytest.skip(f"OpenVINO failed its probe on this machine: {problem}")
    openvino = Embedder(model_dir, engine=OPENVINO)
    assert openvino.info.model_id == onnxruntime.info.model_id + "+openvino"
    assert openvino.info.vectors_key != onnxruntime.info.vectors_key  # the cache keeps them apart
    texts = [openvino.passage_text(line) for line in probe_sentences()][:24]
    ours, theirs = openvino.embed(texts), onnxruntime.embed(texts)
    assert openvino.provider.startswith("OpenVINO")
    # the same weights and scales; bf16 or f32 outside the INT8 products, as the CPU offers
    assert float(np.min(np.sum(ours * theirs, axis=1))) > 0.99
    # alone against batched with longer texts (per-batch INT8 scales move them by about 0.03;
    # bf16 kernels, by 0.012 when the padded length is not a multiple of 16)
    alone = np.vstack([openvino.embed([t]) for t in texts[:6]])
    assert float(np.abs(alone - ours[:6]).max()) <= 1e-5
    # many small batches, run side by side on the streams, each text's vector back in its place
    np.testing.assert_allclose(openvino.embed(texts, token_budget=64), ours, atol=1e-5)
    assert "openvino_telemetry" not in sys.modules  # the runtime only: the converter's import sends telemetry
    # queries are onnxruntime's whichever engine made the passages (a faster start, never stored)
    questions = ["先週の会議で決まったこと", "how to mount a disk"]
    np.testing.assert_allclose(openvino.embed_queries(questions), onnxruntime.embed_queries(questions), atol=1e-6)


@needs_openvino
@pytest.mark.slow
def test_an_index_keeps_the_engine_its_vectors_came_from(oboyu_env, model_dir, tmp_path) -> None:
    notes = str(EXAMPLE_NOTES / "work")
    cache = tmp_path / "cache"  # an embedding cache of its own, the session's models in it
    cache.mkdir()
    (cache / "models").symlink_to(model_dir.parent, target_is_directory=True)
    # the session's OpenVINO verdict (probed here at most once a session), so that no command below
    # probes and times the engines again
    Embedder(model_dir, engine=ONNXRUNTIME).openvino_problem()
    shutil.copy(Path(os.environ["OBOYU_CACHE_DIR"]) / "provider-checks.json", cache / "provider-checks.json")
    oboyu_env = {**oboyu_env, "OBOYU_CACHE_DIR": str(cache)}

    def status() -> dict:
        done = run_oboyu(oboyu_env, "status", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    made = run_oboyu({**oboyu_env, "OBOYU_PROVIDER": "openvino"}, "index", notes)
    assert made.returncode == 0, made.stderr
    first = status()
    assert first["model"].endswith("+openvino") and first["provider"] == "OpenVINO CPU"
    # a later run without the request keeps OpenVINO: nothing to embed
    again = run_oboyu(oboyu_env, "index", notes, "--full")
    assert again.returncode == 0, again.stderr
    assert status()["model"] == first["model"]
    assert "; 0 chunks embedded" in again.stderr, again.stderr
    # asking for onnxruntime re-embeds every passage, none taken from OpenVINO's cached vectors
    switched = run_oboyu({**oboyu_env, "OBOYU_PROVIDER": "cpu"}, "index", notes)
    assert switched.returncode == 0, switched.stderr
    assert " 0 reused from the cache" in switched.stderr and "; 0 chunks embedded" not in switched.stderr, switched.stderr
    second = status()
    assert second["model"] == split_engine(first["model"])[0]
    assert second["embedded_chunks"] == second["chunks"] == first["chunks"]
    found = run_oboyu(oboyu_env, "query", "議事録", "--json")
    assert found.returncode == 0 and json.loads(found.stdout), found.stderr
    # asked for another engine at query time, a query keeps the index's (its own vector is
    # onnxruntime's either way): it answered "run `oboyu index` again", which re-embeds everything
    asked = run_oboyu({**oboyu_env, "OBOYU_PROVIDER": "openvino"}, "query", "議事録", "--json")
    assert asked.returncode == 0 and not asked.stderr, asked.stderr
    assert [r["path"] for r in json.loads(asked.stdout)] == [r["path"] for r in json.loads(found.stdout)]
    assert status()["model"] == second["model"]


@needs_openvino
def test_a_model_openvino_cannot_read_is_said_with_its_reason(tmp_path: Path) -> None:
    """OpenVINO's first line says only where in its C++ it failed; the reason follows it. With a
    compiled-model cache, loading is tried once more without it before giving up."""
    from oboyu.models.openvino_engine import OpenVinoSession

    broken = tmp_path / "model.openvino.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(OboyuError) as caught:
        OpenVinoSession(broken, 1, tmp_path / "cache")
    message = str(caught.value)
    assert message.startswith("OpenVINO cannot load model.openvino.onnx: ") and "Exception from src/" not in message
    assert len(message.split(": ", 1)[1].split(";")[0].strip()) > 3
