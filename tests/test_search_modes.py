"""Keyword BM25 against a hand-computed example, fusion, evaluation metrics and result shape,
on real DuckDB files."""

import concurrent.futures
import io
import os
import subprocess
import sys
from pathlib import Path

import click
import duckdb
import numpy as np
import pytest

from oboyu.cli.output import colour, highlight
from oboyu.errors import OboyuError
from oboyu.index.records import ChunkRecord, DocumentRecord
from oboyu.index.schema import SCHEMA_VERSION
from oboyu.index.store import Store
from oboyu.modes import Mode
from oboyu.search import Filters, SqlRanker, make_filters, make_snippet, search
from oboyu.search.evaluate import Query, doc_file_name, evaluate
from oboyu.search.fusion import convex, convex_with_files, rrf
from oboyu.search.resident import ResidentIndex


def add_document(store: Store, path: str, chunks: list[tuple[str, dict[str, int]]]) -> None:
    doc = DocumentRecord(path, "/corpus", 1, 1, path, "utf-8", "text", None)
    records = [ChunkRecord(f"{path}#{i}", i, "", i + 1, i + 1, 0, len(text), text, terms) for i, (text, terms) in enumerate(chunks)]
    vectors = np.eye(4, dtype=np.float32)[[i % 4 for i in range(len(chunks))]]
    store.write_documents([(doc, records, vectors)])


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "index.duckdb") as store:
        store.set_model("test-model", 4)
        add_document(store, "/corpus/a.txt", [("猫と猫と犬", {"猫": 2, "犬": 1})])
        add_document(store, "/corpus/b.txt", [("猫", {"猫": 1})])
        add_document(store, "/corpus/c.txt", [("鳥鳥鳥鳥", {"鳥": 4})])
        yield store


def test_bm25_matches_a_hand_computed_example(store: Store) -> None:
    # N = 3 chunks, lengths 3, 1, 4 (avg 8/3); k1 = 0.9, b = 0.4; df(猫) = 2
    # idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6 = 0.470004
    # a: 0.470004 * 2 * 1.9 / (2 + 0.9 * (0.6 + 0.4 * 3 / (8/3))) = 0.606457
    # b: 0.470004 * 1 * 1.9 / (1 + 0.9 * (0.6 + 0.4 * 1 / (8/3))) = 0.533139
    scores = dict(SqlRanker(store).keyword_scores(["猫"], 10))
    assert scores.keys() == {"/corpus/a.txt#0", "/corpus/b.txt#0"}
    assert scores["/corpus/a.txt#0"] == pytest.approx(0.606457, abs=1e-5)
    assert scores["/corpus/b.txt#0"] == pytest.approx(0.533139, abs=1e-5)
    # OR semantics: a chunk matching any query word is found, never an all-words AND
    assert {cid for cid, _ in SqlRanker(store).keyword_scores(["犬", "鳥", "無い"], 10)} == {"/corpus/a.txt#0", "/corpus/c.txt#0"}
    # a filtered search scores as the unfiltered pass does (the same BM25, another query)
    filtered = dict(SqlRanker(store).keyword_scores(["猫"], 10, Filters(path_globs=("*.txt",))))
    assert filtered == pytest.approx(scores, abs=1e-9)


def test_keyword_index_follows_document_replacement(store: Store) -> None:
    add_document(store, "/corpus/b.txt", [("犬", {"犬": 1})])
    assert {cid for cid, _ in SqlRanker(store).keyword_scores(["猫"], 10)} == {"/corpus/a.txt#0"}
    assert store.con.execute("SELECT count(*) FROM kw_lengths").fetchone()[0] == 3


def test_fusion_functions() -> None:
    legs = {"vector": [("a", 0.9), ("b", 0.8), ("c", 0.1)], "keyword": [("c", 12.0), ("b", 11.0)]}
    # b: 1/62 + 1/62 = 0.032258; c: 1/63 + 1/61 = 0.032266; a: 1/61
    assert [cid for cid, _ in rrf(legs)] == ["c", "b", "a"]
    fused = dict(convex(legs, {"vector": 0.5, "keyword": 0.5}))
    assert fused["a"] == pytest.approx(0.5) and fused["b"] == pytest.approx(0.5 * 0.875)
    assert fused["c"] == pytest.approx(0.5)


