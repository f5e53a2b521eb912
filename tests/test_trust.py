"""Trust on a real folder: no file, cache or reader can stop indexing or reach the terminal, one
indexer per real index file, and ordinary conditions answer in one line. Each test here failed
before its fix."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_oboyu as oboyu

from oboyu.errors import IndexBusyError
from oboyu.index.embedding_cache import EmbeddingCache, look_up
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.lock import IndexLock
from oboyu.index.reports import IndexProgress
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder

HOSTILE = "before\x1b]0;PWNED\x07\x1b[2J\x9b31m after"  # retitle the terminal, clear it, an 8-bit CSI


def glossary(folder: Path, sections: int) -> Path:
    lines = ["# 用語集", ""]
    for i in range(sections):
        lines += [f"## 用語 {i}", "", f"用語 {i} は、記録と検索のための第{i}の概念を指す。", ""]
    path = folder / "glossary.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_one_long_file_indexes_beside_a_normal_one_and_shows_progress_inside_it(tmp_path: Path, embedder: Embedder) -> None:
    """2,100 sections: one insert of over 2,000 chunks with no PDF pages (an all-NULL column that
    DuckDB failed to read: `'numpy.ndarray' object has no attribute 'first_valid_index'`)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    glossary(notes, 2100)
    (notes / "memo.md").write_text("# メモ\n\n会議の議事録を共有フォルダに置く。\n", encoding="utf-8")
    steps: list[IndexProgress] = []
    stats = Indexer(IndexFile(tmp_path / "index.duckdb"), embedder, on_progress=steps.append).index([notes])
    assert stats.added == 2 and not stats.skipped
    with Store(tmp_path / "index.duckdb", read_only=True) as store:
        assert store.counts() == (2, stats.chunks) and stats.chunks > 2000
        assert not store.integrity_problems()
    # while the long file embeds, no file is done yet, but its chunks count up
    inside = [s.chunks for s in steps if s.files_done == 0 and s.chunks > 0]
    assert len(inside) >= 5 and inside == sorted(inside)


