"""The indexer through the library API, on real files and a real DuckDB file."""

import io
import os
import threading
from pathlib import Path

import pytest

from oboyu.index import indexer as indexer_module
from oboyu.index import reports
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.progress import ProgressLine


def test_overlapping_roots_index_each_file_once(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\n最初のメモ。\n", encoding="utf-8")
    (root / "sub" / "b.md").write_text("# B\n\n二つ目のメモ。\n", encoding="utf-8")
    with Store(tmp_path / "index.duckdb") as store:
        stats = Indexer(store, embedder).index([root, root / "sub", root / "sub" / "b.md"])
        assert stats.added == 2
        assert store.counts() == (2, 2)
        rows = store.con.execute("SELECT count(*), count(DISTINCT chunk_id) FROM embeddings").fetchone()
        assert rows == (2, 2)


def test_a_file_that_becomes_unreadable_leaves_the_index(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    note = root / "a.txt"
    note.write_text("読めるメモ。\n", encoding="utf-8")
    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder).index([root])
        assert store.counts() == (1, 1)
        note.write_bytes(b"\x00binary now\x00")
        stats = Indexer(store, embedder).index([root])
        assert [s.reason for s in stats.skipped] == ["binary file"]
        # the stale text must not stay searchable under a file that no longer holds it
        assert store.counts()[1] == 0


def test_a_file_deleted_while_the_run_reads_is_removed_not_a_problem(tmp_path: Path, embedder: Embedder,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial deleted 1,000 files while indexing: 1,000 "cannot read: No such file or directory"
    problems, listed by `status` until the next run. Here two files go between the walk and their
    reading (one new, one indexed before): neither is a problem, the indexed one's rows go."""
    from oboyu.index import preparing

    root = tmp_path / "notes"
    root.mkdir()
    for name in ("kept.txt", "old.txt"):
        (root / name).write_text(f"{name} のメモ。\n", encoding="utf-8")
    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder).index([root])
        (root / "old.txt").write_text("書き換えたメモ。\n", encoding="utf-8")
        (root / "new.txt").write_text("新しいメモ。\n", encoding="utf-8")
        read = preparing.read_regular_file

        def gone_first(path: Path, max_bytes: int):
            if path.name in ("old.txt", "new.txt"):
                path.unlink()  # deleted after the walk listed it, before it is read
            return read(path, max_bytes)

        monkeypatch.setattr(preparing, "read_regular_file", gone_first)
        stats = Indexer(store, embedder).index([root])
        assert stats.skipped == [] and stats.removed == 1 and stats.added == 0
        assert [p for (p,) in store.con.execute("SELECT path FROM documents").fetchall()] == [str(root / "kept.txt")]
        assert store.con.execute("SELECT count(*) FROM skipped_files").fetchone() == (0,)


def test_progress_shows_files_chunks_rate_and_eta(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(3):
        (root / f"{i}.txt").write_text(f"メモ{i}。内容はそれぞれ違う。\n", encoding="utf-8")
    stream = io.StringIO()
    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder, progress=ProgressLine(stream, interval=0)).index([root])
    lines = stream.getvalue().strip().splitlines()
    reading = [line for line in lines if line.startswith("reading ")]
    assert reading[-1].startswith("reading 3/3 files · 3 chunks · ") and "chunks/s" in reading[-1] and "ETA" in reading[-1]
    assert any(line.startswith("keyword search is ready; making the vectors of 3 passages") for line in lines)
    meaning = [line for line in lines if line.startswith("meaning: ")]
    assert meaning[0].startswith("meaning: 0% of passages (0/3)") and meaning[-1].startswith("meaning: 100% of passages (3/3) · ")
    assert lines.index(reading[-1]) < lines.index(meaning[0])
    # an update: the line counts the index's passages, the header says why they are more
    (root / "3.txt").write_text("メモ3。新しい内容。\n", encoding="utf-8")
    stream = io.StringIO()
    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder, progress=ProgressLine(stream, interval=0)).index([root])
    lines = stream.getvalue().strip().splitlines()
    assert any(line.startswith("keyword search is ready; making the vectors of 1 passage (") and
               line.endswith("; 3 of the index's 4 have theirs)") for line in lines), lines
    assert [line for line in lines if line.startswith("meaning: ")][-1].startswith("meaning: 100% of passages (4/4)")


