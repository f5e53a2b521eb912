"""The reranker: a tiny random XLM-R cross-encoder made here goes through the conversion pipeline,
scores pairs as PyTorch does, reorders search results when installed, and is off when absent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import tiny_models
from conftest import run_oboyu as oboyu

from oboyu.errors import OboyuError
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.catalogue import rerankers
from oboyu.models.convert.export import TorchEncoder, pair_batches
from oboyu.models.convert.pipeline import Options, convert
from oboyu.models.convert.source import read_source
from oboyu.models.embedding import Embedder
from oboyu.models.rerank import Reranker
from oboyu.modes import Mode
from oboyu.search.query import RERANK_DEPTH, search
from oboyu.search.rankers import SqlRanker

pytestmark = pytest.mark.torch  # builds tiny models with PyTorch and transformers

QUERY = tiny_models.corpus()[0]  # the tiny reranker was trained to score a sentence paired with itself high
OPEN_GATE = -1.0  # a correlation is at least -1: the install never hangs on this CPU's INT8 kernels
PASSAGES = [QUERY, "会議の議事録をまとめる方法", "How do I restore the database from a backup?", "猫が縁側で昼寝をしている。",
            "明日の午後三時から、第二会議室で定例ミーティングを行います。" * 20]  # the last one is cut to fit


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A tiny embedding model and a tiny reranker, converted and installed in one models dir."""
    root = tmp_path_factory.mktemp("tiny-rerank")
    made = {"embedder": tiny_models.make_xlmr(root / "xlmr"), "reranker": tiny_models.make_xlmr_reranker(root / "ce")}
    installed = root / "cache" / "models"
    # a tiny model's scores spread little, so INT8 noise weighs more in their correlation than in a
    # real reranker's, and where it lands differs between CPUs (AVX2, AVX-512 VNNI): the gate is
    # forced open here and forced shut in the failing case
    gates = {"embedder": 0.98, "reranker": OPEN_GATE}
    return {kind: Path(convert(str(folder), options=Options(name=f"tiny-{kind}", min_cosine=gates[kind]),
                               root=installed)["path"])
            for kind, folder in made.items()} | {"made_reranker": made["reranker"], "cache": root / "cache"}


def test_a_cross_encoder_converts_to_a_reranker_that_scores_like_pytorch(models) -> None:
    manifest = json.loads((models["reranker"] / "manifest.json").read_text())
    assert manifest["kind"] == "reranker" and manifest["precision"] == "int8 dynamic"
    assert manifest["export"]["against_pytorch"]["score_correlation"] >= 0.9999
    correlation = manifest["validation"]["score_correlation"]
    assert -1 <= correlation <= 1 and 0 <= manifest["validation"]["retrieval"]["top1_agreement"] <= 1
    reranker = Reranker(models["reranker"])
    ours = reranker.score(QUERY, PASSAGES)
    source = read_source(models["made_reranker"], "ce", None)
    encoder = TorchEncoder(source)
    encodings = reranker.tokenizer.encode_batch([(QUERY, p) for p in PASSAGES])
    assert max(len(e.ids) for e in encodings) == reranker.max_tokens == 128  # the long pair was cut
    theirs = np.concatenate([encoder.run(*pair_batches([e], reranker.pad_id)[0]) for e in encodings])
    # INT8 against PyTorch fp32: scores in line, PyTorch's best among INT8's best two (a tiny
    # model's INT8 is noisy, and its top scores can be close)
    assert ours.shape == (5,) and np.corrcoef(ours, theirs)[0, 1] > 0.9
    assert int(np.argmax(theirs)) in np.argsort(-ours)[:2]
    with pytest.raises(OboyuError, match="static quantization of rerankers is not supported"):
        convert(str(models["made_reranker"]), options=Options(quantization="static"), root=models["cache"] / "x")
    # a gate no model can pass (a correlation is at most 1): the refusal does not hang on how close
    # this CPU's INT8 kernels come to fp32
    with pytest.raises(OboyuError, match=r"failed the gate: score correlation with fp32 -?[\d.]+ < 1\.01"):
        convert(str(models["made_reranker"]), options=Options(min_cosine=1.01), root=models["cache"] / "x")
    assert not (models["cache"] / "x").exists() or not [p for p in (models["cache"] / "x").iterdir()]


