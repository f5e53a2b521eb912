"""One odd file never stops a run: text a reader hands on that UTF-8 cannot hold, a date past what
the index stores, a folder nested deeper than Python's recursion limit. Each is indexed beside an
ordinary note and found."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import anyio
import duckdb
import pytest
from conftest import run_oboyu as oboyu
from mcp.client import Client

from oboyu.documents.crawl import Hidden
from oboyu.documents.extract import extract_file
from oboyu.index.indexer import Indexer
from oboyu.index.isolation import UNEMBEDDABLE
from oboyu.index.store import Store
from oboyu.mcp.server import OboyuTools, build_server
from oboyu.models.embedding import Embedder
from oboyu.modes import Mode
from oboyu.paths import RESERVED_IN_NAMES, disk_path, stored_path
from oboyu.search.filters import make_filters
from oboyu.search.query import search
from oboyu.search.rankers import SqlRanker
from oboyu.text import valid_text

DEPTH = 1_200  # past Python's default recursion limit of 1,000


def test_valid_text_joins_pairs_and_replaces_lone_surrogates() -> None:
    assert valid_text("a\ud83d\ude00b") == "a😀b"  # a pair written as two characters
    assert valid_text("\ud800x\udc80") == "\ufffdx\ufffd"  # lone halves, a command-line byte that was not UTF-8
    assert valid_text("普通の文") == "普通の文"


def test_a_reader_that_hands_on_surrogates_gives_valid_text_with_its_offsets() -> None:
    rtf, _ = extract_file(rb"{\rtf1\ansi \u-10179?\u-8704? emoji \u32117?\u23383? note}", "rtf")  # 😀 as RTF writes it
    assert "😀" in rtf.text and not any("\ud800" <= c <= "\udfff" for c in rtf.text)
    data, _ = extract_file(b'{"memo": "\\ud800 lone", "later": "the second key"}', "json")
    assert "\ufffd lone" in data.text
    for doc in (rtf, data):  # every block still points at its own text
        assert all(doc.text[b.start_char:b.end_char] == b.text for b in doc.blocks), doc.blocks


def test_odd_files_are_indexed_beside_an_ordinary_note(tmp_path: Path, embedder: Embedder,
                                                       request: pytest.FixtureRequest) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ordinary.md").write_text("# 買い物\n\n牛乳と卵を買う。\n", encoding="utf-8")
    (notes / "lone.json").write_text('{"memo": "\\ud800 会議の議事録を共有する"}', encoding="utf-8")
    (notes / "emoji.rtf").write_bytes(rb"{\rtf1\ansi \u-10179?\u-8704? smile}")  # 😀 as RTF writes it
    future = notes / "future.md"
    future.write_text("# 未来のメモ\n\n二三〇〇年の日付が付いたファイル。\n", encoding="utf-8")
    os.utime(future, ns=(10**19, 10**19))  # 2286: past the index's 64-bit nanoseconds
    deep = notes
    for _ in range(DEPTH):  # one at a time: os.makedirs itself recurses
        deep = deep / "d"
        deep.mkdir()
    (deep / "bottom.md").write_text("# 深い場所\n\n奥深くに置いたメモ。\n", encoding="utf-8")
    request.addfinalizer(lambda: _remove_chain(deep, notes))  # shutil.rmtree (pytest's cleanup) recurses too
    with Store(tmp_path / "index.duckdb") as store:
        stats = Indexer(store, embedder).index([notes])
        assert (stats.added, stats.skipped) == (5, [])
        assert store.vector_coverage() == (store.counts()[1], store.counts()[1])  # every passage has its vector
        found = {Path(r.path).name for r in search(SqlRanker(store), None, "議事録", 5, mode=Mode.KEYWORD)}
        assert "lone.json" in found
        assert Path(search(SqlRanker(store), embedder, "奥深くに置いたメモ", 1)[0].path).name == "bottom.md"
        assert search(SqlRanker(store), embedder, "未来のメモ \ud800", 1)[0].path == str(future)  # a lone surrogate in a query
        plain, coloured = (search(SqlRanker(store), embedder, q, 3) for q in ("未来のメモ", "\x1b[31m未来のメモ\x1b[0m\a"))
        assert [(r.path, r.confidence) for r in coloured] == [(r.path, r.confidence) for r in plain]  # escapes pasted from a terminal
        assert Indexer(store, embedder).update().unchanged == 5  # the far date is stored as it is read again
        late = search(SqlRanker(store), embedder, "未来のメモ", 5, filters=make_filters(since="2270-01-01"))
        assert [r.path for r in late] == [str(future)]  # a date past 2262 finds it, as the file's own date


def _remove_chain(deepest: Path, top: Path) -> None:
    """The nested folders from `deepest` up to (not including) `top`, with what they hold."""
    for item in deepest.iterdir():
        item.unlink()
    while deepest != top:
        deepest.rmdir()
        deepest = deepest.parent


def test_a_bad_ignore_line_is_a_warning_and_a_bad_path_pattern_one_line(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# メモ\n\n会議の議事録。\n", encoding="utf-8")
    (notes / "secret.md").write_text("# 秘密\n\n会議の議事録は見せない。\n", encoding="utf-8")
    (notes / ".oboyuignore").write_text("!\n\\\n[z-a]\nsecret.md\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text('exclude = ["[z-a]", "*.tmp"]\n', encoding="utf-8")
    env = {**oboyu_env, "OBOYU_CONFIG": str(config)}
    indexed = oboyu(env, "index", str(notes))
    assert indexed.returncode == 0, indexed.stderr
    for number, line in ((1, "`!`"), (2, "`\\`"), (3, "`[z-a]`")):  # each bad line named as written, the rest in force
        assert f".oboyuignore, line {number}: {line} left out" in indexed.stderr, indexed.stderr
    assert f"the exclude setting in {config}, entry 1: `[z-a]` left out" in indexed.stderr
    found = oboyu(env, "query", "議事録", "--json", "--all")
    assert [Path(r["path"]).name for r in __import__("json").loads(found.stdout)] == ["a.md"]  # secret.md stays out
    for pattern in ("[z-a]", "\\", "*a*a*a*a*c"):  # the last: matching backtracks for minutes on a long name
        refused = oboyu(env, "query", "議事録", "--path", pattern)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert refused.stderr.startswith(f"oboyu: error: --path `{pattern}` is not a usable pattern"), refused.stderr
    every = oboyu(env, "query", "議事録", "--since", "9" * 400 + "d", "--json")  # an age past any date: all time
    assert every.returncode == 0 and [Path(r["path"]).name for r in __import__("json").loads(every.stdout)] == ["a.md"]


def test_mcp_answers_a_bad_pattern_and_a_lone_surrogate(tmp_path: Path, embedder: Embedder) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# メモ\n\n会議の議事録。\n", encoding="utf-8")
    db = tmp_path / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder).index([notes])
    server = build_server(OboyuTools(db, embedder))

    async def calls() -> None:
        async with Client(server) as client:
            bad = await client.call_tool("search", {"query": "議事録", "path": "[z-a]"})
            assert bad.is_error and "is not a usable pattern" in bad.content[0].text
            odd = await client.call_tool("search", {"query": "議事録\ud800"})
            assert not odd.is_error and "a.md" in odd.content[0].text

    anyio.run(calls)


def test_a_keyword_tokenizer_failure_costs_only_its_file(tmp_path: Path, embedder: Embedder,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever goes wrong with one file's words (here a fault injected into the tokenizer for one
    text), that file is skipped with its reason and the others are indexed."""
    import oboyu.index.preparing as preparing

    real = preparing.term_counts

    def failing(text: str) -> dict[str, int]:
        if "壊れた" in text:
            raise UnicodeEncodeError("utf-8", text, 0, 1, "surrogates not allowed")
        return real(text)

    monkeypatch.setattr(preparing, "term_counts", failing)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "good.md").write_text("# 買い物\n\n牛乳と卵を買う。\n", encoding="utf-8")
    (notes / "bad.md").write_text("# 壊れたメモ\n\n読めない。\n", encoding="utf-8")
    with Store(tmp_path / "index.duckdb") as store:
        stats = Indexer(store, embedder).index([notes])
        assert stats.added == 1
        assert [(Path(s.path).name, s.reason.split(":")[0]) for s in stats.skipped] == [("bad.md", "cannot read its words")]
        assert Path(search(SqlRanker(store), None, "牛乳", 1, mode=Mode.KEYWORD)[0].path).name == "good.md"


