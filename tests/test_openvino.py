"""OpenVINO as the passages' engine: when it is chosen, that its vectors agree with onnxruntime's
and do not depend on their batch-mates, that queries stay onnxruntime's, and that an index keeps
the engine its passages' vectors came from (the two engines' vectors never mix, in the index or
the embedding cache)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from oboyu.errors import OboyuError
from oboyu.models.embedding import Embedder
from oboyu.models.manifest import ONNXRUNTIME, OPENVINO, split_engine
from oboyu.models.openvino_engine import choose_engine, openvino_installed
from oboyu.models.probe import probe_sentences
from tests.conftest import EXAMPLE_NOTES, run_oboyu

WITH_FORM = {"id": "m", "engines": {OPENVINO: {"file": "model.openvino.onnx"}}}
WITHOUT_FORM = {"id": "m"}
needs_openvino = pytest.mark.skipif(not openvino_installed(), reason="openvino is not installed (x86 only)")


@pytest.mark.parametrize(("manifest", "requested", "machine", "system", "installed", "accelerated", "refused", "engine"), [
    (WITH_FORM, None, "x86_64", "Linux", True, None, False, OPENVINO),
    (WITH_FORM, None, "AMD64", "Windows", True, None, False, OPENVINO),
    (WITH_FORM, None, "x86_64", "Linux", False, None, False, ONNXRUNTIME),  # not installed
    (WITH_FORM, None, "aarch64", "Linux", True, None, False, ONNXRUNTIME),  # ARM
    (WITH_FORM, None, "arm64", "Darwin", True, None, False, ONNXRUNTIME),  # Apple silicon: CoreML
    (WITH_FORM, None, "x86_64", "Darwin", True, None, False, ONNXRUNTIME),  # an Intel Mac
    (WITH_FORM, None, "x86_64", "Linux", True, "onnxruntime-gpu", False, ONNXRUNTIME),  # CUDA leads
    (WITH_FORM, None, "x86_64", "Linux", True, None, True, ONNXRUNTIME),  # failed its probe here
    (WITHOUT_FORM, None, "x86_64", "Linux", True, None, False, ONNXRUNTIME),  # a converted model
    (WITH_FORM, "cpu", "x86_64", "Linux", True, None, False, ONNXRUNTIME),  # another provider asked for
    (WITH_FORM, "OpenVINO", "aarch64", "Linux", True, "onnxruntime-gpu", True, OPENVINO),  # asked for: it wins
])
def test_the_engine_follows_the_machine(manifest, requested, machine, system, installed, accelerated, refused,
                                        engine) -> None:
    assert choose_engine(manifest, requested, machine, system, installed, accelerated, refused)[0] == engine


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
    # an index whose engine is asked away from at query time says so, in one line
    asked = run_oboyu({**oboyu_env, "OBOYU_PROVIDER": "openvino"}, "query", "議事録")
    assert asked.returncode != 0 and "Traceback" not in asked.stderr
    assert "built with model" in asked.stderr and len(asked.stderr.strip().splitlines()) == 1, asked.stderr