def test_search_reorders_its_best_chunks_by_the_reranker(models, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i, line in enumerate(tiny_models.corpus()[:40]):
        (notes / f"{i:02}.txt").write_text(line + "\n", encoding="utf-8")
    embedder = Embedder(models["embedder"])
    reranker = Reranker(models["reranker"])
    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder).index([notes])
        # vector mode: its order is the fused order as it stands (hybrid adds a share of each
        # result's confidence, which a reranked search leaves out, so the two may differ there)
        plain = search(SqlRanker(store), embedder, QUERY, k=40, group=False, mode=Mode.VECTOR)
        reranked = search(SqlRanker(store), embedder, QUERY, k=40, group=False, mode=Mode.VECTOR, reranker=reranker)
        hybrid = search(SqlRanker(store), embedder, QUERY, k=40, group=False, reranker=reranker)
        top = reranked[:RERANK_DEPTH]
        texts = SqlRanker(store).chunks_by_id([r.chunk_id for r in plain[:RERANK_DEPTH]])
    assert {r.chunk_id for r in plain} == {r.chunk_id for r in reranked}  # the same candidates
    assert {r.chunk_id for r in top} == {r.chunk_id for r in plain[:RERANK_DEPTH]}
    scores = reranker.score(QUERY, [hit.text for hit in texts.values()])
    assert [r.ranks["rerank"] for r in top] == list(range(1, RERANK_DEPTH + 1))
    assert [r.leg_scores["rerank"] for r in top] == sorted((r.leg_scores["rerank"] for r in top), reverse=True)
    assert np.allclose(sorted(scores), sorted(r.leg_scores["rerank"] for r in top), atol=2e-4)
    # the chunks below the reranked depth keep the fused order
    assert [r.chunk_id for r in reranked[RERANK_DEPTH:]] == [r.chunk_id for r in plain[RERANK_DEPTH:]]
    # hybrid too: the reranked head, then the tail by its fused score alone
    assert [r.ranks["rerank"] for r in hybrid[:RERANK_DEPTH]] == list(range(1, RERANK_DEPTH + 1))
    tail = [r.ranking_score for r in hybrid[RERANK_DEPTH:]]
    assert tail and tail == sorted(tail, reverse=True)


def test_query_uses_an_installed_reranker_and_runs_without_one(models, tmp_path: Path) -> None:
    env = dict(os.environ, OBOYU_CACHE_DIR=str(models["cache"]), OBOYU_DB=str(tmp_path / "index.duckdb"))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# 議事録\n\n会議の議事録をまとめる方法。\n", encoding="utf-8")
    (notes / "b.md").write_text("# Backup\n\nHow to restore the database.\n", encoding="utf-8")
    assert oboyu(env, "index", str(notes), "--model", "tiny-embedder").returncode == 0
    listed = {r["id"]: r for r in json.loads(oboyu(env, "models", "list", "--json").stdout)}
    assert listed["tiny-reranker"]["kind"] == "reranker"
    results = json.loads(oboyu(env, "query", QUERY, "--json").stdout)
    assert all(r["ranks"]["rerank"] is not None for r in results)  # installed: used by default
    results = json.loads(oboyu(env, "query", QUERY, "--json", "--no-rerank").stdout)
    assert all("rerank" not in r["ranks"] for r in results)
    done = oboyu(env, "index", "--model", "tiny-reranker")
    assert done.returncode == 2 and "tiny-reranker is a reranker, not an embedding model" in done.stderr

    empty = dict(env, OBOYU_CACHE_DIR=str(tmp_path / "empty-cache"))
    (tmp_path / "empty-cache").mkdir()
    assert rerankers(tmp_path / "empty-cache" / "models") == []
    done = oboyu(empty, "query", QUERY, "--rerank", "--mode", "keyword")
    assert done.returncode == 2 and "no reranker is installed" in done.stderr and "Traceback" not in done.stderr
