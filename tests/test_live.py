"""LiveIndex: searches from memory, reloads after writes, answers from the last loaded state
while another process holds the index."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE_NOTES

from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.search.filters import make_filters
from oboyu.search.live import LiveIndex


def test_stale_answers_while_another_process_writes_then_fresh_again(tmp_path: Path, embedder: Embedder) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLE_NOTES, notes)
    db = tmp_path / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder).index([notes])
    live = LiveIndex(db, embedder)
    first = live.search("カレーの作り方")
    assert not first.stale and Path(first.results[0].path).name == "curry.txt"

    # another process commits a write and keeps the file open
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "c.execute(\"INSERT OR REPLACE INTO meta VALUES ('generation', 'elsewhere')\"); c.execute('CHECKPOINT'); "
         "print('wrote', flush=True); time.sleep(60)", str(db)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "wrote"
        busy = live.search("カレーの作り方")
        assert busy.stale and Path(busy.results[0].path).name == "curry.txt"
        try:
            live.search("カレー", filters=make_filters(types="md"))
        except Exception as exc:  # filtered searches need the file
            assert "in use by another oboyu process" in str(exc)
        else:
            raise AssertionError("a filtered search read a locked index")
    finally:
        writer.kill()
        writer.wait()
    again = live.search("カレーの作り方")
    assert not again.stale and live.resident.generation == "elsewhere"


def test_writer_in_the_same_process_and_readers_meanwhile(tmp_path: Path, embedder: Embedder) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLE_NOTES, notes)
    live = LiveIndex(tmp_path / "index.duckdb", embedder)
    with live.writing() as store:
        Indexer(store, embedder).index([notes / "home"])
        answer = live.search("release checklist", filters=make_filters(types="md"))  # read through the writer
        assert {Path(r.path).parent.name for r in answer.results} == {"home"}
        Indexer(store, embedder).index([notes / "work"])
        assert Path(live.search("release checklist").results[0].path).name == "release-checklist.md"
    assert live.summary().documents == 6