def test_a_damaged_embedding_cache_is_moved_aside_and_indexing_goes_on(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# 議事録\n\n会議の議事録をまとめる。\n", encoding="utf-8")
    cache = tmp_path / "embeddings.sqlite3"
    cache.write_bytes(os.urandom(4096))  # not a database
    env = dict(oboyu_env, OBOYU_EMBEDDING_CACHE=str(cache))
    done = oboyu(env, "index", str(notes))
    assert done.returncode == 0, done.stderr
    assert "1 added" in done.stderr and done.stderr.count("embedding cache") == 1
    moved = list(tmp_path.glob("embeddings.sqlite3.broken-*"))
    assert len(moved) == 1 and str(moved[0]) in done.stderr  # kept, and named
    assert json.loads(oboyu(env, "cache", "stats", "--json").stdout)["vectors"] == 1  # the new one works
    # a truncated cache: `cache clear` still works
    data = cache.read_bytes()
    cache.write_bytes(data[: len(data) // 3])
    Path(str(cache) + "-wal").unlink(missing_ok=True)
    cleared = oboyu(env, "cache", "clear")
    assert cleared.returncode == 0 and "Traceback" not in cleared.stderr and "unexpected" not in cleared.stderr
    assert not list(tmp_path.glob("embeddings.sqlite3.broken-*"))  # clear empties what was moved aside too
    # one that exists and cannot be opened (a trial's read-only one held 866): an error, not "0 vectors"
    (tmp_path / "a-folder").mkdir()
    for command in (("cache", "stats"), ("cache", "clear")):
        done = oboyu(dict(env, OBOYU_EMBEDDING_CACHE=str(tmp_path / "a-folder")), *command)
        assert done.returncode == 2 and done.stderr.startswith(f"oboyu: error: cannot open the embedding cache "
                                                               f"{tmp_path / 'a-folder'} ("), done.stderr
        assert "OBOYU_EMBEDDING_CACHE" in done.stderr and not done.stdout, done.stdout
    assert (tmp_path / "a-folder").is_dir() and not list(tmp_path.glob("a-folder.broken-*"))  # a folder is not damage


def test_a_full_cache_never_costs_a_vector(tmp_path: Path, embedder: Embedder) -> None:
    told: list[str] = []
    cache = EmbeddingCache(tmp_path / "cache.sqlite3", notify=told.append)
    assert cache.con is not None
    cache.con.execute("PRAGMA max_page_count = 4")  # SQLITE_FULL, as on a full disk
    texts = [f"議事録 {i} を共有フォルダへ置く。" * 20 for i in range(40)]
    lookup = look_up(embedder, texts, cache)  # as the indexer does: ask the cache, embed the rest, keep them
    assert len(lookup.missing) == 40
    vectors = lookup.fill(embedder.embed(list(lookup.missing.values())), cache, embedder.info.model_id)
    assert vectors.shape == (40, embedder.info.dimensions)
    assert np.allclose(vectors, embedder.embed_passages(texts), atol=1e-5)
    assert len(told) == 1 and "going on without it" in told[0]
    assert len(look_up(embedder, texts[:2], cache).missing) == 2  # nothing kept, and no error
    cache.close()


def test_text_and_names_from_files_never_reach_the_terminal_raw(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plain.md").write_text(f"# 見出し{HOSTILE}\n\n会議の議事録 {HOSTILE} をまとめる。\n", encoding="utf-8")
    odd = notes / "odd\x1b[31mname\nsecond line.md"
    odd.write_text("# 議事録\n\n会議の議事録について。\n", encoding="utf-8")
    (notes / "bin\x1b]0;x\x07.md").write_bytes(b"\x00\x01binary")  # skipped: its name is listed with -v
    indexed = oboyu(oboyu_env, "index", str(notes), "-v")
    assert indexed.returncode == 0, indexed.stderr
    found = oboyu(oboyu_env, "query", "会議の議事録", "-k", "5", "--all")  # both notes, weak or not
    explained = oboyu(oboyu_env, "query", "会議の議事録", "--json")
    status = oboyu(oboyu_env, "status")
    for output in (indexed.stderr, found.stdout, found.stderr, status.stdout, explained.stdout):
        assert "\x1b" not in output and "\x07" not in output and "\x9b" not in output
    assert "␛]0;PWNED␇␛[2J" in found.stdout and "odd␛[31mname␊second line.md" in found.stdout
    assert "bin␛]0;x␇.md" in indexed.stderr
    # JSON keeps the exact text, escaped
    assert any(HOSTILE in r["snippet"] for r in json.loads(explained.stdout))


def test_a_long_lived_stdin_reader_lets_an_indexer_in(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# レシピ\n\nカレーは玉ねぎを炒めてから煮込む。\n", encoding="utf-8")
    assert oboyu(oboyu_env, "index", str(notes), "-q").returncode == 0
    reader = subprocess.Popen([sys.executable, "-m", "oboyu.cli", "query", "--stdin", "-k", "3"], env=oboyu_env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert reader.stdin and reader.stdout
        reader.stdin.write("カレーの作り方\n")
        reader.stdin.flush()
        assert json.loads(reader.stdout.readline())[0]["path"].endswith("a.md")
        (notes / "b.md").write_text("# 庭\n\nトマトの苗に朝水をやる。\n", encoding="utf-8")
        done = oboyu(oboyu_env, "index", str(notes), "-q", timeout=120)
        assert done.returncode == 0, done.stderr
        assert "waiting for another process" not in done.stderr  # the reader let go: no wait of a second or more
        reader.stdin.write("トマトの水やり\n")
        reader.stdin.flush()
        assert json.loads(reader.stdout.readline())[0]["path"].endswith("b.md")  # and it sees the new file
    finally:
        reader.kill()
        reader.communicate()


def test_one_indexer_per_real_file_whatever_the_path(tmp_path: Path, embedder: Embedder) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# a\n\ntext\n", encoding="utf-8")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([notes])
    (tmp_path / "via-symlink.duckdb").symlink_to(db)
    os.link(db, tmp_path / "via-hardlink.duckdb")
    for other in ("via-symlink.duckdb", "via-hardlink.duckdb"):
        with IndexLock(db), pytest.raises(IndexBusyError, match="another oboyu process"):
            Indexer(IndexFile(tmp_path / other), embedder).update()
    assert Indexer(IndexFile(tmp_path / "via-hardlink.duckdb"), embedder).update().unchanged == 1  # free again


def test_ordinary_conditions_answer_in_one_line(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# 議事録\n\n会議の議事録をまとめる。\n", encoding="utf-8")
    assert oboyu(oboyu_env, "index", str(notes), "-q").returncode == 0
    early = oboyu(oboyu_env, "query", "議事録", "--since", "0001-01-01")
    assert early.returncode == 2 and len(early.stderr.strip().splitlines()) == 1
    assert "out of range" in early.stderr and "unexpected" not in early.stderr
    # a query that is not UTF-8 (a Latin-1 terminal): answered, not "surrogates not allowed"
    latin = subprocess.run([sys.executable.encode(), b"-m", b"oboyu.cli", b"query", b"caf\xe9 \xe8\xad\xb0\xe4\xba\x8b\xe9\x8c\xb2"],
                           env=oboyu_env, capture_output=True, timeout=300)
    assert latin.returncode in (0, 1) and b"Traceback" not in latin.stderr and b"unexpected" not in latin.stderr
    # a pasted 300,000-letter line crashed the whole batch (MeCab, a segmentation fault)
    lines = b"\xe8\xad\xb0\xe4\xba\x8b\xe9\x8c\xb2\n\xff\xfe bad bytes\n\n" + b"a" * 300_000 + b"\n\xe4\xbc\x9a\xe8\xad\xb0\n"
    batch = subprocess.run([sys.executable, "-m", "oboyu.cli", "query", "--stdin", "-k", "1"], input=lines,
                           env=oboyu_env, capture_output=True, timeout=300)
    assert batch.returncode == 0, batch.stderr
    answers = [json.loads(line) for line in batch.stdout.splitlines()]
    assert len(answers) == 5 and answers[2] == answers[3] == [] and answers[0][0]["path"].endswith("a.md")
    assert answers[4][0]["path"].endswith("a.md")  # the line after the long one is answered
    errors = [json.loads(line) for line in batch.stderr.splitlines() if line.startswith(b"{")]
    assert errors == [{"line": 3, "error": "the query is empty"},
                      {"line": 4, "error": "the query is 300,000 characters long; shorten it to at most 1,000"}]
    long = oboyu(oboyu_env, "query", " ".join(["議事録"] * 400))
    assert long.returncode == 2 and long.stderr.strip() == (
        "oboyu: error: the query is 1,599 characters long; shorten it to at most 1,000")


def test_mecab_takes_a_word_of_any_length() -> None:
    """fugashi's MeCab died of a segmentation fault on one unknown word of 250,000 letters: in a
    process of its own, so that a crash fails this test, not the run."""
    script = ("from oboyu.documents.keywords import _terms_with_spans, term_counts, words\n"
              "assert words('a' * 300_000) and term_counts('x' * 300_000 + ' 議事録')\n"
              "text = '会議の議事録。' * 3000 + 'z' * 30_000\n"
              "last = _terms_with_spans(text)[-1]\n"
              "print(last[2], set(text[last[1]:last[2]]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "51000 {'z'}"  # the last word's span, counted over the pieces


def test_an_index_in_a_folder_that_cannot_be_made_is_one_line(tmp_path: Path, oboyu_env: dict) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    env = dict(oboyu_env, OBOYU_DB=str(blocker / "index.duckdb"))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# a\n\ntext\n", encoding="utf-8")
    done = oboyu(env, "index", str(notes))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "unexpected" not in done.stderr and str(blocker) in done.stderr


def test_special_files_never_stall_indexing_or_mcp(tmp_path: Path, embedder: Embedder, request: pytest.FixtureRequest) -> None:
    """An indexed file replaced by a FIFO, and a symlink to /proc/kmsg followed: every read answers
    at once (it hung forever), and snippets never show what `read` refuses."""
    import anyio
    from mcp.client import Client

    from oboyu.mcp import OboyuTools, build_server

    root = tmp_path / "notes"
    root.mkdir()
    (root / "fifo.md").write_text("# 会議\n\n議事録を共有する。\n", encoding="utf-8")
    (root / "plain.md").write_text("# 庭\n\nトマトに水をやる。\n", encoding="utf-8")
    secret = tmp_path / "secret.md"
    secret.write_text("# 議事録\n\n外のファイル: 議事録の秘密。\n", encoding="utf-8")
    (root / "outside.md").symlink_to(secret)
    if os.path.exists("/proc/kmsg"):
        (root / "kmsg.md").symlink_to("/proc/kmsg")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder, follow_symlinks=True).index([root])
    (root / "fifo.md").unlink()
    os.mkfifo(root / "fifo.md")  # still indexed: `read` must refuse it at once, 50 times over
    # a writer at the FIFO's other end, so that a reader that opened it by mistake would read an
    # empty file rather than hang the test: what is checked is the refusal, not how soon it comes
    feeder = subprocess.Popen([sys.executable, "-c", "import sys\nwhile True:\n    open(sys.argv[1], 'wb').close()",
                               str(root / "fifo.md")])
    request.addfinalizer(feeder.kill)
    tools = OboyuTools(db, embedder)
    assert all("secret" not in hit["path"] for hit in tools.search("議事録の秘密", k=10)["results"])
    server = build_server(tools)

    async def calls() -> None:
        async with Client(server) as client:
            async def read(path: Path) -> None:
                result = await client.call_tool("read", {"path": str(path)})
                assert result.is_error and "not a regular file" in result.content[0].text

            async with anyio.create_task_group() as group:
                for _ in range(50):
                    group.start_soon(read, root / "fifo.md")
            assert not (await client.call_tool("status", {})).is_error

    anyio.run(calls)
    stats = Indexer(IndexFile(db), embedder).update()  # the FIFO is not read: its rows go
    assert stats.removed == 1


def test_the_smaller_surprises(tmp_path: Path, oboyu_env: dict, embedder: Embedder) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "late-nul.txt").write_bytes(("議事録 " * 3000).encode() + b"\x00tail")  # a NUL past the first 8 KB
    (notes / "todo.MD").write_text("# 議事録\n\n会議の議事録。\n", encoding="utf-8")
    (notes / "long.markdown").write_text("# 議事録\n\n会議の議事録、長い名前。\n", encoding="utf-8")
    (notes / "note.txt").write_text("会議の議事録。\n", encoding="utf-8")
    indexed = oboyu(oboyu_env, "index", str(notes), "-v")
    assert "late-nul.txt: binary file" in indexed.stderr
    (notes / "new.txt").write_text("新しい議事録。\n", encoding="utf-8")
    pending = oboyu(oboyu_env, "status", "--pending")
    assert "added    " + str(notes / "new.txt") in pending.stdout  # the report is the output
    assert "1 to add" in pending.stdout and "1 skipped" in pending.stdout  # the binary file is known: not "to add" again
    assert pending.stderr == ""
    rebuilt = oboyu(oboyu_env, "reindex", "--full")
    assert "0 changed" in rebuilt.stderr and "3 unchanged" in rebuilt.stderr  # nothing changed: not "changed"
    found = {Path(r["path"]).name for r in json.loads(oboyu(oboyu_env, "query", "議事録", "--type", "md", "--json").stdout)}
    assert found == {"todo.MD", "long.markdown"}  # md: every Markdown file, any case
    six = oboyu(oboyu_env, "query", "議事録", "--since", "6m")
    assert "--since 6m: 6 minutes ago" in six.stderr  # said, for whoever meant months
    for value in ("6mo", "1y", "today", "yesterday", "90min"):
        assert oboyu(oboyu_env, "query", "議事録", "--since", value, "--json").returncode == 0, value
    from oboyu.search import Filters, SqlRanker

    with Store(Path(oboyu_env["OBOYU_DB"]), read_only=True) as store:
        vector = embedder.embed_queries(["議事録"])[0]
        paths = lambda filters: {cid for cid, _ in SqlRanker(store).vector_scores(vector, 20, filters)}  # noqa: E731
        assert paths(Filters(path_globs=("*.md",), ignore_case=True)) > paths(Filters(path_globs=("*.md",), ignore_case=False))


def test_the_skipped_files_are_counted_by_reason(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# 議事録\n\n会議の議事録。\n", encoding="utf-8")
    (notes / "b.xyz").write_text("?", encoding="utf-8")
    (notes / "c.xyz").write_text("?", encoding="utf-8")
    (notes / "d.docx").write_bytes(b"PK\x03\x04 not a zip")
    (notes / "e.npy").write_bytes(b"\x93NUMPY\x01\x00v\x00\x00\x00\x00")
    done = oboyu(oboyu_env, "index", str(notes))
    assert done.returncode == 0, done.stderr
    assert "skipped: unsupported file type (3); corrupt .docx file" in done.stderr, done.stderr
    # a trial's .log files: the way to read them is said where they are skipped; not for a
    # binary file's extension (a trial's .zip and .npy were offered as text)
    assert 'to read .xyz files as text: a line such as `".xyz" = "text"` under [file_types]' in done.stderr
    assert ".npy" not in done.stderr


def test_a_folder_the_user_names_is_indexed_and_never_vanishes(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    (notes / "vendor").mkdir(parents=True)
    (notes / "build").mkdir()
    (notes / "drafts").mkdir()
    (notes / "a.md").write_text("# 議事録\n\n会議の議事録。\n", encoding="utf-8")
    (notes / "vendor" / "contract.md").write_text("# 契約書\n\n取引先との契約の控え。\n", encoding="utf-8")
    (notes / "build" / "house.md").write_text("# 家の建築\n\n大工さんとの打ち合わせ。\n", encoding="utf-8")
    (notes / "drafts" / "wip.md").write_text("# 下書き\n\nまだ途中。\n", encoding="utf-8")
    (notes / "scratch.tmp.md").write_text("# 一時\n\n捨てるメモ。\n", encoding="utf-8")
    (notes / ".oboyuignore").write_text("drafts/\n!build/\n", encoding="utf-8")  # one out, one junk name back
    settings = tmp_path / "config.toml"
    settings.write_text('exclude = ["*.tmp.md"]\n[file_types]\n".textile" = "text"\n[query]\nk = 2\n', encoding="utf-8")
    (notes / "recipe.textile").write_text("h1. カレー\n\n玉ねぎを炒める。\n", encoding="utf-8")
    env = dict(oboyu_env, OBOYU_CONFIG=str(settings))

    first = oboyu(env, "index", str(notes), "-v")
    assert first.returncode == 0, first.stderr
    assert "3 added" in first.stderr  # a.md, build/house.md (brought back), recipe.textile
    assert f"left out {notes / 'vendor'}: junk folder" in first.stderr  # said, with -v
    assert "0 skipped" in first.stderr  # a folder left out is no file that failed
    listed = json.loads(oboyu(env, "status", "--json").stdout)["roots"]
    assert [r["left_out"] for r in listed] == [[str(notes / "vendor")]]  # and kept for status
    assert "left out (junk folders" in oboyu(env, "status").stdout
    assert "left out: 1 junk folder (dependencies, build output or caches: vendor)" in oboyu(env, "index", str(notes)).stderr
    named = oboyu(env, "index", str(notes / "vendor"))  # named: indexed on its own, junk or not
    assert "1 added" in named.stderr
    again = oboyu(env, "index", str(notes))  # the parent's walk leaves vendor/ to its own root
    assert "0 removed" in again.stderr and "0 added" in again.stderr
    everything = oboyu(env, "index")
    assert everything.returncode == 0 and "0 removed" in everything.stderr
    found = json.loads(oboyu(env, "query", "契約の控え", "--json", "--all").stdout)
    assert found[0]["path"] == str(notes / "vendor" / "contract.md") and len(found) == 2  # query.k = 2
    status = json.loads(oboyu(env, "status", "--json").stdout)
    assert {r["path"] for r in status["roots"]} == {str(notes), str(notes / "vendor")}
    assert all(r["left_out"] == [] for r in status["roots"])  # vendor/ is indexed on its own now
    shown = oboyu(env, "config")
    assert f"query.k = 2  ({settings})" in shown.stdout and "query.mode = hybrid  (default)" in shown.stdout
    settings.write_text("[query]\nk = 0\n", encoding="utf-8")
    bad = oboyu(env, "query", "x")
    assert bad.returncode == 2 and "`query.k` must be a whole number" in bad.stderr


def test_path_patterns_are_ignore_file_patterns(tmp_path: Path, oboyu_env: dict) -> None:
    """--path speaks the syntax of .gitignore and .oboyuignore: relative to each indexed folder,
    `dir/` for everything below, a leading `/` anchors, `!` leaves out."""
    notes = tmp_path / "notes"
    for rel in ("top.md", "drafts/wip.md", "drafts/deep/old.md", "work/top.md", "work/plan.txt"):
        (notes / rel).parent.mkdir(parents=True, exist_ok=True)
        (notes / rel).write_text(f"# 議事録\n\n会議の議事録 {rel}。\n", encoding="utf-8")
    assert oboyu(oboyu_env, "index", str(notes), "-q").returncode == 0

    def found(*patterns: str) -> set[str]:
        args = [arg for pattern in patterns for arg in ("--path", pattern)]
        done = oboyu(oboyu_env, "query", "議事録", "--mode", "keyword", "-k", "20", "--json", *args)
        return {str(Path(r["path"]).relative_to(notes)) for r in json.loads(done.stdout)}

    assert found("drafts/") == {"drafts/wip.md", "drafts/deep/old.md"}  # a folder: all below it
    assert found("/top.md") == {"top.md"}  # anchored at the indexed folder
    assert found("top.md") == {"top.md", "work/top.md"}  # at any depth
    assert found("*.md", "!drafts/") == {"top.md", "work/top.md"}
    assert found(str(notes / "work") + "/") == {"work/top.md", "work/plan.txt"}  # an absolute folder


def test_what_a_new_user_tripped_on(tmp_path: Path, oboyu_env: dict) -> None:
    """A folder indexed on its own inside another: --path reads it from both, status does not
    call it left out, -v does not call it skipped; unknown types, backwards dates and misplaced
    names are errors, not empty results."""
    notes = tmp_path / "notes"
    (notes / "vendor").mkdir(parents=True)
    (notes / "a.md").write_text("# 議事録\n\n会議の議事録。\n", encoding="utf-8")
    (notes / "vendor" / "lib.md").write_text("# 議事録\n\n依存物の議事録。\n", encoding="utf-8")
    assert oboyu(oboyu_env, "index", str(notes), "-q").returncode == 0
    assert oboyu(oboyu_env, "index", str(notes / "vendor"), "-q").returncode == 0
    again = oboyu(oboyu_env, "index", "-v")
    assert "junk folder" not in again.stderr  # vendor/ is indexed on its own now

    def found(*patterns: str) -> set[str]:
        args = [arg for pattern in patterns for arg in ("--path", pattern)]
        done = oboyu(oboyu_env, "query", "議事録", "--mode", "keyword", "--json", *args)
        return {str(Path(r["path"]).relative_to(notes)) for r in json.loads(done.stdout or "[]")}

    assert found("vendor/") == {"vendor/lib.md"} == found(str(notes / "vendor") + "/")
    assert found("!vendor/") == {"a.md"}
    status = json.loads(oboyu(oboyu_env, "status", "--json").stdout)
    assert all(r["left_out"] == [] for r in status["roots"])
    assert [r["name"] for r in json.loads(oboyu(oboyu_env, "status", "vendor", "--json").stdout)["roots"]] == ["vendor"]
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for args, message in ((("status", "nosuch"), "not an indexed folder"),
                          (("index", str(tmp_path / "loop-a")), "loop-a: a loop of symbolic links"),
                          (("index", str(tmp_path / "dangling")), f"dangling: a broken symbolic link (to {tmp_path / 'nowhere'})"),
                          (("query", "x", "--type", "mdd"), "unknown file type 'mdd'"),
                          (("query", "--dry-run"), "put it after --: oboyu query -- --dry-run"),  # a trial's search
                          (("query", "!!!???"), "only punctuation"),  # a trial's: a minified script was its good match
                          (("query", "x", "--since", "1d", "--until", "5d"), "is not before --until"),
                          (("index", str(notes / "sub"), "--name", "x"), "no such file or folder"),
                          (("index", str(notes), "--name", ""), "cannot be empty")):
        done = oboyu(oboyu_env, *args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
    (notes / "sub").mkdir()
    inside = oboyu(oboyu_env, "index", str(notes / "sub"), "--name", "x")
    assert inside.returncode == 2 and "--name names a folder indexed on its own" in inside.stderr


def test_status_lines_up_folders_with_japanese_names(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: `status` padded names by characters, so a folder named 個人 (two characters,
    four terminal cells) pushed its path two cells right of the others'."""
    from rich.cells import cell_len

    for name in ("個人", "tech"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "note.md").write_text(f"# {name}\n\nメモ。\n", encoding="utf-8")
    assert oboyu(oboyu_env, "index", str(tmp_path / "個人"), str(tmp_path / "tech")).returncode == 0
    lines = [line for line in oboyu(oboyu_env, "status").stdout.splitlines() if "1 file, 1 chunk, last changed" in line]
    assert len(lines) == 2, lines
    assert len({cell_len(line[: line.index(str(tmp_path))]) for line in lines}) == 1, lines


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_device_or_fifo_named_is_refused_and_a_file_named_is_listed_by_its_name(tmp_path: Path, oboyu_env: dict,
                                                                                   embedder: Embedder) -> None:
    """A user trial: `oboyu index /dev/null` or a FIFO registered a folder of no files; `status`
    named a file indexed on its own and skipped as `.`."""
    os.mkfifo(tmp_path / "pipe.md")
    for special in (tmp_path / "pipe.md", Path(os.devnull)):
        done = oboyu(oboyu_env, "index", str(special))
        assert done.returncode == 2 and "is neither a file nor a folder" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not Path(oboyu_env["OBOYU_DB"]).exists()  # nothing made for it
    stats = Indexer(IndexFile(tmp_path / "library.duckdb"), embedder).index([tmp_path / "pipe.md"])  # as the app or MCP asks
    assert [s.reason for s in stats.skipped] == ["not a regular file or folder"]
    with Store(tmp_path / "library.duckdb", read_only=True) as store:
        assert store.roots() == []
    binary = tmp_path / "バイナリ.txt"
    binary.write_bytes(bytes(range(256)) * 64)
    assert oboyu(oboyu_env, "index", str(binary)).returncode == 0
    assert "skipped バイナリ.txt: " in oboyu(oboyu_env, "status").stdout


def test_an_index_path_through_a_file_says_what_is_in_the_way(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: `--db FILE/index.duckdb` said only "File exists: FILE"."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# メモ\n\n本文。\n", encoding="utf-8")
    (tmp_path / "notdb.txt").write_text("a file\n", encoding="utf-8")
    done = oboyu(oboyu_env, "index", "--db", str(tmp_path / "notdb.txt" / "index.duckdb"), str(tmp_path / "notes"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "notdb.txt" in done.stderr and ("a file stands where a folder is needed" in done.stderr
                                          or "is a file, not a folder" in done.stderr), done.stderr


def test_an_index_path_that_is_no_index_or_cannot_be_made_says_so(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: a file that is not an index read "IO Error: The file ... is not a valid DuckDB
    database file!"; a place that takes no files (/proc) named only the index's lock file."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# メモ\n\n本文。\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not an index\n", encoding="utf-8")
    for command in (("index", str(tmp_path / "notes")), ("status",), ("query", "メモ")):
        done = oboyu(oboyu_env, *command, "--db", str(tmp_path / "notes.txt"))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "notes.txt is not an index" in done.stderr and "IO Error" not in done.stderr, done.stderr
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "not an index\n"
    # an SQLite file (the embedding cache is one): DuckDB reached for its extension online
    with contextlib.closing(sqlite3.connect(tmp_path / "cache.sqlite3")) as con:
        con.execute("CREATE TABLE t (a)")
    before = (tmp_path / "cache.sqlite3").read_bytes()
    for command in (("index", str(tmp_path / "notes")), ("status",)):
        done = oboyu(oboyu_env, *command, "--db", str(tmp_path / "cache.sqlite3"))
        assert done.returncode == 2 and "cache.sqlite3 is not an index (an SQLite database)" in done.stderr, done.stderr
        assert "extension" not in done.stderr.lower(), done.stderr
    assert (tmp_path / "cache.sqlite3").read_bytes() == before
    # a pipe there made every command wait for a writer forever (a user trial); a folder read raw
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.duckdb")
    (tmp_path / "folder.duckdb").mkdir()
    for name, kind in (("pipe.duckdb", "a pipe"), ("folder.duckdb", "a folder")):
        if not (tmp_path / name).exists():
            continue
        for command in (("status",), ("query", "メモ"), ("index", str(tmp_path / "notes"))):
            done = oboyu({**oboyu_env, "OBOYU_DB": str(tmp_path / name)}, *command, timeout=60)
            assert done.returncode == 2 and f"{name} is not an index ({kind})" in done.stderr, done.stderr
    if os.path.isdir("/proc/self"):
        done = oboyu(oboyu_env, "index", str(tmp_path / "notes"), "--db", "/proc/self/index.duckdb")
        assert done.returncode == 2 and "that folder takes no new files" in done.stderr, done.stderr
        # a cache that cannot be made names the setting that moves it (a trial's read-only one did not)
        done = oboyu({**oboyu_env, "OBOYU_CACHE_DIR": "/proc/self/oboyu-cache"}, "index", str(tmp_path / "notes"))
        assert done.returncode == 2 and "OBOYU_CACHE_DIR sets another folder" in done.stderr, done.stderr


def test_a_damaged_index_and_a_full_disk_are_said_as_such(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: a damaged index (bytes overwritten) was "in use by another oboyu process"
    after a 15 s wait (DuckDB's "block" held "lock"); a half-copied one, and a full disk, were
    "unexpected error: IOException" / "TransactionException"."""
    import duckdb

    from oboyu.index.failures import explained

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# メモ\n\n" + "本文の段落。" * 400 + "\n", encoding="utf-8")
    good = tmp_path / "good.duckdb"
    assert oboyu(oboyu_env, "index", str(notes), "--db", str(good)).returncode == 0
    whole = good.read_bytes()
    overwritten = bytearray(whole)
    overwritten[5000:8000] = bytes(range(256)) * 11 + bytes(184)
    (tmp_path / "overwritten.duckdb").write_bytes(bytes(overwritten))
    (tmp_path / "half.duckdb").write_bytes(whole[: len(whole) // 2])
    for name in ("overwritten", "half"):
        for command in (("status",), ("query", "メモ")):
            done = oboyu(oboyu_env, *command, "--db", str(tmp_path / f"{name}.duckdb"), timeout=60)
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
            assert f"{name}.duckdb is damaged or incomplete" in done.stderr and "in use" not in done.stderr, done.stderr
            assert "move it aside and run `oboyu index FOLDER...`" in done.stderr, done.stderr
    # DuckDB's own exceptions, as a full disk and a folder it may not write raise them
    full = explained(duckdb.TransactionException('TransactionContext Error: Failed to commit: Could not write file '
                                                 '"/data/i.duckdb.wal": No space left on device'))
    assert str(full).startswith("the disk holding /data/i.duckdb.wal is full; free some space")
    denied = explained(duckdb.IOException('IO Error: Cannot open file "/data/i.duckdb.wal": Permission denied'))
    assert str(denied).startswith("cannot open /data/i.duckdb.wal: permission denied")
    assert explained(duckdb.CatalogException("Catalog Error: Table with name x does not exist")) is None
    assert explained(OSError("Corrupt database file")) is None  # only DuckDB's


def test_an_indexed_folder_s_name_given_to_index_is_that_folder(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: `oboyu index docs` away from it (docs as `status` names it) said "indexed",
    did nothing and exited 0, where any other missing path is an error."""
    notes, elsewhere = tmp_path / "notes", tmp_path / "elsewhere"
    notes.mkdir()
    elsewhere.mkdir()
    (notes / "a.md").write_text("# メモ\n\n本文。\n", encoding="utf-8")
    assert oboyu(oboyu_env, "index", str(notes)).returncode == 0
    (notes / "b.md").write_text("# 追加\n\n新しい本文。\n", encoding="utf-8")

    def index_here(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "oboyu.cli", "index", *args], env=oboyu_env, cwd=elsewhere,
                              capture_output=True, text=True, timeout=600)

    done = index_here("notes")
    assert done.returncode == 0 and "1 added" in done.stderr + done.stdout, done.stderr
    assert index_here("nothere").returncode == 2
    notes.rename(tmp_path / "moved")  # an unmounted drive: its name asks for no removal
    done = index_here("notes")
    assert done.returncode == 2 and "oboyu remove notes" in done.stderr, done.stderr
    assert "notes" in oboyu(oboyu_env, "status").stdout