def test_a_delayed_progress_line_says_nothing_of_quick_work(tmp_path: Path, embedder: Embedder) -> None:
    """`--watch` (a delay of WATCH_PROGRESS_AFTER) printed a progress line and the meaning pass's
    notice for every file saved; quick work now says nothing, slow work all of it. A clock that
    stands still, then one that runs 3 s a look: no timing of the machine's own."""
    root = tmp_path / "notes"
    root.mkdir()
    clock = {"now": 100.0, "step": 0.0}

    def monotonic() -> float:
        clock["now"] += clock["step"]
        return clock["now"]

    for step, name in ((0.0, "quick"), (3.0, "slow")):
        clock["step"] = step
        (root / f"{name}.txt").write_text(f"{name}のメモ。内容。\n", encoding="utf-8")
        stream = io.StringIO()
        progress = ProgressLine(stream, interval=0, delay=2.0)
        progress.clock = monotonic
        with Store(tmp_path / "index.duckdb") as store:
            Indexer(store, embedder, progress=progress).index([root])
        lines = stream.getvalue().splitlines()
        notice = [line for line in lines if line.startswith("keyword search is ready; making the vectors of 1 passage")]
        if name == "quick":
            assert lines == []
        else:
            assert notice and any(line.startswith("reading ") for line in lines), lines
        progress.message("oboyu: a warning")  # anything else is said at once
        assert stream.getvalue().endswith("oboyu: a warning\n")


def test_small_files_before_a_long_one_do_not_extrapolate_an_eta(tmp_path: Path, embedder: Embedder) -> None:
    """Small files cost per file, not per byte: read before a long one, they told "ETA 160h"."""
    root = tmp_path / "notes"
    root.mkdir()
    for name in ("a.txt", "b.txt"):
        (root / name).write_text("短いメモ。\n", encoding="utf-8")
    (root / "z-long.txt").write_text("長い文書の一行です。\n" * 60_000, encoding="utf-8")
    stream = io.StringIO()
    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder, progress=ProgressLine(stream, interval=0)).index([root])
    reading = [line for line in stream.getvalue().splitlines() if line.startswith("reading ")]
    before_long = [line for line in reading if line.startswith(("reading 1/3 ", "reading 2/3 "))]
    # (a note on the long file may follow the ETA: " · on z-long.txt (1.9 MB) for 2.0s")
    assert before_long and all(line.split(" · on ")[0].endswith("ETA estimating") for line in before_long), reading
    assert reading[-1].startswith("reading 3/3 files") and "ETA estimating" not in reading[-1]


