"""What the app remembers between runs, per index: search history (↑ in an empty box, Ctrl+↑/↓,
cleared from the palette), the last query and mode (a setting), and the selection of results
(space) copied together. Driven by Textual's Pilot over a real index of real files; opening
several files in a real editor is in test_tui_terminal.py."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_NOTES
from rich.console import Console
from test_tui import first_paths, type_query, until

from oboyu.config import settings
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.modes import Mode
from oboyu.tui.app import OboyuApp
from oboyu.tui.memory import HISTORY_KEPT, STATE_FILE, AppMemory
from oboyu.tui.widgets import MARK, ResultList


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The state dir, and no settings file: each test starts with nothing remembered."""
    monkeypatch.setenv("OBOYU_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OBOYU_CONFIG", str(tmp_path / "config.toml"))
    settings.cache_clear()
    yield tmp_path / "state"
    settings.cache_clear()


@pytest.fixture
def db(tmp_path: Path, embedder: Embedder) -> Path:
    shutil.copytree(EXAMPLE_NOTES, tmp_path / "notes")
    path = tmp_path / "index.duckdb"
    with Store(path) as store:
        Indexer(store, embedder).index([tmp_path / "notes"])
    return path


def plain(renderable) -> str:
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def box(app: OboyuApp) -> str:
    return app.query_one("#query").value


async def clear_box(pilot) -> None:
    pilot.app.query_one("#query").value = ""
    await until(pilot, lambda: pilot.app.answer is None)


def test_history_is_kept_per_index_across_runs_and_cleared_from_the_palette(
        db: Path, state: Path, embedder: Embedder) -> None:
    other = db.with_name("other.duckdb")
    shutil.copy(db, other)

    async def first_run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await type_query(pilot, "カレーの作り方")
            await pilot.press("enter")  # a search made
            await pilot.press("escape")
            await clear_box(pilot)
            await type_query(pilot, "京都")  # left in the box at quit: a search made too

    async def second_run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            assert box(app) == ""  # restoring the last search is a setting, off by default
            await pilot.press("up")
            assert box(app) == "京都"
            await until(pilot, lambda: app.shown is not None and app.shown.query == "京都")
            assert first_paths(app)[0] == "kyoto-trip.md"
            await pilot.press("ctrl+up")
            assert box(app) == "カレーの作り方"
            await pilot.press("ctrl+up")  # the oldest stays
            assert box(app) == "カレーの作り方"
            await pilot.press("ctrl+down", "ctrl+down")
            assert box(app) == ""  # past the newest: an empty box
            await pilot.press("up")
            assert box(app) == "京都"
            await pilot.press("up")  # in a box that is not empty, ↑ moves through the results
            assert box(app) == "京都"

    async def other_index() -> None:
        app = OboyuApp(other, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("up")
            assert box(app) == ""  # this index's history is its own

    async def clear_from_palette() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+p")
            await pilot.press(*"Clear search history")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await until(pilot, lambda: not app.memory.of_index.history)

    asyncio.run(first_run())
    remembered = json.loads((state / STATE_FILE).read_text(encoding="utf-8"))
    assert remembered[str(db.resolve())]["history"] == ["カレーの作り方", "京都"]
    asyncio.run(second_run())
    asyncio.run(other_index())
    asyncio.run(clear_from_palette())
    remembered = json.loads((state / STATE_FILE).read_text(encoding="utf-8"))
    assert remembered[str(db.resolve())]["history"] == []
    assert str(other.resolve()) in remembered  # the other index's entry is kept


def test_the_last_query_and_mode_come_back_when_the_setting_asks(db: Path, state: Path, embedder: Embedder,
                                                                tmp_path: Path) -> None:
    async def leave(mode_presses: int) -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press(*["ctrl+t"] * mode_presses)
            await type_query(pilot, "京都の旅行")

    async def come_back() -> OboyuApp:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.shown is not None)
            assert box(app) == "京都の旅行" and app.shown.query == "京都の旅行"
            assert first_paths(app)[0] == "kyoto-trip.md"
        return app

    asyncio.run(leave(mode_presses=1))  # hybrid → vector
    (tmp_path / "config.toml").write_text("[app]\nrestore_last_search = true\n", encoding="utf-8")
    settings.cache_clear()
    app = asyncio.run(come_back())
    assert app.mode == Mode.VECTOR and app.shown.mode == Mode.VECTOR


def test_space_selects_results_across_searches_and_y_copies_their_paths(db: Path, state: Path,
                                                                        embedder: Embedder) -> None:
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            listed = app.query_one(ResultList)
            await type_query(pilot, "カレーの作り方")
            await pilot.press("space")  # in the search box, a space is a character
            assert box(app) == "カレーの作り方 "
            await pilot.press("backspace")
            await until(pilot, lambda: app.shown.query == "カレーの作り方")
            await pilot.press("tab")
            assert app.focused is listed
            await pilot.press("space")
            assert [Path(r.path).name for r in listed.chosen()] == ["curry.txt"]
            assert plain(listed.get_option_at_index(0).prompt).startswith(MARK + "curry.txt")
            assert "1 selected" in str(listed.border_title)
            await pilot.press("escape")
            await clear_box(pilot)
            await type_query(pilot, "release the wheel")
            await pilot.press("enter")  # to the preview: space there selects the highlighted result
            await pilot.press("space")
            assert [Path(r.path).name for r in listed.chosen()] == ["curry.txt", "release-checklist.md"]
            await pilot.press("y")
            assert [Path(p).name for p in app.clipboard.splitlines()] == ["curry.txt", "release-checklist.md"]
            await pilot.press("space")  # again: unselected
            assert [Path(r.path).name for r in listed.chosen()] == ["curry.txt"]
            app.action_clear_selection()
            assert "selected" not in str(listed.border_title)
            await pilot.press("y")  # no selection: the highlighted result
            assert Path(app.clipboard).name == "release-checklist.md"

    asyncio.run(run())


def test_the_memory_file_survives_odd_names_bad_files_and_other_indexes(tmp_path: Path) -> None:
    file = tmp_path / "state" / STATE_FILE
    odd = "/notes/\udc82\udca0memo.txt"  # a name that is not UTF-8, as Python reads it
    first = AppMemory(tmp_path / "a.duckdb", file)
    for i in range(HISTORY_KEPT + 5):
        first.of_index.remember_search(f"query {i}")
    assert not first.of_index.remember_search("  query   204 ")  # the newest again, spaces folded
    first.of_index.remember_search("query 10")  # an earlier one moves up
    first.of_index.remember_opened(odd, 3, "text")
    first.save()
    second = AppMemory(tmp_path / "b.duckdb", file)
    second.of_index.remember_search("another index")
    second.save()
    again = AppMemory(tmp_path / "a.duckdb", file)
    history = again.of_index.history
    assert len(history) == HISTORY_KEPT and history[-1] == "query 10" and history[-2] == "query 204"
    assert history.count("query 10") == 1 and "query 4" not in history
    assert again.of_index.recent[0].path == odd and again.of_index.recent[0].line == 3
    assert AppMemory(tmp_path / "b.duckdb", file).of_index.history == ["another index"]

    file.write_text("{not json", encoding="utf-8")
    fresh = AppMemory(tmp_path / "a.duckdb", file)
    assert fresh.of_index.history == []
    aside = [p for p in file.parent.iterdir() if p.name.startswith(f"{STATE_FILE}.unreadable-")]
    assert len(aside) == 1 and aside[0].read_text(encoding="utf-8") == "{not json"  # set aside, not lost