def test_a_name_that_is_not_utf8_is_indexed_found_shown_and_kept_exact(tmp_path: Path, oboyu_env: dict) -> None:
    """A Shift_JIS name from an old archive is indexed and found; it is shown with its bytes
    made visible, JSON carries it as a valid string that gives back the exact bytes, a rename
    on disk is followed, and naming it as a folder of its own is a one-line error."""
    import json

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ok.md").write_text("# メモ\n\n牛乳を買う。\n", encoding="utf-8")
    odd = os.fsencode(notes) + b"/\x82\xa0memo.txt"
    with open(odd, "wb") as handle:
        handle.write("請求書の控えは二階の棚にある。".encode("cp932"))
    alone = oboyu(oboyu_env, "index", os.fsdecode(odd))  # no index yet: it would be a root
    assert alone.returncode == 2 and alone.stderr.count("\n") == 1 and "\\x82\\xa0memo.txt" in alone.stderr, alone.stderr
    indexed = oboyu(oboyu_env, "index", str(notes), "-v")
    assert indexed.returncode == 0 and "memo.txt" not in indexed.stderr, indexed.stderr  # not skipped
    found = json.loads(oboyu(oboyu_env, "query", "請求書の控え", "--json", "--mode", "keyword").stdout)
    assert [os.fsencode(r["path"]) for r in found] == [odd]
    shown = oboyu(oboyu_env, "query", "請求書の控え", "--mode", "keyword")
    assert shown.returncode == 0 and "\\x82\\xa0memo.txt" in shown.stdout and "\\udc82" not in shown.stdout, shown.stdout
    # named again inside its indexed folder: indexed as the file it is
    again = oboyu(oboyu_env, "index", os.fsdecode(odd))
    assert again.returncode == 0, again.stderr
    # a hidden folder of such a name, which its root's walk leaves out, would be a root of its own
    hidden = os.fsencode(notes) + b"/.\x82old"
    os.mkdir(hidden)
    refused = oboyu(oboyu_env, "index", os.fsdecode(hidden))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "cannot be a folder of its own" in refused.stderr
    renamed = os.fsencode(notes) + b"/\x82\xa1memo.txt"
    os.rename(odd, renamed)
    pending = oboyu(oboyu_env, "status", "--pending", "--json")
    moves = json.loads(pending.stdout)["renamed"]
    assert [(os.fsencode(m["from"]), os.fsencode(m["to"])) for m in moves] == [(odd, renamed)]
    assert oboyu(oboyu_env, "index", str(notes)).returncode == 0
    found = json.loads(oboyu(oboyu_env, "query", "請求書の控え", "--json", "--mode", "keyword").stdout)
    assert [os.fsencode(r["path"]) for r in found] == [renamed]
    os.remove(renamed)
    assert oboyu(oboyu_env, "index", str(notes)).returncode == 0
    assert json.loads(oboyu(oboyu_env, "query", "請求書の控え", "--json", "--mode", "keyword").stdout) == []


