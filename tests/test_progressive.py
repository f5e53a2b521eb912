"""Progressive indexing, as a person meets it: `oboyu index` makes a folder searchable by its words
first, then by meaning; a query from another process is answered by keyword while the vectors are
being made and by hybrid search afterwards; a run killed during the vector pass is finished by the
next one, leaving the index a single run would have made."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from oboyu.errors import IndexBusyError
from oboyu.index.embedding_cache import EmbeddingCache
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.reports import IndexProgress
from oboyu.index.store import Store, open_for_reading
from oboyu.models.embedding import Embedder
from oboyu.modes import Mode
from oboyu.search.query import search
from oboyu.search.rankers import SqlRanker
from tests.conftest import run_oboyu
from tests.test_crash_and_concurrency import assert_same_index, make_tree, run_env, snapshot, start_index

MEANING_PASS = "keyword search is ready; making the vectors of"
PROBE = "確定申告の領収書"  # words the generated notes are made of


def _coverage(db: Path) -> tuple[int, int]:
    with open_for_reading(db, wait_seconds=30) as store:
        return store.vector_coverage()


def wait_for_meaning_pass(process: subprocess.Popen) -> None:
    """Read the indexer's stderr until it announces its meaning pass (the keyword pass is stored)."""
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith(MEANING_PASS):
            return
    pytest.fail(f"no meaning pass announced; exit {process.wait()}")


def _pause_with_index_free(process: subprocess.Popen, db: Path) -> None:
    """SIGSTOP the indexer at a moment it does not hold the index file open (it opens it for
    each write only): stopped inside a write, it is let go on a moment and stopped again."""
    for _ in range(200):
        process.send_signal(signal.SIGSTOP)
        try:
            open_for_reading(db, wait_seconds=0).close()
            return
        except IndexBusyError:
            process.send_signal(signal.SIGCONT)
            time.sleep(0.01)
    pytest.fail("the indexer never let the index file go")


@pytest.mark.slow
def test_keyword_answers_while_vectors_are_made_and_a_killed_meaning_pass_resumes(
        tmp_path: Path, embedder: Embedder, oboyu_env: dict) -> None:
    tree = tmp_path / "tree"
    make_tree(tree, random.Random(7), 90)  # several groups of vectors to make: the pass cannot end unseen
    env = run_env(oboyu_env, tmp_path)
    db = Path(env["OBOYU_DB"])
    process = start_index(env, str(tree))
    try:
        wait_for_meaning_pass(process)
        _pause_with_index_free(process, db)
        embedded, total = _coverage(db)
        assert embedded < total and total > 256

        # another process, while the vectors are being made: every file is there by its words
        keyword = run_oboyu(env, "query", PROBE, "--mode", "keyword", "--json", "--all")
        assert keyword.returncode == 0, keyword.stderr
        assert json.loads(keyword.stdout)[0]["path"].startswith(str(tree))
        hybrid = run_oboyu(env, "query", PROBE, "--json", "--all", "-k", "20")
        assert "meaning search reaches" in hybrid.stderr
        during = json.loads(hybrid.stdout)
        assert during and "keyword" in {r["mode"] for r in during}  # passages not embedded yet: judged by their words
        status = json.loads(run_oboyu(env, "status", "--json").stdout)
        assert status["embedded_chunks"] == embedded and "of passages" in status["meaning"]

        # let it go on until some vectors are stored, then kill it
        process.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 600
        while _coverage(db)[0] == embedded:
            assert process.poll() is None, "the run ended before its vectors could be seen coming in"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    with Store(db, read_only=True) as store:
        assert store.integrity_problems(vectors_made=False) == []
        left, total = store.vector_coverage()
        assert embedded < left < total, "killed with some of the vectors made and some not"

    # the next run (no file changed) makes only the missing vectors
    resumed = run_oboyu(env, "index")
    assert resumed.returncode == 0, resumed.stderr
    with Store(db, read_only=True) as store:
        assert store.integrity_problems() == []
        assert store.vector_coverage() == (total, total)
    after = run_oboyu(env, "query", PROBE, "--json", "--all", "-k", "20")
    assert "meaning search reaches" not in after.stderr
    assert {r["mode"] for r in json.loads(after.stdout)} == {"hybrid"}

    fresh = tmp_path / "fresh.duckdb"
    Indexer(IndexFile(fresh), embedder, cache=EmbeddingCache(Path(env["OBOYU_EMBEDDING_CACHE"]))).index([tree])
    assert_same_index(snapshot(db), snapshot(fresh))