def test_a_file_read_for_long_is_named_on_the_progress_line(tmp_path: Path, embedder: Embedder,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One large file showed "reading 0/1 files · 0 chunks" for seconds: the line names it, its
    size and how long it has taken. Its reading is held here until the line has said so."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "\x1b[31mbig.txt").write_text("長い文書の一行です。\n" * 2000, encoding="utf-8")
    monkeypatch.setattr(reports, "SLOW_FILE_SECONDS", 0.0)
    monkeypatch.setattr(indexer_module, "KEYWORD_COMMIT_SECONDS", 0.05)
    named = threading.Event()
    real_prepare = indexer_module.prepare_file

    def slow_prepare(*args, **kwargs):
        named.wait(timeout=30)
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(indexer_module, "prepare_file", slow_prepare)
    stream = io.StringIO()

    def seen(step) -> None:
        if step.in_hand:
            named.set()

    with Store(tmp_path / "index.duckdb") as store:
        stats = Indexer(store, embedder, progress=ProgressLine(stream, interval=0), on_progress=seen).index([root])
    assert named.is_set() and stats.added == 1
    waiting = [line for line in stream.getvalue().splitlines() if " · on " in line]
    assert waiting[0].startswith("reading 0/1 file · 0 chunks · ")
    assert waiting[0].split(" · on ")[1].startswith("␛[31mbig.txt (62 kB) for ")  # ESC made visible


def test_the_progress_note_waits_and_keeps_to_one_line() -> None:
    started = 100.0
    in_hand = reports.InHand(Path("/n") / ("長い名前" * 20 + ".txt"), 8_400_000, started)
    assert in_hand.note(started + reports.SLOW_FILE_SECONDS / 2) == ""
    note = in_hand.note(started + 6)
    assert note.endswith("… (8.4 MB) for 6.0s") and len(note.split(" (")[0]) == reports.NAME_CHARS


def test_a_malformed_file_is_skipped_and_the_run_goes_on(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a-broken.docx").write_bytes(b"PK\x03\x04" + os.urandom(300))  # a zip's signature, then noise
    (root / "b-fine.md").write_text("# 正常\n\n読める。\n", encoding="utf-8")
    with Store(tmp_path / "index.duckdb") as store:
        stats = Indexer(store, embedder).index([root])
        assert stats.added == 1
        assert [s.reason.split(":")[0] for s in stats.skipped] == ["corrupt .docx file"]


def test_a_removed_root_leaves_the_index_and_overlaps_count_once(tmp_path: Path, embedder: Embedder) -> None:
    keep, gone = tmp_path / "keep", tmp_path / "gone"
    for folder in (keep / "sub", gone):
        folder.mkdir(parents=True)
        (folder / "note.txt").write_text(f"{folder.name} のメモ。\n", encoding="utf-8")
    with Store(tmp_path / "index.duckdb") as store:
        Indexer(store, embedder).index([keep, gone])
        assert store.counts() == (2, 2)
        again = Indexer(store, embedder).index([keep, keep / "sub"])
        assert (again.unchanged, again.added, again.removed) == (1, 0, 0)
        (gone / "note.txt").unlink()
        gone.rmdir()
        stats = Indexer(store, embedder).index([gone])
        assert stats.removed == 1 and store.counts() == (1, 1)


def test_a_large_run_tokenizes_fast_and_lets_the_fast_tokenizer_go(tmp_path: Path, model_dir: Path,
                                                                   monkeypatch) -> None:
    """The Rust tokenizer (~280 MB) serves a large run only: a long-lived process (the app, the
    MCP server, --watch) gets its memory back when the run ends."""
    import oboyu.index.indexer as indexer_module

    monkeypatch.setattr(indexer_module, "BULK_TOKENIZER_FILES", 3)  # "large": three files
    for i in range(3):
        (tmp_path / "notes").mkdir(exist_ok=True)
        (tmp_path / "notes" / f"{i}.md").write_text(f"# メモ {i}\n\n会議の議事録をまとめる。\n", encoding="utf-8")
    embedder = Embedder(model_dir)
    seen: list[bool] = []
    Indexer(IndexFile(tmp_path / "index.duckdb"), embedder, on_progress=lambda step: seen.append(embedder._bulk is not None)).index([tmp_path / "notes"])
    assert any(seen), "the run tokenized with the fast tokenizer"
    assert embedder._bulk is None and "bulk_tokenizer" not in embedder.__dict__


def test_the_index_s_own_files_are_known_through_a_symlink_to_their_folder(tmp_path: Path) -> None:
    """A review: `--db link/index.duckdb` where link leads to the indexed folder indexed the
    index's arrays, as the paths differed."""
    from oboyu.index.plan import OwnFiles

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    own = OwnFiles.of(tmp_path / "link" / "index.duckdb")
    for name in ("index.duckdb", "index.duckdb.wal", "index.duckdb.arrays/ab12/meta.json"):
        assert own.hold(str(real / name)) and own.hold(str(tmp_path / "link" / name)), name
    for name in ("notes.md", "index.duckdb-notes.md", "old/index.duckdb"):
        assert not own.hold(str(real / name)), name