def test_a_name_with_the_block_kept_for_bytes_is_refused_not_misread(tmp_path: Path, embedder: Embedder) -> None:
    """A real name holding a character of the block the index keeps for bytes that are not
    UTF-8 would read back as another name: it is skipped with its reason."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ok.md").write_text("# メモ\n\n牛乳を買う。\n", encoding="utf-8")
    (notes / "x\U0010fd82.txt").write_text("牛乳", encoding="utf-8")
    with Store(tmp_path / "index.duckdb") as store:
        stats = Indexer(store, embedder).index([notes])
    assert stats.added == 1 and [s.reason.split(" (")[0] for s in stats.skipped] == ["the name holds a private-use character"]


def test_paths_go_to_the_index_and_back_exactly() -> None:
    for name in ["/a/b.txt", "/a/\udc82\udca0memo.txt", "/日本/\udcff", "/x/\U0010fd00"]:
        kept = stored_path(name)
        kept.encode("utf-8")  # what DuckDB can hold
        assert disk_path(kept) == name and not RESERVED_IN_NAMES.search(name)
    assert RESERVED_IN_NAMES.search(stored_path("/a/\udc82"))
    assert stored_path("/a/\udc82").startswith(stored_path("/a/"))  # files under a folder stay under it


POISON = "毒入りの一文"  # the text the faults below are injected for


class _RefusingStore(Store):
    """A real index that refuses the rows of one file, as DuckDB refuses a value it cannot hold."""

    def write_documents(self, items):
        if any("poison" in document.path for document, _, _ in items):
            raise duckdb.ConversionException("Conversion Error: a value out of range (injected)")
        super().write_documents(items)


class _FailingEmbedder(Embedder):
    """The real model, failing on one passage as an engine might on text it cannot take."""

    def token_ids(self, texts):
        if any(POISON in text for text in texts):
            raise ValueError("the tokenizer failed (injected)")
        return super().token_ids(texts)


def _three_notes(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# 買い物\n\n牛乳と卵を買う。\n", encoding="utf-8")
    (notes / "poison.md").write_text(f"# 毒\n\n{POISON}。\n", encoding="utf-8")
    (notes / "z.md").write_text("# 予定\n\n金曜に歯医者。\n", encoding="utf-8")
    return notes


def test_a_file_the_index_refuses_to_store_costs_only_that_file(tmp_path: Path, embedder: Embedder,
                                                                oboyu_env: dict) -> None:
    import json

    notes = _three_notes(tmp_path)
    db = tmp_path / "index.duckdb"
    with _RefusingStore(db) as store:
        stats = Indexer(store, embedder).index([notes])
        assert stats.added == 2
        assert [(Path(s.path).name, s.reason.split(":")[0]) for s in stats.skipped] == [("poison.md", "cannot be stored")]
        assert sorted(Path(p).name for p in store.files_under(str(notes))) == ["a.md", "z.md"]
    # kept for status, with the reason
    env = {**oboyu_env, "OBOYU_DB": str(db)}
    listed = json.loads(oboyu(env, "status", "--json").stdout)["roots"][0]["skipped"]
    assert [(Path(s["path"]).name, s["reason"].split(":")[0]) for s in listed] == [("poison.md", "cannot be stored")]
    assert "skipped poison.md: cannot be stored" in oboyu(env, "status").stdout
    # such a failure may pass (an upgrade): the next run tries the file again, and then forgets it
    with Store(db) as store:
        again = Indexer(store, embedder).index([notes])
        assert again.added == 1 and again.skipped == [] and store.skipped_under(str(notes)) == {}


def test_a_passage_the_model_fails_on_costs_only_its_file(tmp_path: Path, model_dir: Path) -> None:
    notes = _three_notes(tmp_path)
    failing = _FailingEmbedder(model_dir)
    with Store(tmp_path / "index.duckdb") as store:
        stats = Indexer(store, failing).index([notes])
        assert [(Path(s.path).name, s.reason) for s in stats.skipped] == [("poison.md", UNEMBEDDABLE)]
        assert sorted(Path(p).name for p in store.files_under(str(notes))) == ["a.md", "z.md"]
        assert store.vector_coverage() == (2, 2)  # every passage left has its vector
        found = search(SqlRanker(store), failing, "歯医者の予定", 1, mode=Mode.VECTOR)
        assert Path(found[0].path).name == "z.md"
        # remembered: the next run passes it over until it changes, and says why
        again = Indexer(store, failing).index([notes])
        assert again.unchanged == 2 and [Path(s.path).name for s in again.skipped] == ["poison.md"]
        # a bad file alone in its group, the others' vectors cached: its failure is still its own
        (notes / "poison-2.md").write_text(f"# 毒\n\n{POISON}、もう一つ。\n", encoding="utf-8")
        alone = Indexer(store, failing).index([notes])
        assert sorted((Path(s.path).name, s.reason) for s in alone.skipped) == [("poison-2.md", UNEMBEDDABLE), ("poison.md", UNEMBEDDABLE)]
        assert store.vector_coverage() == (2, 2)


class _Panic(BaseException):
    """As pyo3's PanicException: a Rust library's panic, which is not an Exception."""


def test_a_reader_that_panics_costs_only_its_file(tmp_path: Path, embedder: Embedder,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from oboyu.index import preparing

    real = preparing.extract_file

    def panicking(data: bytes, file_type: str, name: str = ""):
        if name == "cut.xls":
            raise _Panic("called `Result::unwrap()` on an `Err` value")
        return real(data, file_type, name)

    monkeypatch.setattr(preparing, "extract_file", panicking)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# 買い物\n\n牛乳と卵を買う。\n", encoding="utf-8")
    (notes / "cut.xls").write_bytes(b"\xd0\xcf\x11\xe0" + b"\x00" * 600)
    with Store(tmp_path / "index.duckdb") as store:
        stats = Indexer(store, embedder).index([notes])
    assert stats.added == 1 and [(Path(s.path).name, s.reason.split(":")[:2]) for s in stats.skipped] == [
        ("cut.xls", ["cannot extract text", " _Panic"])]


def test_only_failures_that_may_pass_are_tried_again() -> None:
    """A corrupt file's verdict stands until it changes; a read error or a reader's fault may pass."""
    from oboyu.documents.crawl import size_cap_reason
    from oboyu.index.records import KnownSkip

    for reason in ("cannot read PDF: Failed to load document (PDFium: Data format error).", UNEMBEDDABLE,
                   "encrypted: it needs a password"):
        assert not KnownSkip(1, 1, reason).tried_again, reason
    for reason in ("cannot read: Permission denied", size_cap_reason(10 * 2**20),
                   "cannot extract text: ValueError: x", "cannot be stored: ConversionException: x"):
        assert KnownSkip(1, 1, reason).tried_again, reason


def test_hidden_entries_are_listed_by_v_and_a_repeated_text_is_said_as_such(tmp_path: Path, oboyu_env: dict) -> None:
    """`index -v` lists what its leading dot left out (not counted as skipped, which every run
    would say again for `.git`); a chunk whose text another chunk of the run has is embedded once
    and said to be so, not "reused from the cache"."""
    notes = tmp_path / "notes"
    (notes / ".git").mkdir(parents=True)
    (notes / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (notes / ".draft\x1b[2J.md").write_text("下書き\n", encoding="utf-8")
    (notes / ".gitignore").write_text("*.tmp\n", encoding="utf-8")
    text = f"# 買い物 {uuid.uuid4().hex}\n\n牛乳と卵とパンを買う。\n"  # in no cache yet
    for name in ("a.md", "copy-of-a.md"):
        (notes / name).write_text(text, encoding="utf-8")
    indexed = oboyu(oboyu_env, "index", str(notes), "-v")
    assert indexed.returncode == 0, indexed.stderr
    reason = Hidden(notes).reason
    left_out = sorted(line for line in indexed.stderr.splitlines() if line.startswith("  left out "))
    assert left_out == [f"  left out {notes}/.draft␛[2J.md: {reason}", f"  left out {notes}/.git: {reason}"]
    assert "0 skipped" in indexed.stderr and ".gitignore" not in indexed.stderr
    assert "1 chunk embedded, 0 reused from the cache, 1 the same text as another" in indexed.stderr, indexed.stderr
    again = oboyu(oboyu_env, "index", str(notes), "--full")
    assert again.returncode == 0 and "left out" not in again.stderr and "0 skipped" in again.stderr, again.stderr