def test_a_file_leg_lifts_every_passage_of_its_files() -> None:
    legs = {"vector": [("a1", 0.9), ("b1", 0.8), ("c1", 0.1)], "keyword": [("c1", 12.0), ("b1", 11.0)]}
    files = {"a0": "a", "a1": "a", "b0": "b", "b1": "b", "c0": "c", "c1": "c", "d0": "d"}
    leads = [("b0", 0.8), ("d0", 0.7), ("a0", 0.4)]  # each file's first passage: b best, then d, then a
    fused = dict(convex_with_files(legs, {"lead": leads}, files, {"vector": 1, "keyword": 1, "lead": 1}))
    # by hand: scaled leads b 1, d 0.75, a 0; passages as in convex, plus their file's lead
    assert fused["a1"] == pytest.approx(1.0 + 0 + 0)
    assert fused["b1"] == pytest.approx(0.875 + 0 + 1.0)
    assert fused["c1"] == pytest.approx(0 + 1.0 + 0)  # file c has no lead score
    # a file found by its lead alone is a candidate through its lead passage
    assert fused["d0"] == pytest.approx(0.75) and fused["b0"] == pytest.approx(1.0) and fused["a0"] == 0
    assert "c0" not in fused
    # a file leg with a ceiling: one weak match is scaled against it, not to a full 1
    weak = dict(convex_with_files(legs, {"lead_words": [("d0", 2.0)]}, files, {"lead_words": 1}, {"lead_words": 8.0}))
    assert weak["d0"] == pytest.approx(0.25)


def test_keyword_mode_results_and_evaluation_metrics(store: Store) -> None:
    results = search(SqlRanker(store), None, "猫", k=5, mode=Mode.KEYWORD)
    assert [r.path for r in results] == ["/corpus/a.txt", "/corpus/b.txt"]
    assert results[0].ranks == {"keyword": 1} and results[0].mode == "keyword"
    with pytest.raises(Exception, match="needs the embedding model"):
        search(SqlRanker(store), None, "猫", mode=Mode.HYBRID)