def test_a_run_stopped_in_its_meaning_pass_is_searchable_and_the_next_run_finishes_it(
        tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, step by step: the progress says keywords, then meaning; a run stopped in its
    meaning pass leaves every file searchable, its unembedded passages judged by their words; the
    next run embeds only those."""
    monkeypatch.setattr("oboyu.index.indexer.EMBED_GROUP_CHUNKS", 8)  # several groups in a small tree
    tree = tmp_path / "tree"
    make_tree(tree, random.Random(11), 12)
    db = tmp_path / "index.duckdb"
    steps: list[IndexProgress] = []
    indexer = Indexer(IndexFile(db), embedder)

    def on_progress(step: IndexProgress) -> None:
        steps.append(step)
        if step.phase == "meaning" and step.chunks >= 16:
            indexer.stop.set()

    indexer.on_progress = on_progress
    first = indexer.index([tree])
    phases = [step.phase for step in steps]
    assert first.stopped and first.added == 12 and first.chunks == 16
    assert "meaning" in phases and phases == sorted(phases, key=["keywords", "meaning"].index)
    with Store(db, read_only=True) as store:
        assert store.integrity_problems(vectors_made=False) == []
        embedded, total = store.vector_coverage()
        assert embedded == 16 < total
        modes = {r.mode for r in search(SqlRanker(store), embedder, PROBE, k=12)}
        assert modes == {"hybrid", "keyword"}
        assert {r.path for r in search(SqlRanker(store), embedder, PROBE, k=12, mode=Mode.KEYWORD)} == {str(p) for p in tree.rglob("*.md")}

    app_status = asyncio.run(_status_line_of_the_app(db, embedder))
    assert f"meaning: {round(100 * 16 / total)}% of passages" in app_status

    second = Indexer(IndexFile(db), embedder).update()
    assert not second.stopped and second.unchanged == 12 and second.chunks == total - 16
    with Store(db, read_only=True) as store:
        assert store.integrity_problems() == []
        assert {r.mode for r in search(SqlRanker(store), embedder, PROBE, k=12)} == {"hybrid"}
    fresh = tmp_path / "fresh.duckdb"
    Indexer(IndexFile(fresh), embedder).index([tree])
    assert_same_index(snapshot(db), snapshot(fresh))


async def _status_line_of_the_app(db: Path, embedder: Embedder) -> str:
    from oboyu.tui.app import OboyuApp

    app = OboyuApp(db, embedder)
    async with app.run_test(size=(160, 30)) as pilot:
        for _ in range(600):  # the summary loads in the background
            await pilot.pause(0.05)
            status = str(app.query_one("#status").render())
            if "meaning:" in status:
                return status
        return status


def test_the_meaning_pass_commits_small_groups_first() -> None:
    """A user trial: 180 passages made in one group of 256, so search reached none of them until
    the last was made, and Ctrl+C at any moment before kept none. The first group is small, and
    the groups double up to the usual size."""
    from oboyu.index.indexer import group_bounds

    assert list(group_bounds(700)) == [(0, 32), (32, 96), (96, 224), (224, 480), (480, 700)]
    assert list(group_bounds(20)) == [(0, 20)] and list(group_bounds(0)) == []


def test_status_says_a_run_was_cut_short_and_when_one_is_under_way(tmp_path: Path, embedder: Embedder,
                                                                     oboyu_env: dict) -> None:
    """A user trial: after Ctrl+C in the first second, `status` said "meaning: 100% of passages"
    and the folder "updated", with nothing to say that the run never finished."""
    from oboyu.index.lock import IndexLock

    tree = tmp_path / "tree"
    make_tree(tree, random.Random(5), 6)
    db = tmp_path / "index.duckdb"
    env = dict(oboyu_env, OBOYU_DB=str(db))
    indexer = Indexer(IndexFile(db), embedder)
    indexer.on_progress = lambda step: indexer.stop.set()  # stopped at its first step, as Ctrl+C stops it
    assert indexer.index([tree]).stopped
    said = run_oboyu(env, "status").stdout
    assert "indexing: cut short (started " in said and "`oboyu index` finishes it" in said, said
    with IndexLock(db):  # another process's run, as `status` sees it
        assert "indexing: under way since " in run_oboyu(env, "status").stdout
    assert not Indexer(IndexFile(db), embedder).index([tree]).stopped
    assert "indexing:" not in run_oboyu(env, "status").stdout
