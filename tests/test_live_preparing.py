"""A large index's search arrays made beside a long-lived process (`oboyu.search.preparing`): it
answers meanwhile, from the index file or from the arrays it last loaded, and takes the new ones
when they are made. The line is lowered so that the example notes count as large; the child is
held at a gate (a file the test creates) so that nothing depends on how fast it is."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import EXAMPLE_NOTES

from oboyu.index.arrays import homes
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.search.live import LiveIndex
from oboyu.search.preparing import ArraysMaker
from oboyu.search.query import Result, search
from oboyu.search.rankers import SqlRanker

QUESTION = "カレーの作り方"


def gated(gate: Path):
    """ArraysMaker.command, waiting for `gate` before it makes anything."""

    def command(self: ArraysMaker) -> list[str]:
        wait = f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r}).exists(): time.sleep(0.05)\n"
        make = "import sys; from oboyu.search.preparing import make_in_this_process as m; sys.exit(m(sys.argv[1]))"
        return [sys.executable, "-c", wait + make, str(self.db_path)]

    return command


def wait_for(maker: ArraysMaker) -> None:
    deadline = time.monotonic() + 120
    while maker.running():
        assert time.monotonic() < deadline, "the child making the arrays never ended"
        time.sleep(0.05)


def shown(results: list[Result]) -> list[tuple[str, float]]:
    return [(Path(r.path).name, round(r.confidence, 6)) for r in results]


@pytest.fixture
def large(tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OBOYU_BACKGROUND_ARRAYS_FROM", "1")
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLE_NOTES / "home", notes)
    db = tmp_path / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder).index([notes])
    for place in homes(db):
        shutil.rmtree(place, ignore_errors=True)
    return db


def test_answers_from_the_file_then_from_the_arrays_made_beside_it(large: Path, embedder: Embedder, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    monkeypatch.setattr(ArraysMaker, "command", gated(gate))
    with Store(large, read_only=True) as store:
        expected = shown(search(SqlRanker(store), embedder, QUESTION, 10))
    live = LiveIndex(large, embedder)

    first = live.search(QUESTION)
    assert first.preparing and not first.stale and live.resident.arrays is None
    assert shown(first.results) == expected and shown(first.results)[0][0] == "curry.txt"
    assert live.coverage()[1] > 0 and live.file_roots()  # from the file meanwhile

    gate.touch()
    wait_for(live.maker)
    made = live.search(QUESTION)
    assert not made.preparing and live.resident.arrays is not None
    assert shown(made.results) == expected


def test_a_change_answers_from_the_last_loaded_arrays_until_the_new_are_made(large: Path, embedder: Embedder,
                                                                           tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    monkeypatch.setattr(ArraysMaker, "command", gated(gate))
    live = LiveIndex(large, embedder)
    live.search(QUESTION)
    wait_for(live.maker)
    assert not live.search(QUESTION).preparing
    loaded = live.resident.generation

    gate.unlink()
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "nikujaga.txt").write_text("肉じゃがの作り方\n\nじゃがいもと牛肉を甘辛く煮る。\n", encoding="utf-8")
    with live.writing() as store:
        Indexer(store, embedder).index([extra])
    meanwhile = live.search("肉じゃが")
    assert meanwhile.preparing and meanwhile.stale and live.resident.generation == loaded
    assert "nikujaga.txt" not in [name for name, _ in shown(meanwhile.results)]

    gate.touch()
    wait_for(live.maker)
    after = live.search("肉じゃが")
    assert not after.preparing and not after.stale and live.resident.generation != loaded
    assert shown(after.results)[0][0] == "nikujaga.txt"


def test_writing_ends_the_child_and_a_failure_is_searched_in_the_file(large: Path, embedder: Embedder,
                                                                       tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ArraysMaker, "command", gated(tmp_path / "never"))
    live = LiveIndex(large, embedder)
    assert live.search(QUESTION).preparing
    assert live.maker._process is not None
    half_made = homes(large)[0] / f".building-{live.maker._process.pid}-0a1b2c3d"
    half_made.mkdir(parents=True)
    with live.writing():  # the child's reader would keep this writer out
        assert not live.maker.running() and not half_made.exists()

    def failing(self: ArraysMaker) -> list[str]:
        return [sys.executable, "-c", "import sys; print('no space left on device', file=sys.stderr); sys.exit(1)"]

    monkeypatch.setattr(ArraysMaker, "command", failing)
    live.search(QUESTION)
    wait_for(live.maker)
    answer = live.search(QUESTION)
    assert live.unwritable == "no space left on device" and answer.results and not answer.preparing
    assert live.resident.arrays is None


def test_the_app_says_it_is_preparing_and_then_stops_saying_so(large: Path, embedder: Embedder, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from oboyu.tui.app import OboyuApp
    from oboyu.tui.status import StatusBar
    from oboyu.tui.widgets import ResultList

    gate = tmp_path / "gate"
    monkeypatch.setattr(ArraysMaker, "command", gated(gate))

    async def run() -> None:
        app = OboyuApp(large, embedder)
        async with app.run_test(size=(120, 30)) as pilot:

            async def until(condition) -> None:
                for _ in range(2400):
                    if condition():
                        return
                    await pilot.pause(0.05)
                raise AssertionError("timed out")

            def status() -> str:
                return str(app.query_one(StatusBar).render())

            await pilot.press(*"カレー")
            await until(lambda: app.shown is not None and app.shown.query == "カレー")
            assert app.preparing and "preparing fast search" in status()
            assert Path(app.query_one(ResultList).results[0].path).name == "curry.txt"
            gate.touch()
            await until(lambda: not app.live.maker.running())
            await pilot.press(*"の作り方")
            await until(lambda: app.shown is not None and app.shown.query == "カレーの作り方")
            await until(lambda: not app.preparing)
            assert "preparing" not in status() and app.live.resident.arrays is not None

    asyncio.run(run())


def test_a_first_start_answers_from_an_older_generations_arrays(large: Path, embedder: Embedder, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`oboyu index` stopped before it made the arrays of what it wrote: the last generation's
    folder is still there, and answers (as the last loaded state) while the new ones are made."""
    from oboyu.index.arrays import META
    from oboyu.index.arrays_cache import arrays_of, last_made_arrays

    with Store(large, read_only=True) as store:
        older = arrays_of(store).generation
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "nikujaga.txt").write_text("肉じゃがの作り方\n\nじゃがいもと牛肉を甘辛く煮る。\n", encoding="utf-8")
    with Store(large) as store:
        Indexer(store, embedder).index([extra])
    with Store(large, read_only=True) as store:
        kept = last_made_arrays(store)
        assert kept is not None and kept.generation == older
        meta = json.loads((kept.folder / META).read_text())
        (kept.folder / META).write_text(json.dumps({**meta, "model_id": "another-model"}))
        assert last_made_arrays(store) is None  # another model's vectors: never answered from
        (kept.folder / META).write_text(json.dumps(meta))
    gate = tmp_path / "gate"
    monkeypatch.setattr(ArraysMaker, "command", gated(gate))
    live = LiveIndex(large, embedder)

    first = live.search("肉じゃが")
    assert first.preparing and first.stale and live.resident.generation == older
    assert "nikujaga.txt" not in [name for name, _ in shown(first.results)]
    assert shown(live.search(QUESTION).results)[0][0] == "curry.txt"

    gate.touch()
    wait_for(live.maker)
    after = live.search("肉じゃが")
    assert not after.stale and not after.preparing and live.resident.generation != older
    assert shown(after.results)[0][0] == "nikujaga.txt"