def test_evaluation_files_with_a_wrong_line_say_which_line(tmp_path: Path) -> None:
    from oboyu.search.evaluate import read_absent, read_queries, write_corpus

    docs, queries, absent = tmp_path / "docs.jsonl", tmp_path / "queries.jsonl", tmp_path / "absent.jsonl"
    docs.write_text('{"id": "a", "text": "猫"}\n\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(OboyuError, match=r"docs.jsonl, line 3: each document needs `id` and `text`"):
        write_corpus(docs, tmp_path / "corpus")
    assert not (tmp_path / "corpus").exists()  # nothing written for a file with a wrong line
    queries.write_text('{"query": "猫", "relevant_doc_id": "a"}\n' * 3 + "{bad\n", encoding="utf-8")
    with pytest.raises(OboyuError, match=r"queries.jsonl, line 4, column 2: not JSON \(Expecting property name"):
        read_queries(queries)
    queries.write_text('{"query": "猫", "relevant_doc_id": "a"}\n["猫"]\n', encoding="utf-8")
    with pytest.raises(OboyuError, match=r"line 2: not a JSON object"):
        read_queries(queries)
    for wrong in ('{"query": "猫", "relevant_doc_ids": "a"}', '{"query": 5, "relevant_doc_id": "a"}'):
        queries.write_text(wrong + "\n", encoding="utf-8")
        with pytest.raises(OboyuError, match=r"line 1: each query needs"):
            read_queries(queries)
    absent.write_text('{"query": "犬"}\n{"q": "鳥"}\n', encoding="utf-8")
    with pytest.raises(OboyuError, match=r"absent.jsonl, line 2: each line needs `query`"):
        read_absent(absent)
    absent.write_bytes(b'{"query": "\x82\xa0"}\n')  # Shift_JIS, not UTF-8
    with pytest.raises(OboyuError, match=r"cannot read .*absent.jsonl"):
        read_absent(absent)
    # empty files and an id given twice: figures over nothing, or a document overwritten, said (a user trial)
    for empty, read, says in ((docs, lambda p: write_corpus(p, tmp_path / "corpus"), "no documents"),
                              (queries, read_queries, "no queries"), (absent, read_absent, "no questions")):
        empty.write_text("\n", encoding="utf-8")
        with pytest.raises(OboyuError, match=says):
            read(empty)
    docs.write_text('{"id": "a", "text": "猫"}\n{"id": "b", "text": "犬"}\n{"id": "a", "text": "鳥"}\n', encoding="utf-8")
    with pytest.raises(OboyuError, match=r"line 3: id 'a' again \(first on line 1\)"):
        write_corpus(docs, tmp_path / "corpus")


def test_evaluation_metrics_on_known_answers(tmp_path: Path) -> None:
    with Store(tmp_path / "eval.duckdb") as store:
        store.set_model("test-model", 4)
        for doc_id, word in (("d/1", "猫"), ("d/2", "犬"), ("d/3", "鳥")):
            add_document(store, f"/corpus/{doc_file_name(doc_id)}", [(word, {word: 1})])
        add_document(store, f"/corpus/{doc_file_name('d/4')}", [("猫 猫 猫 鳥", {"猫": 3, "鳥": 1})])
        queries = [
            Query("q1", "犬", frozenset({"d/2"})),  # rank 1
            Query("q2", "猫", frozenset({"d/1"})),  # d/4 scores 0.9056 > d/1 0.7544 (BM25 by hand): rank 2
            Query("q3", "魚", frozenset({"d/3"})),  # no match
        ]
        (scores,) = evaluate(store, None, queries, [Mode.KEYWORD])
    assert scores.queries == 3
    assert scores.recall_at_1 == pytest.approx(1 / 3)
    assert scores.recall_at_10 == pytest.approx(2 / 3)
    assert scores.mrr_at_10 == pytest.approx((1 + 1 / 2) / 3)
    assert scores.ndcg_at_10 == pytest.approx((1 + 1 / np.log2(3)) / 3)


def test_snippet_picks_the_matching_sentence_and_marks_the_words() -> None:
    text = "最初の文は関係ない。ここで絶対パスを表示する方法を説明する。最後の文。"
    snippet, spans = make_snippet(text, "絶対パスの表示", limit=30)
    assert snippet.startswith("…ここで絶対パスを表示する")
    assert [snippet[a:b] for a, b in spans] == ["絶対パス", "表示"]  # adjacent matches join


def test_a_snippet_of_rows_shows_the_row_asked_about() -> None:
    """A trial's spreadsheet passage (rows, one a line, no full stops) gave its first 200
    characters as the snippet: the row asked about was cut off."""
    rows = [f"row {n}: 日付: 2024-05-{n:02} | 費目: {item} | 金額: {n * 1100} | 氏名: 高橋 健太 | 備考: 客先訪問のため"
            for n, item in enumerate(["書籍代", "文具", "会議費", "交通費", "書籍代", "タクシー代", "通信費"], 2)]
    snippet, spans = make_snippet("\r\n".join(rows), "タクシー代", limit=120)
    assert "費目: タクシー代" in snippet and "row 2:" not in snippet
    assert [snippet[a:b] for a, b in spans] == ["タクシー代"]


def test_a_snippet_of_one_long_line_shows_the_word_asked_about() -> None:
    """A user trial: a passage cut from a 500 KB line (no full stop, no line break) had its first
    200 characters as the snippet and no match marked."""
    for text, query, word in (("alpha beta gamma " * 60 + "UNIQUEMARKER here " + "delta " * 40, "UNIQUEMARKER", "UNIQUEMARKER"),
                              ("あいうえおかきくけこ" * 60 + "秘密の合言葉" + "さしすせそ" * 40, "合言葉", "合言葉")):
        snippet, spans = make_snippet(text, query)
        assert snippet.startswith("…") and snippet.endswith("…") and len(snippet) <= 200, snippet
        assert [snippet[a:b] for a, b in spans] == [word], snippet
        assert snippet.index(word) < 100  # the word near the start, as in a sentence that holds it
    early = "alpha UNIQUEMARKER " + "beta gamma " * 40  # one long sentence, the word already in view
    assert make_snippet(early, "UNIQUEMARKER")[0].startswith("alpha UNIQUEMARKER")
    plain = "alpha beta gamma " * 60
    assert make_snippet(plain, "UNIQUEMARKER")[0].startswith("alpha beta")  # no match: the passage's start


def test_terminal_highlight_and_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    coloured = highlight("find the Index here", [(9, 14)])
    assert "\x1b[" in coloured and click.unstyle(coloured) == "find the Index here"

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert colour(Terminal())
    monkeypatch.setenv("TERM", "dumb")
    assert not colour(Terminal())
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour(Terminal())
    assert not colour(io.StringIO())


def make_old_index(path: Path, version: int) -> None:
    """An index in the shape an older oboyu wrote: version 3 had no record of folders left out,
    version 2 no roots table and no PDF pages, version 1 no keyword index either."""
    with Store(path) as store:
        store.set_model("test-model", 4)
        add_document(store, "/corpus/a.txt", [("猫が好き", {"猫": 1})])
        if version == 3:
            store.con.execute("INSERT INTO roots (path, name, follow_symlinks, added_at) "
                              "VALUES ('/corpus', 'corpus', false, now())")
            store.con.execute("ALTER TABLE roots DROP COLUMN left_out")
            store.con.execute("ALTER TABLE roots DROP COLUMN description")
        else:
            store.con.execute("DROP TABLE roots")
            store.con.execute("ALTER TABLE chunks DROP COLUMN page_start")
            store.con.execute("ALTER TABLE chunks DROP COLUMN page_end")
        if version == 1:
            store.con.execute("DROP TABLE kw_postings")
            store.con.execute("DROP TABLE kw_lengths")
        store.con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_index_is_upgraded_on_first_open_even_for_reading(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.duckdb"
    make_old_index(path, version)
    with Store(path, read_only=True) as store:  # upgraded in a brief writable open, then read
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert [cid for cid, _ in SqlRanker(store).keyword_scores(["猫"], 5)] == ["/corpus/a.txt#0"]
        assert [(r.path, r.name) for r in store.roots()] == [("/corpus", "corpus")]
        assert SqlRanker(store).chunks_by_id(["/corpus/a.txt#0"])["/corpus/a.txt#0"].page_start is None
        assert store.integrity_problems() == []


@pytest.mark.parametrize("version", [5, 8, 9])
def test_an_older_keyword_index_is_made_anew_once_a_batch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """Versions 6, 7, 9 and 10 each changed how words are analysed (version 8 stemmed English by
    one ending: meetings -> meeting, meeting -> meet; version 9 split Wi-Fi only): the upgrade
    analyses every stored passage again, a few at a time, once however many it crosses."""
    from oboyu.documents.keywords import stem, term_counts
    from oboyu.index import reanalysis, schema
    from oboyu.index.records import keyword_text

    monkeypatch.setattr(reanalysis, "KEYWORD_BATCH", 2)
    passes = []
    make_keywords = schema.make_keywords_beside
    monkeypatch.setattr(schema, "make_keywords_beside", lambda store: passes.append(1) or make_keywords(store))
    path = tmp_path / "old.duckdb"
    texts = ["weekly meetings", "the meeting notes", "会議のメモ", "renewal of the lease", "Wi-Fiの設定"]
    with Store(path) as store:
        store.set_model("test-model", 4)
        add_document(store, "/corpus/a.txt", [(text, {"meeting": 1}) for text in texts])  # as an old version kept them
        if version < 8:
            store.con.execute("ALTER TABLE roots DROP COLUMN description")
        store.con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    with Store(path, read_only=True) as store:
        postings = store.con.execute("SELECT chunk_id, term, tf FROM kw_postings").fetchall()
        lengths = store.con.execute("SELECT count(*) FROM kw_lengths").fetchone()
    held: dict[str, dict[str, int]] = {}
    for cid, term, tf in postings:
        held.setdefault(cid, {})[term] = tf
    assert held == {f"/corpus/a.txt#{i}": dict(term_counts(keyword_text(None, "", text))) for i, text in enumerate(texts)}
    assert lengths == (len(texts),)
    assert stem("meetings") in held["/corpus/a.txt#0"] and stem("meeting") in held["/corpus/a.txt#1"]
    assert "wifi" in held["/corpus/a.txt#4"]
    assert passes == [1]


def test_a_stopped_upgrade_goes_on_where_it_was_and_the_old_index_serves_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new keyword index is made beside the old, a batch committed at a time: an upgrade
    stopped halfway leaves the file at its old version, readable, and the next open analyses only
    the passages left; passages that changed in between (an older oboyu wrote) start it again."""
    from oboyu.documents.keywords import term_counts
    from oboyu.index import reanalysis
    from oboyu.index.records import keyword_text

    monkeypatch.setattr(reanalysis, "KEYWORD_BATCH", 2)
    path = tmp_path / "old.duckdb"
    texts = ["weekly meetings", "the meeting notes", "会議のメモ", "renewal of the lease", "Wi-Fiの設定"]
    with Store(path) as store:
        store.set_model("test-model", 4)
        add_document(store, "/corpus/a.txt", [(text, {"old": 1}) for text in texts])
        store.con.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    write, writes = reanalysis._write, []

    def stopped_after_two(*args: object) -> None:
        if len(writes) == 2:
            raise KeyboardInterrupt
        writes.append(1)
        write(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(reanalysis, "_write", stopped_after_two)
    with pytest.raises(KeyboardInterrupt):
        Store(path)
    monkeypatch.setattr(reanalysis, "_write", write)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("9",)
    assert con.execute("SELECT count(*) FROM kw_lengths_next").fetchone() == (4,)
    assert con.execute("SELECT count(*) FROM kw_postings WHERE term = 'old'").fetchone() == (5,)  # the old index, whole
    con.close()
    analysed: list[str] = []
    counts_of = reanalysis.counts_of
    monkeypatch.setattr(reanalysis, "counts_of", lambda batch: analysed.extend(batch) or counts_of(batch))
    with Store(path) as store:
        held: dict[str, dict[str, int]] = {}
        for cid, term, tf in store.con.execute("SELECT chunk_id, term, tf FROM kw_postings").fetchall():
            held.setdefault(cid, {})[term] = tf
        tables = {row[0] for row in store.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert analysed == [keyword_text(None, "", texts[4])]  # only the passage left
    assert held == {f"/corpus/a.txt#{i}": dict(term_counts(keyword_text(None, "", text))) for i, text in enumerate(texts)}
    assert not any(table.endswith("_next") for table in tables)

    with Store(path) as store:  # stopped again, then a passage goes before the upgrade goes on
        store.con.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    writes.clear()
    monkeypatch.setattr(reanalysis, "_write", stopped_after_two)
    with pytest.raises(KeyboardInterrupt):
        Store(path)
    monkeypatch.setattr(reanalysis, "_write", write)
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM chunks WHERE id = '/corpus/a.txt#0'")
    con.close()
    analysed.clear()
    with Store(path) as store:
        ids = {row[0] for row in store.con.execute("SELECT chunk_id FROM kw_lengths").fetchall()}
    assert ids == {f"/corpus/a.txt#{i}" for i in range(1, 5)} and len(analysed) == 1 + 4  # the rest, then anew


def test_a_large_upgrade_is_analysed_by_worker_processes_and_says_how_far_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million passages take minutes to analyse again: workers (real spawned processes here,
    as many as two cores allow) give the same terms as this process, and the log says how far."""
    from oboyu.documents.keywords import term_counts
    from oboyu.index import reanalysis
    from oboyu.index.records import keyword_text

    monkeypatch.setattr(reanalysis, "KEYWORD_BATCH", 3)
    monkeypatch.setattr(reanalysis, "POOL_FROM", 5)
    monkeypatch.setattr(reanalysis, "_cores", lambda: 2)
    monkeypatch.setattr(reanalysis, "_may_spawn", lambda: True)  # pytest's main module is guarded
    monkeypatch.setattr(reanalysis, "SAY_AFTER", 0.0)
    monkeypatch.setattr(reanalysis, "SAY_EVERY", 0.0)
    path = tmp_path / "old.duckdb"
    texts = [f"{i}回目の会議で Wi-Fi の設定を決めた meeting notes" for i in range(8)]
    with Store(path) as store:
        store.set_model("test-model", 4)
        add_document(store, "/corpus/a.txt", [(text, {"meeting": 1}) for text in texts])
        store.con.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    spawned = []
    pool = concurrent.futures.ProcessPoolExecutor  # imported by the upgrade when it spawns
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", lambda *a, **k: spawned.append(a) or pool(*a, **k))
    said: list[str] = []
    monkeypatch.setattr(reanalysis._log, "warning", said.append)  # the CLI's handler may hold the "oboyu" logger
    with Store(path) as store:
        postings = store.con.execute("SELECT chunk_id, term, tf FROM kw_postings").fetchall()
    held: dict[str, dict[str, int]] = {}
    for cid, term, tf in postings:
        held.setdefault(cid, {})[term] = tf
    assert spawned == [(2,)]
    assert held == {f"/corpus/a.txt#{i}": dict(term_counts(keyword_text(None, "", text))) for i, text in enumerate(texts)}
    assert any("3 of 8 passages" in line and "ETA" in line for line in said), said
    assert "the words of 8 passages analysed again" in said[-1]


def test_an_index_from_a_newer_oboyu_is_refused_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    with Store(path) as store:
        store.con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(Exception, match=f"schema version 99, this oboyu reads {SCHEMA_VERSION}"):
        Store(path, read_only=True)


def test_resident_index_ranks_like_the_tables_and_reloads_after_writes(store: Store) -> None:
    resident = ResidentIndex().refresh(store)
    query = np.array([0.6, 0.8, 0.0, 0.0], dtype=np.float32)

    def same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
        return [c for c, _ in a] == [c for c, _ in b] and np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)

    assert same(resident.keyword_scores(["猫", "鳥"], 10), SqlRanker(store).keyword_scores(["猫", "鳥"], 10))
    assert same(resident.vector_scores(query, 10), SqlRanker(store).vector_scores(query, 10))
    add_document(store, "/corpus/e.txt", [("犬", {"犬": 1}), ("猫", {"猫": 1})])  # two passages: one lead
    resident.refresh(store)
    leads = resident.vector_scores(query, 10, leads_only=True)
    assert same(leads, SqlRanker(store).vector_scores(query, 10, leads_only=True))
    assert "/corpus/e.txt#0" in dict(leads) and "/corpus/e.txt#1" not in dict(leads)
    assert "/corpus/e.txt#1" in dict(SqlRanker(store).vector_scores(query, 10))
    # files by the words of their first passage: e's second passage holds 猫, its first does not
    lead_words = resident.keyword_scores(["猫", "犬"], 10, leads_only=True)
    assert same(lead_words, SqlRanker(store).keyword_scores(["猫", "犬"], 10, leads_only=True))
    assert "/corpus/e.txt#0" in dict(lead_words) and "/corpus/e.txt#1" not in dict(lead_words)
    assert "/corpus/e.txt#1" not in dict(resident.keyword_scores(["猫"], 10, leads_only=True))
    before = resident.generation
    add_document(store, "/corpus/d.txt", [("猫猫猫", {"猫": 3})])
    assert resident.refresh(store).generation != before
    assert "/corpus/d.txt#0" in dict(resident.keyword_scores(["猫"], 10))
    in_memory = search(resident, None, "猫", k=5, mode=Mode.KEYWORD)
    from_tables = search(SqlRanker(store), None, "猫", k=5, mode=Mode.KEYWORD)
    assert [r.to_json() for r in in_memory] == [r.to_json() for r in from_tables]


def test_filters_apply_before_ranking(tmp_path: Path) -> None:
    day = 86_400 * 10**9
    with Store(tmp_path / "index.duckdb") as store:
        store.set_model("test-model", 4)
        store.add_root("/notes", "notes")
        store.add_root("/work", "work")
        # more 猫 ranks higher: a (3) > b (2) > c (1)
        for path, file_type, mtime, n in (("/notes/a.md", "markdown", 10 * day, 3),
                                          ("/notes/old/b.md", "markdown", day, 2), ("/work/c.txt", "text", 20 * day, 1),
                                          ("/mail/Inbox", "mbox", day, 1)):
            doc = DocumentRecord(path, path.split("/")[1], 1, mtime, path, "utf-8", file_type, None)
            store.write_documents([(doc, [ChunkRecord(f"{path}#0", 0, "", 1, 1, 0, n, "猫" * n, {"猫": n})],
                                    np.eye(4, dtype=np.float32)[:1])])

        def found(k: int = 1, **values) -> list[str]:
            filters = make_filters(**values)
            return [r.path for r in search(SqlRanker(store), None, "猫", k, filters=filters, mode=Mode.KEYWORD)]

        assert found() == ["/notes/a.md"]
        # the best file excluded, the next one still comes back: filters are not a cut of the top k
        assert found(paths=["*.txt"]) == ["/work/c.txt"]
        assert found(paths=["!a.md"]) == ["/notes/old/b.md"]
        assert found(3, paths=["old/*", "*.txt"]) == ["/notes/old/b.md", "/work/c.txt"]
        assert found(3, types="md") == ["/notes/a.md", "/notes/old/b.md"]
        assert found(3, types="text") == ["/work/c.txt"]
        assert found(3, types="email") == ["/mail/Inbox"]  # a mailbox is mail
        assert found(3, types="mail") == found(3, types="Email") == ["/mail/Inbox"]  # what people call it
        assert found(3, folders=[r.path for r in store.roots_named(["work"])]) == ["/work/c.txt"]
        assert found(3, folders=["/not"]) == []
        with pytest.raises(OboyuError, match="not an indexed folder"):
            store.roots_named(["nowhere"])
        window = Filters(since_ns=5 * day, until_ns=15 * day)
        assert [r.path for r in search(SqlRanker(store), None, "猫", 3, filters=window, mode=Mode.KEYWORD)] == ["/notes/a.md"]
        assert found(3, since="1970-01-15T00:00+00:00") == ["/work/c.txt"]


SCORE_IN_A_PROCESS = """
import sys
from pathlib import Path
from oboyu.index.store import Store
from oboyu.search.resident import ResidentIndex
with Store(Path(sys.argv[1]), read_only=True) as store:
    resident = ResidentIndex().refresh(store)
    terms = sys.argv[2].split()
    print(repr([resident.keyword_scores(terms, 50), sorted(resident.term_rarity(terms).items())]))
"""


def test_keyword_scores_are_the_same_bits_in_every_process(tmp_path: Path) -> None:
    """A query's terms are summed in one order: in a set's order, which Python draws anew for
    each process, float32 sums differed in the last bit and near-ties swapped between runs."""
    rng = np.random.default_rng(5)
    vocabulary = [f"語{i}" for i in range(12)]
    with Store(tmp_path / "index.duckdb") as store:
        store.set_model("test-model", 4)
        for n in range(40):
            terms = {str(t): int(rng.integers(1, 9)) for t in rng.choice(vocabulary, size=6, replace=False)}
            add_document(store, f"/corpus/{n:02}.txt", [(" ".join(terms), terms)])
    runs = {
        subprocess.run([sys.executable, "-c", SCORE_IN_A_PROCESS, str(tmp_path / "index.duckdb"), " ".join(vocabulary)],
                       env={**os.environ, "PYTHONHASHSEED": str(seed)}, capture_output=True, text=True,
                       check=True).stdout
        for seed in range(6)
    }
    assert len(runs) == 1, runs


def test_display_fields_looked_up_row_by_row_are_those_looked_up_by_id(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large index looks its chunks up by row number (rankers.ROW_LOOKUP_FROM): the same hits as
    by id, for ids with a quote, an unknown id, repeats, and an index where a file was removed."""
    from oboyu.search import rankers

    add_document(store, "/corpus/it's.txt", [("犬", {"犬": 1}), ("猫犬", {"猫": 1, "犬": 1})])
    store.delete_paths(["/corpus/b.txt"])
    asked = ["/corpus/it's.txt#1", "/corpus/a.txt#0", "/corpus/b.txt#0", "/corpus/it's.txt#1", "/corpus/c.txt#0"]
    by_id = SqlRanker(store).chunks_by_id(asked)
    monkeypatch.setattr(rankers, "ROW_LOOKUP_FROM", 0)
    by_row = SqlRanker(store).chunks_by_id(asked)
    assert by_row == by_id
    assert sorted(by_row) == ["/corpus/a.txt#0", "/corpus/c.txt#0", "/corpus/it's.txt#1"]
    assert by_row["/corpus/it's.txt#1"].text == "猫犬" and by_row["/corpus/it's.txt#1"].path == "/corpus/it's.txt"
    assert SqlRanker(store).chunks_by_id(["/corpus/none#0"]) == {}


def test_one_vector_pass_gives_what_the_memory_ranker_gives(store: Store) -> None:
    """Unfiltered, SqlRanker scans the vectors once a query for the best passages, the best first
    passages and the cosine spread; each equals ResidentIndex's, whatever is asked first."""
    add_document(store, "/corpus/d.txt", [("犬", {"犬": 1}), ("猫犬", {"猫": 1, "犬": 1}), ("鳥", {"鳥": 1})])
    query = np.array([0.6, 0.8, 0.0, 0.0], dtype=np.float32)
    memory = ResidentIndex().refresh(store)
    ranker = SqlRanker(store)
    spread = ranker.cosine_spread(query)  # before any ranking: its own scan
    assert spread[2] == 6 and spread == pytest.approx(memory.cosine_spread(query))
    def same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
        return [cid for cid, _ in a] == [cid for cid, _ in b] and [x for _, x in a] == pytest.approx([x for _, x in b])

    for n in (6, 2, 4):  # a smaller n after a larger one is a prefix of the same pass
        assert same(ranker.vector_scores(query, n), memory.vector_scores(query, n))
        assert same(ranker.vector_scores(query, n, leads_only=True), memory.vector_scores(query, n, leads_only=True))
    leads = [cid for cid, _ in ranker.vector_scores(query, 6, leads_only=True)]
    assert sorted(leads) == ["/corpus/a.txt#0", "/corpus/b.txt#0", "/corpus/c.txt#0", "/corpus/d.txt#0"]
    assert ranker.cosine_spread(query) == pytest.approx(spread)
    other = np.array([0.0, 0.0, 1.0, 0.0], dtype=np.float32)  # another query is scanned anew
    assert same(ranker.vector_scores(other, 1), [("/corpus/d.txt#2", 1.0)])
    assert ranker.cosine_spread(other) == pytest.approx(memory.cosine_spread(other))
    only_c = make_filters(paths=("c.txt",))  # filtered: ranked in its own scan
    assert [cid for cid, _ in ranker.vector_scores(query, 6, only_c)] == ["/corpus/c.txt#0"]
    birds = ranker.keyword_scores(["鳥"], 8)
    add_document(store, "/corpus/e.txt", [("鳥", {"鳥": 1})] * 3)  # a write: the kept passes are of the index before it
    assert [cid for cid, _ in ranker.vector_scores(other, 2)] == ["/corpus/d.txt#2", "/corpus/e.txt#2"]
    assert len(ranker.keyword_scores(["鳥"], 8)) == len(birds) + 3
    assert ranker.term_rarity(["鳥"]) == pytest.approx(memory.refresh(store).term_rarity(["鳥"]))


def test_one_keyword_pass_gives_what_the_memory_ranker_gives(store: Store) -> None:
    """Unfiltered, SqlRanker reads the query terms' postings once for both keyword legs and the
    terms' rarity; each equals ResidentIndex's, and the rarity its own reading's."""
    add_document(store, "/corpus/d.txt", [("犬", {"犬": 1}), ("猫犬", {"猫": 1, "犬": 2}), ("鳥", {"鳥": 1})])
    memory = ResidentIndex().refresh(store)
    alone = SqlRanker(store).term_rarity(["猫", "犬", "鯨"])  # no keyword pass yet: its own scan
    ranker = SqlRanker(store)
    terms, weights = ["猫", "犬", "鯨"], {"犬": 0.5}
    for n in (6, 2):  # a smaller n after a larger one is a prefix of the same pass
        for leads in (False, True):
            got = ranker.keyword_scores(terms, n, weights=weights, leads_only=leads)
            expected = memory.keyword_scores(terms, n, weights=weights, leads_only=leads)
            assert [cid for cid, _ in got] == [cid for cid, _ in expected], (n, leads)
            assert [s for _, s in got] == pytest.approx([s for _, s in expected])
    assert all(cid.endswith("#0") for cid, _ in ranker.keyword_scores(terms, 6, weights=weights, leads_only=True))
    assert ranker.term_rarity(["猫", "鯨"]) == {t: alone[t] for t in ("猫", "鯨")}  # from the pass
    assert ranker.term_rarity(["猫", "鯨"]) == pytest.approx(memory.term_rarity(["猫", "鯨"]))
    assert ranker.term_rarity(["鳥"]) == pytest.approx(memory.term_rarity(["鳥"]))  # not in the pass: read anew
    # other weights are another pass
    assert ranker.keyword_scores(terms, 6)[0][0] == memory.keyword_scores(terms, 6)[0][0]


def test_an_age_is_said_in_words_singular_or_plural() -> None:
    from oboyu.search.filters import describe_age

    assert describe_age("1m") == "1m: 1 minute" and describe_age("3m") == "3m: 3 minutes"  # a trial: "1 days ago"
    # said only where it may be misread (m is minutes, not months): a trial found "30 days ago" noise
    assert [describe_age(v) for v in ("30d", "3w", "6mo", "90min", "2026-01-31")] == [None] * 5
