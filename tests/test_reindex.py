"""Incremental updates through the library and the command: roots and names, renames, full
rebuilds from the embedding cache, pending changes, removals, PDFs. Real files, real DuckDB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_oboyu as oboyu
from pdfs import encrypt, make_pdf  # tests/pdfs.py (pytest puts tests/ on the path)
from test_crash_and_concurrency import assert_same_index, snapshot

from oboyu.documents.extract import extract_file
from oboyu.errors import IndexBusyError, OboyuError
from oboyu.index.chunk_cache import ChunkCache
from oboyu.index.embedding_cache import EmbeddingCache
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.lock import IndexLock
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.modes import Mode
from oboyu.search.query import search
from oboyu.search.rankers import SqlRanker


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def two_roots(tmp_path: Path) -> tuple[Path, Path]:
    notes, recipes = tmp_path / "notes", tmp_path / "recipes"
    write(notes / "meeting.md", "# 会議\n\n議事録は翌日までに共有する。\n")
    write(notes / "deep" / "tax.md", "# 確定申告\n\n領収書をまとめておく。\n")
    write(recipes / "curry.md", "# カレー\n\n玉ねぎを飴色になるまで炒める。\n")
    return notes, recipes


def paths_in(store: Store) -> set[str]:
    return {row[0] for row in store.con.execute("SELECT path FROM documents").fetchall()}


def test_roots_are_remembered_named_updated_and_removed(tmp_path: Path, embedder: Embedder, two_roots) -> None:
    notes, recipes = two_roots
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([notes], name="work")
    Indexer(IndexFile(db), embedder).index([recipes])
    with Store(db, read_only=True) as store:
        assert [(r.name, r.path) for r in store.roots()] == [("work", str(notes)), ("recipes", str(recipes))]
    (notes / "meeting.md").unlink()
    write(recipes / "soup.md", "# スープ\n\n味噌は火を止めてから溶く。\n")
    stats = Indexer(IndexFile(db), embedder).update()  # every root, no path given
    assert (stats.added, stats.removed, stats.unchanged) == (1, 1, 2)
    stats = Indexer(IndexFile(db), embedder).update(["recipes"])  # by name
    assert (stats.added, stats.removed, stats.unchanged) == (0, 0, 2)
    with Store(db) as store:
        assert store.remove_root(str(notes)) == 1
        assert paths_in(store) == {str(recipes / "curry.md"), str(recipes / "soup.md")}
        assert store.integrity_problems() == []
    with pytest.raises(OboyuError, match="'work' is not an indexed folder"):
        Indexer(IndexFile(db), embedder).update(["work"])


def test_a_folder_inside_a_root_updates_that_part_and_a_parent_absorbs_nested_roots(
    tmp_path: Path, embedder: Embedder, two_roots
) -> None:
    notes, _ = two_roots
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([notes / "deep"])
    Indexer(IndexFile(db), embedder).index([notes])  # the parent takes the nested root's files
    with Store(db, read_only=True) as store:
        assert [r.path for r in store.roots()] == [str(notes)]
        assert store.integrity_problems() == []
    (notes / "deep" / "tax.md").unlink()
    stats = Indexer(IndexFile(db), embedder).index([notes / "deep"])  # a part of the root: only it is compared
    assert (stats.removed, stats.unchanged) == (1, 0)
    with Store(db, read_only=True) as store:
        assert paths_in(store) == {str(notes / "meeting.md")}


def test_deleting_under_one_root_never_touches_another(tmp_path: Path, embedder: Embedder) -> None:
    a, b = tmp_path / "a", tmp_path / "ab"  # "ab" shares a's prefix as a string
    write(a / "x.md", "# x\n\n一つ目。\n")
    write(b / "y.md", "# y\n\n二つ目。\n")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([a, b])
    (a / "x.md").unlink()
    stats = Indexer(IndexFile(db), embedder).index([a])
    assert stats.removed == 1
    with Store(db, read_only=True) as store:
        assert paths_in(store) == {str(b / "y.md")}


def test_a_rename_moves_rows_without_embedding_and_a_changed_file_replaces_its_chunks(
    tmp_path: Path, embedder: Embedder, two_roots
) -> None:
    notes, _ = two_roots
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([notes])
    with Store(db, read_only=True) as store:
        before = store.con.execute("SELECT c.text, e.vector FROM chunks c JOIN embeddings e ON e.chunk_id = c.id").fetchall()
    (notes / "deep" / "tax.md").rename(notes / "archive-tax.md")
    write(notes / "meeting.md", "# 会議\n\n議事録は当日中に共有する。\n")
    stats = Indexer(IndexFile(db), embedder).index([notes])
    assert (stats.renamed, stats.changed, stats.added, stats.removed) == (1, 1, 0, 0)
    assert stats.chunks == 1  # only the changed file's text was embedded
    with Store(db, read_only=True) as store:
        assert store.integrity_problems() == []
        assert paths_in(store) == {str(notes / "archive-tax.md"), str(notes / "meeting.md")}
        after = dict(store.con.execute("SELECT c.text, e.vector FROM chunks c JOIN embeddings e ON e.chunk_id = c.id").fetchall())
        texts = [r[0] for r in store.con.execute("SELECT text FROM chunks").fetchall()]
        results = search(SqlRanker(store), embedder, "領収書", k=1, mode=Mode.KEYWORD)
    assert after["領収書をまとめておく。"] == dict(before)["領収書をまとめておく。"]  # the same vector, moved
    assert not any("翌日" in t for t in texts)  # the old text of the changed file is gone
    assert results[0].path == str(notes / "archive-tax.md")


def test_a_full_rebuild_reuses_the_embedding_cache(tmp_path: Path, embedder: Embedder, two_roots) -> None:
    notes, _ = two_roots
    db, cache = tmp_path / "index.duckdb", EmbeddingCache(tmp_path / "cache.sqlite3")
    first = Indexer(IndexFile(db), embedder, cache=cache).index([notes])
    assert (first.chunks, first.reused) == (2, 0)
    full = Indexer(IndexFile(db), embedder, cache=cache, full=True).update()
    assert (full.changed, full.unchanged, full.chunks, full.reused) == (0, 2, 0, 2)  # rebuilt, content as it was
    db.unlink()  # the cache outlives the index
    again = Indexer(IndexFile(db), embedder, cache=cache).index([notes])
    assert (again.added, again.chunks, again.reused) == (2, 0, 2)
    assert cache.stats().vectors == 2


def test_pending_lists_changes_without_making_them(tmp_path: Path, embedder: Embedder, two_roots, oboyu_env: dict) -> None:
    notes, _ = two_roots
    db = Path(oboyu_env["OBOYU_DB"])
    Indexer(IndexFile(db), embedder).index([notes])
    (notes / "deep" / "tax.md").rename(notes / "tax.md")
    write(notes / "new.md", "# 新規\n\n新しいメモ。\n")
    os.utime(notes / "meeting.md", ns=(1, 1))  # touched, not changed
    signature = db.stat().st_mtime_ns, db.stat().st_size
    out = oboyu(oboyu_env, "status", "--pending", "--json")
    assert out.returncode == 0, out.stderr
    pending = json.loads(out.stdout)
    assert pending["added"] == [str(notes / "new.md")]
    assert pending["renamed"] == [{"from": str(notes / "deep" / "tax.md"), "to": str(notes / "tax.md")}]
    assert (pending["changed"], pending["removed"], pending["unchanged"]) == ([], [], 1)
    assert (db.stat().st_mtime_ns, db.stat().st_size) == signature
    assert not Path(str(db) + ".wal").exists()


def test_the_command_updates_every_root_and_removes_by_name(tmp_path: Path, two_roots, oboyu_env: dict) -> None:
    notes, recipes = two_roots
    nothing = oboyu(oboyu_env, "index")
    assert nothing.returncode == 2 and "no folders are indexed yet" in nothing.stderr
    assert not Path(oboyu_env["OBOYU_DB"]).exists()  # a refused update creates no index
    assert oboyu(oboyu_env, "index", str(notes), "--name", "work").returncode == 0
    assert oboyu(oboyu_env, "index", str(recipes)).returncode == 0
    write(recipes / "soup.md", "# スープ\n\n味噌は火を止めてから溶く。\n")
    update = oboyu(oboyu_env, "index")
    assert "1 added, 0 changed, 0 removed, 0 renamed, 3 unchanged" in update.stderr, update.stderr
    status = json.loads(oboyu(oboyu_env, "status", "--json").stdout)
    assert [(r["name"], r["documents"]) for r in status["roots"]] == [("work", 2), ("recipes", 2)]
    removed = oboyu(oboyu_env, "remove", "work")
    assert removed.returncode == 0 and "removed work" in removed.stderr
    unknown = oboyu(oboyu_env, "remove", "nope")
    assert unknown.returncode == 2 and unknown.stderr.startswith("oboyu: error: 'nope' is not an indexed folder")
    assert json.loads(oboyu(oboyu_env, "status", "--json").stdout)["documents"] == 2
    shutil_rmtree(recipes)
    kept = oboyu(oboyu_env, "index")  # a missing root (unmounted?) keeps its rows
    assert "is missing" in kept.stderr and json.loads(oboyu(oboyu_env, "status", "--json").stdout)["documents"] == 2
    assert oboyu(oboyu_env, "remove", "recipes").returncode == 0
    emptied = json.loads(oboyu(oboyu_env, "status", "--json").stdout)  # a user trial: "100% of passages" of none
    assert (emptied["chunks"], emptied["meaning"]) == (0, "no passages")


def test_an_empty_name_or_path_is_refused_not_taken_for_the_working_folder(tmp_path: Path, two_roots,
                                                                          oboyu_env: dict) -> None:
    """A fuzzing trial: `oboyu remove ""` (a script's unset variable), run inside an indexed
    folder, removed it; `index ""` indexed the working folder."""
    notes, _ = two_roots
    assert oboyu(oboyu_env, "index", str(notes)).returncode == 0
    before = oboyu(oboyu_env, "status", "--json").stdout
    for args in (["remove", ""], ["describe", "", "x"], ["reindex", ""], ["query", "メモ", "--root", ""], ["index", ""]):
        refused = subprocess.run([sys.executable, "-m", "oboyu.cli", *args], env=oboyu_env, cwd=notes,
                                 capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2 and "cannot be empty" in refused.stderr, (args, refused.stderr)
        assert refused.stderr.count("\n") == 1
    assert oboyu(oboyu_env, "status", "--json").stdout == before


def test_a_folder_whose_files_are_all_left_out_says_so(tmp_path: Path, oboyu_env: dict) -> None:
    """A fuzzing trial: `*` in .oboyuignore left every file out, and the run said only "0 added"."""
    notes = tmp_path / "notes"
    write(notes / "a.md", "# メモ\n\n本文。\n")
    (notes / ".oboyuignore").write_text("*\n", encoding="utf-8")
    done = oboyu(oboyu_env, "index", str(notes))
    assert done.returncode == 0 and "no file found to index" in done.stderr and ".oboyuignore" in done.stderr
    (notes / ".oboyuignore").unlink()
    again = oboyu(oboyu_env, "index", str(notes))
    assert "1 added" in again.stderr and "no file found" not in again.stderr


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def test_one_indexer_at_a_time(tmp_path: Path, embedder: Embedder, two_roots) -> None:
    notes, _ = two_roots
    db = tmp_path / "index.duckdb"
    with IndexLock(db), pytest.raises(IndexBusyError, match=f"another oboyu process \\(pid {os.getpid()}\\) is updating"):
        Indexer(IndexFile(db), embedder).index([notes])
    assert Indexer(IndexFile(db), embedder).index([notes]).added == 2


def test_pdf_text_is_indexed_with_its_pages_and_bad_pdfs_are_skipped(tmp_path: Path, embedder: Embedder) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    good = make_pdf([["Backups are taken every night.", "Keep three copies off site."],
                     ["To restore the database, stop the service first.", "Then copy the files back."]])
    (docs / "manual.pdf").write_bytes(good)
    (docs / "locked.pdf").write_bytes(encrypt(good))
    (docs / "scan.pdf").write_bytes(make_pdf([[], []]))
    (docs / "broken.pdf").write_bytes(good[: len(good) // 3])
    db = tmp_path / "index.duckdb"
    stats = Indexer(IndexFile(db), embedder).index([docs])
    reasons = {s.path.name: s.reason for s in stats.skipped}
    assert reasons["locked.pdf"] == "encrypted PDF (needs a password)"
    assert reasons["scan.pdf"] == "PDF has no text layer (scanned or image-only)"
    assert reasons["broken.pdf"].startswith("cannot read PDF")
    assert stats.added == 1
    with Store(db, read_only=True) as store:
        results = search(SqlRanker(store), embedder, "restore the database", k=1, mode=Mode.KEYWORD, group=False)
        pages = store.con.execute("SELECT min(page_start), max(page_end) FROM chunks").fetchone()
    assert pages == (1, 2)
    top = results[0]
    assert top.path.endswith("manual.pdf") and "restore" in top.snippet
    assert top.location == str(docs / "manual.pdf") + " (pp. 1-2)"  # one passage over both short pages


def test_a_file_deleted_between_listing_and_reading_is_simply_not_there(
    tmp_path: Path, embedder: Embedder, two_roots, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a problem to report (a trial deleted 1,000 files during a run and got 1,000); a file
    indexed before and deleted so goes with the run: tests/test_indexer.py."""
    notes, _ = two_roots
    original = Indexer._prepare

    def vanishing(self, entry, previous):
        if entry.path.name == "meeting.md":
            entry.path.unlink()  # deleted after the crawl listed it, before it is read
        return original(self, entry, previous)

    monkeypatch.setattr(Indexer, "_prepare", vanishing)
    db = tmp_path / "index.duckdb"
    stats = Indexer(IndexFile(db), embedder).index([notes])
    assert stats.added == 1 and stats.skipped == [] and stats.removed == 0
    with Store(db, read_only=True) as store:
        assert store.integrity_problems() == []
        assert store.con.execute("SELECT count(*) FROM skipped_files").fetchone() == (0,)


def test_a_file_that_cannot_be_indexed_is_remembered_until_it_changes(tmp_path: Path, embedder: Embedder,
                                                                      monkeypatch, oboyu_env: dict) -> None:
    import oboyu.index.preparing as preparing_module

    notes = tmp_path / "notes"
    write(notes / "a.md", "# メモ\n\n読めるメモ。\n")
    locked = notes / "locked.pdf"
    locked.write_bytes(encrypt(make_pdf(["secret report"]), "pw"))
    noise = notes / "noise.txt"
    noise.write_bytes(b"\x00\x01\x02 binary")
    db = Path(oboyu_env["OBOYU_DB"])
    read: list[str] = []
    real_extract = preparing_module.extract_file
    monkeypatch.setattr(preparing_module, "extract_file", lambda data, kind, name: (read.append(name), real_extract(data, kind, name))[1])

    first = Indexer(IndexFile(db), embedder).index([notes])
    assert first.added == 1 and sorted(s.path.name for s in first.skipped) == ["locked.pdf", "noise.txt"]
    read.clear()
    again = Indexer(IndexFile(db), embedder).update()
    assert read == [] and again.added == 0  # not read again: said as skipped, with the reason
    assert {s.path.name: s.reason for s in again.skipped} == {s.path.name: s.reason for s in first.skipped}
    pending = json.loads(oboyu(oboyu_env, "status", "--pending", "--json").stdout)
    assert pending["added"] == [] and sorted(Path(s["path"]).name for s in pending["skipped"]) == ["locked.pdf", "noise.txt"]

    assert Indexer(IndexFile(db), embedder, full=True).update().added == 0 and {"locked.pdf", "noise.txt"} <= set(read)  # --full tries
    read.clear()
    noise.write_text("いまは読める文字。\n", encoding="utf-8")  # changed: tried, indexed, forgotten
    locked.unlink()  # gone: forgotten
    fixed = Indexer(IndexFile(db), embedder).update()
    assert read == ["noise.txt"] and fixed.added == 1 and fixed.skipped == []
    with Store(db, read_only=True) as store:
        assert store.skipped_under(str(notes)) == {}


def test_a_warm_reindex_takes_its_cuts_from_the_cache_and_rebuilds_the_same_index(
        tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where texts were cut into chunks is kept with the vectors: indexing the same files into a
    new index makes the same rows without counting a token (nor loading the fast tokenizer); an
    edited file, or another chunk size, is cut anew."""
    notes = tmp_path / "notes"
    long_text = "\n\n".join(f"## 節{i}\n\n" + "議事録は翌日までに共有する。領収書をまとめておく。" * 30 for i in range(6))
    write(notes / "long.md", f"# 長いメモ\n\n{long_text}\n")
    write(notes / "short.md", "# 会議\n\n議事録は翌日までに共有する。\n")
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    first = Indexer(IndexFile(tmp_path / "first.duckdb"), embedder, cache=cache).index([notes])
    assert first.added == 2 and first.chunks > 2  # the long note is cut into several chunks

    counted: list[int] = []
    count_tokens = embedder.count_tokens
    monkeypatch.setattr(embedder, "count_tokens", lambda texts: counted.append(len(texts)) or count_tokens(texts))
    indexer = Indexer(IndexFile(tmp_path / "second.duckdb"), embedder, cache=cache)
    second = indexer.index([notes])
    assert (second.chunks, second.reused, counted) == (0, first.chunks, [])
    assert_same_index(snapshot(tmp_path / "first.duckdb"), snapshot(tmp_path / "second.duckdb"))

    write(notes / "short.md", "# 会議\n\n議事録は三日以内に共有する。\n")
    Indexer(IndexFile(tmp_path / "second.duckdb"), embedder, cache=cache).update()
    assert counted  # the edited note was cut anew
    smaller = ChunkCache(cache, embedder.info.model_id, type(indexer.chunker)(count_tokens, embedder.split_by_tokens, max_tokens=128))
    extracted, _ = extract_file((notes / "long.md").read_bytes(), "markdown", "long.md")
    assert indexer.chunkings is not None and indexer.chunkings.get(extracted) is not None
    assert smaller.get(extracted) is None  # another chunker's cuts are not this one's


def test_what_the_walk_cannot_take_is_listed_by_status_until_it_is_mended(tmp_path: Path, embedder: Embedder,
                                                                          oboyu_env: dict) -> None:
    """A FIFO and a file over the size cap were said by `index` but not by `status`; an
    unsupported type is a choice, not a problem, and stays unlisted. A run that finds them as
    they were writes nothing for them."""
    notes = tmp_path / "notes"
    write(notes / "a.md", "# メモ\n\n読めるメモ。\n")
    os.mkfifo(notes / "pipe.md")
    (notes / "huge.txt").write_bytes(b"x" * 3000)
    (notes / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    db = Path(oboyu_env["OBOYU_DB"])
    Indexer(IndexFile(db), embedder, max_bytes=2000).index([notes])

    def listed() -> dict[str, str]:
        done = oboyu(oboyu_env, "status", "--json")
        assert done.returncode == 0, done.stderr
        return {Path(s["path"]).name: s["reason"] for s in json.loads(done.stdout)["roots"][0]["skipped"]}

    assert listed() == {"pipe.md": "not a regular file", "huge.txt": "larger than the 0.00190735 MB size cap"}
    plain = oboyu(oboyu_env, "status")
    assert "skipped pipe.md: not a regular file" in plain.stdout
    indexer = Indexer(IndexFile(db), embedder, max_bytes=2000)
    plan = indexer.plan()
    assert plan.walk_problems == [] and plan.forgotten == []  # remembered as they are: nothing to write
    (notes / "pipe.md").unlink()
    (notes / "huge.txt").write_bytes(b"x" * 100)
    assert indexer.update().added == 1
    assert listed() == {}


def test_a_folder_that_cannot_be_read_keeps_its_indexed_files(tmp_path: Path, embedder: Embedder,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A user trial: a folder whose permissions changed lost its files from the index; it may be
    read again (permissions put back, a disk that answers), so they stay until it says they are gone."""
    notes = tmp_path / "notes"
    (notes / "private").mkdir(parents=True)
    (notes / "a.md").write_text("# 買い物\n\n牛乳を買う。\n", encoding="utf-8")
    (notes / "private" / "diary.md").write_text("# 日記\n\n今日は温泉に行った。\n", encoding="utf-8")
    scandir = os.scandir

    def refusing(path):
        if Path(path).name == "private":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder).index([notes])
        monkeypatch.setattr(os, "scandir", refusing)  # the walk lists folders with it
        stats = Indexer(store, embedder).update()
        assert (stats.removed, stats.unchanged) == (0, 2)
        assert [s.reason for s in stats.skipped] == ["cannot read folder: Permission denied"]
        assert store.counts()[0] == 2 and search(SqlRanker(store), embedder, "温泉", 1)[0].path.endswith("diary.md")
        monkeypatch.setattr(os, "scandir", scandir)
        (notes / "private" / "diary.md").unlink()  # readable again, and now it is gone
        assert Indexer(store, embedder).update().removed == 1


def test_a_run_that_only_removes_files_moves_the_folders_last_change(tmp_path: Path, embedder: Embedder) -> None:
    """A user trial: `status` kept the first run's time after a run that removed a file."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# 買い物\n\n牛乳を買う。\n", encoding="utf-8")
    (notes / "b.md").write_text("# 日記\n\n温泉に行った。\n", encoding="utf-8")
    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder).index([notes])
        (before,) = [r.last_update for r in store.root_summaries()]
        (notes / "b.md").unlink()
        assert Indexer(store, embedder).update().removed == 1
        (after,) = [r.last_update for r in store.root_summaries()]
        assert after > before
        store.remove_root(str(notes))
        assert store.con.execute("SELECT count(*) FROM meta WHERE key LIKE 'root_changed:%'").fetchone() == (0,)


def test_the_runs_summary_writes_large_counts_with_separators() -> None:
    """A user trial: `1636 chunks embedded` beside a progress line's `1,636 passages`."""
    from oboyu.index.reports import IndexStats

    line = IndexStats(added=1_636, unchanged=12_000, chunks=1_636, reused=1).summary()
    assert "1,636 added" in line and "12,000 unchanged" in line and "1,636 chunks embedded" in line, line
    assert "1 reused" in IndexStats(chunks=1, reused=1).summary() and "1 chunk embedded" in IndexStats(chunks=1).summary()
