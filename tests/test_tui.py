"""The interactive app, driven by Textual's Pilot over a real index of real files."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import EXAMPLE_NOTES
from rich.cells import cell_len
from textual import events

from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.lock import IndexLock
from oboyu.index.schema import SCHEMA_VERSION
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.modes import Mode
from oboyu.tui.app import OboyuApp
from oboyu.tui.indexes import FolderPicker, IndexScreen
from oboyu.tui.opening import editor_arguments
from oboyu.tui.screens import FilterScreen, HelpScreen
from oboyu.tui.widgets import Preview, ResultList


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with the example notes, so displayed paths read ~/notes/…"""
    home = tmp_path / "home"
    shutil.copytree(EXAMPLE_NOTES, home / "notes")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def db(home: Path, embedder: Embedder) -> Path:
    path = home / "index.duckdb"
    with Store(path) as store:
        Indexer(store, embedder).index([home / "notes"])
        # a fixed update time, so that screens showing it compare equal across runs
        store.con.execute("UPDATE documents SET indexed_at = TIMESTAMP '2026-01-02 09:30:00'")
    return path


async def until(pilot, condition, timeout: float = 60.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("timed out")


async def type_query(pilot, query: str) -> None:
    """Type `query` key by key and wait until the list shows its answer."""
    await pilot.press(*query)
    await until(pilot, lambda: pilot.app.shown is not None and pilot.app.shown.query == query)
    await pilot.pause()


def first_paths(app: OboyuApp) -> list[str]:
    return [Path(r.path).name for r in app.query_one(ResultList).results]


def preview_text(app: OboyuApp) -> str:
    return str(app.query_one("#preview-text").render())


def test_arrows_in_a_preview_that_all_fits_leave_the_selection(db: Path, embedder: Embedder) -> None:
    """A trial pressed ↓ in a short preview: the selection moved and the preview changed under it."""

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 40)) as pilot:
            await type_query(pilot, "カレーの作り方")
            await until(pilot, lambda: "飴色" in preview_text(app))
            await pilot.press("enter")
            preview, results = app.query_one(Preview), app.query_one(ResultList)
            assert app.focused is preview and not preview.allow_vertical_scroll
            chosen = results.highlighted
            for key in ("down", "pagedown", "up", "pageup"):
                await pilot.press(key)
                assert results.highlighted == chosen and app.focused is preview, key
            await pilot.press("escape", "down")  # from the search box ↓ still moves it
            assert results.highlighted != chosen

    asyncio.run(run())


def test_typing_shows_the_expected_file_first_and_its_passage_in_the_preview(db: Path, embedder: Embedder) -> None:
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await type_query(pilot, "カレーの作り方")
            assert first_paths(app)[0] == "curry.txt"
            await until(pilot, lambda: "飴色" in preview_text(app))
            assert app.query_one(Preview).border_title.endswith("curry.txt:1")
            await pilot.press("enter")
            assert app.focused is app.query_one(Preview)
            await pilot.press("y")
            assert app.clipboard == str(db.parent / "notes" / "home" / "curry.txt")
            await pilot.press("escape")
            await pilot.press(*["backspace"] * 7)
            await type_query(pilot, "release the wheel")
            assert first_paths(app)[0] == "release-checklist.md"
            await pilot.press("down")  # to the next result, over a "weak matches" divider if one comes first
            listed = app.query_one(ResultList)
            assert listed.current is listed.results[1]

    asyncio.run(run())


def test_a_late_answer_never_replaces_a_newer_one(db: Path, embedder: Embedder) -> None:
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test() as pilot:
            await type_query(pilot, "京都")
            newest = app.shown
            older = type(newest)(newest.serial - 1, "カレー", newest.mode, newest.filters)
            from oboyu.search.live import Answer
            from oboyu.tui.messages import AnswerReady

            app.post_message(AnswerReady(older, Answer(results=[]), 0.0))
            await pilot.pause()
            assert app.shown is newest
            assert first_paths(app)[0] == "kyoto-trip.md"

    asyncio.run(run())


def test_modes_cycle_and_the_status_bar_says_which(db: Path, embedder: Embedder) -> None:
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(120, 30)) as pilot:
            await type_query(pilot, "changelog")
            assert app.shown.mode == "hybrid"
            for expected in ("vector", "keyword", "hybrid"):
                await pilot.press("ctrl+t")
                await until(pilot, lambda: app.shown.mode == expected)  # noqa: B023 (awaited in this iteration)
                assert first_paths(app)[0] == "release-checklist.md"
                assert f" {expected} " in str(app.query_one("#status").render())
            await pilot.press("ctrl+t", "ctrl+t")
            assert app.mode == "keyword"
            assert all(r.ranks.get("vector") is None for r in app.query_one(ResultList).results)

    asyncio.run(run())


def test_filters_apply_before_ranking(db: Path, embedder: Embedder) -> None:
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await type_query(pilot, "京都の旅行")
            assert any(name.endswith(".txt") for name in first_paths(app))
            await pilot.press("ctrl+f")
            assert isinstance(app.screen, FilterScreen)
            app.screen.query_one("#types").value = "txt,html"
            app.screen.query_one("#since").value = "someday"  # (yesterday is a date now)
            await pilot.click("#apply")
            assert "not a date" in str(app.screen.query_one("#error").render())
            await pilot.pause()
            assert "30min" in app.export_screenshot()  # the message's end is on the screen, wrapped, not cut
            app.screen.query_one("#since").value = ""
            app.screen.query_one("#since").focus()
            await pilot.press("enter")
            await until(pilot, lambda: app.shown.serial > 1 and app.shown.filters.types == ("txt", "html"))
            names = first_paths(app)
            assert names and all(name.endswith((".txt", ".html")) for name in names)
            assert "filtered" in str(app.query_one("#status").render())
            # a filter no file passes is said as such (a user trial's `notes/*`: "No results.", nothing more)
            await pilot.press("ctrl+f")
            app.screen.query_one("#types").value = "pptx"
            await pilot.click("#apply")
            await until(pilot, lambda: app.shown.filters.types == ("pptx",) and app.answer is not None
                        and not app.answer.results)
            await pilot.pause()
            said = str(app.query_one("#preview-text").render())
            assert "No indexed file passes the filters" in said
            # wrapped to the pane, hint and all (at 100 columns it was cut after "indexed fol…")
            width = app.query_one(Preview)._text_width()
            assert "`drafts/`" in said and all(cell_len(line) <= width for line in said.split("\n")), (width, said)

    asyncio.run(run())


def test_help_screen_lists_the_keys(db: Path, embedder: Embedder) -> None:
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test() as pilot:
            await pilot.press("f1")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert not isinstance(app.screen, HelpScreen)
            await pilot.press("?")  # in the search box, ? is a character
            assert app.query_one("#query").value == "?"

    asyncio.run(run())


def test_the_help_scrolls_to_its_end_and_ctrl_c_says_how_to_quit(db: Path, embedder: Embedder) -> None:
    """A user trial: at 120x40 the help ended mid-sentence and no key scrolled it; Ctrl+C's
    notice read "Press [b]ctrl+q[/b]", Textual's markup shown as typed."""
    from textual.containers import VerticalScroll

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 24)) as pilot:
            await pilot.press("ctrl+c")
            await pilot.pause()
            notices = [n.message for n in app._notifications]
            assert notices and "[b]" not in notices[-1] and "Ctrl+Q" in notices[-1]
            await pilot.press("f1")
            await pilot.pause()
            text = app.screen.query_one("#help-text", VerticalScroll)
            assert text.has_focus and text.max_scroll_y > 0
            await pilot.press("end")
            await pilot.pause()
            assert text.scroll_y == text.max_scroll_y

    asyncio.run(run())


def test_index_screen_adds_a_folder_and_search_answers_while_it_indexes(
    db: Path, home: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = home / "garden"
    extra.mkdir()
    for i in range(6):
        (extra / f"plant-{i}.md").write_text(f"# 植物 {i}\n\nトマトの苗は日当たりの良い場所に植える。水やりは朝に。\n", encoding="utf-8")
    # hold the indexer's first batch until a search has been answered, so the two overlap
    searched = threading.Event()
    original = Indexer._store_batch

    def gated(self, *args):
        assert searched.wait(60), "no search was answered while indexing"
        return original(self, *args)

    monkeypatch.setattr(Indexer, "_store_batch", gated)

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+o")
            assert isinstance(app.screen, IndexScreen)
            table = app.screen.query_one("#roots")
            await until(pilot, lambda: table.row_count == 1)
            await pilot.press("a")
            assert isinstance(app.screen, FolderPicker)
            app.screen.query_one("#folder").value = "~/garden"
            await pilot.press("enter")
            await until(pilot, lambda: app.indexing)
            await pilot.press("escape")  # back to searching while it runs
            await type_query(pilot, "カレー")
            assert app.indexing and first_paths(app)[0] == "curry.txt"
            searched.set()
            await until(pilot, lambda: not app.indexing)
            await pilot.press("ctrl+o")
            table = app.screen.query_one("#roots")
            await until(pilot, lambda: table.row_count == 2)
            await pilot.press("escape", *["backspace"] * 3)
            await type_query(pilot, "トマトの苗")
            assert first_paths(app)[0].startswith("plant-")

    asyncio.run(run())
    with Store(db, read_only=True) as store:
        assert [Path(r.path).name for r in store.root_summaries()] == ["garden", "notes"]


def test_removing_a_root_drops_its_rows(db: Path, embedder: Embedder) -> None:
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+o")
            table = app.screen.query_one("#roots")
            await until(pilot, lambda: table.row_count == 1)
            await pilot.press("d", "enter")  # a stray Enter: "No" has the focus (a trial's removed the folder)
            await pilot.pause(0.3)
            assert table.row_count == 1
            await pilot.press("d", "y")
            await until(pilot, lambda: table.row_count == 0)

    asyncio.run(run())
    with Store(db, read_only=True) as store:
        assert store.counts() == (0, 0)


def test_a_root_is_not_removed_while_another_process_indexes(db: Path, embedder: Embedder) -> None:
    messages: list[str] = []

    async def run() -> None:
        app = OboyuApp(db, embedder)
        notify = app.notify
        app.notify = lambda message, **kw: (messages.append(str(message)), notify(message, **kw))[1]
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+o")
            table = app.screen.query_one("#roots")
            await until(pilot, lambda: table.row_count == 1)
            with IndexLock(db):  # what `oboyu index` holds for its whole run
                await pilot.press("d", "y")
                await until(pilot, lambda: any("cannot remove" in m for m in messages))

    asyncio.run(run())
    assert any("is updating the index" in m for m in messages), messages
    with Store(db, read_only=True) as store:
        assert store.counts()[0] > 0 and len(store.roots()) == 1


def test_a_damaged_index_is_said_as_such_in_the_app(db: Path, tmp_path: Path) -> None:
    """A user trial: a half-copied index read "cannot load the model: IO Error..." in the app,
    blaming the model; it is the index that is damaged, and what to do is said."""
    whole = db.read_bytes()
    half = tmp_path / "half.duckdb"
    half.write_bytes(whole[: len(whole) // 2])

    async def run() -> None:
        app = OboyuApp(half)
        messages: list[str] = []
        notify = app.notify
        app.notify = lambda message, **kw: (messages.append(str(message)), notify(message, **kw))[1]
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: any("is damaged or incomplete" in m for m in messages))
            assert not any("cannot load the model" in m for m in messages), messages
            assert app.is_running

    asyncio.run(run())


def test_errors_are_notifications_not_crashes(db: Path, home: Path, embedder: Embedder) -> None:
    """A database locked by another process, and a folder that is gone."""
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, sys, time; c = duckdb.connect({str(db)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"

        async def run() -> None:
            app = OboyuApp(db, embedder)
            messages: list[str] = []
            notify = app.notify
            app.notify = lambda message, **kw: (messages.append(str(message)), notify(message, **kw))[1]
            async with app.run_test(size=(100, 30)) as pilot:
                await pilot.press(*"カレー")
                await until(pilot, lambda: any("in use by another oboyu process" in m for m in messages))
                app.start_indexing([home / "no-such-folder"])
                await until(pilot, lambda: any("no such folder" in m for m in messages))
                assert not app.indexing
                assert app.is_running

        asyncio.run(run())
    finally:
        holder.kill()
        holder.wait()


def test_editor_arguments() -> None:
    assert editor_arguments("vim", [("/a b.md", 12)]) == ["+12", "/a b.md"]
    assert editor_arguments("code --wait", [("/a.md", 3)]) == ["-g", "/a.md:3"]
    assert editor_arguments("/usr/bin/hx", [("/a.md", 3)]) == ["/a.md:3"]
    # several files: a line each where the editor takes one, else the first file's
    assert editor_arguments("nvim", [("/a.md", 3), ("/b.md", 9)]) == ["+3", "/a.md", "/b.md"]
    assert editor_arguments("code", [("/a.md", 3), ("/b.md", 9)]) == ["-g", "/a.md:3", "-g", "/b.md:9"]
    assert editor_arguments("zed", [("/a.md", 3), ("/b.md", 9)]) == ["/a.md:3", "/b.md:9"]


# --- snapshots of the main screens (keyword mode: its scores do not depend on the CPU's float kernels)

def snapshot_app(db: Path, embedder: Embedder, theme: str = "textual-dark") -> OboyuApp:
    app = OboyuApp(db, embedder, mode=Mode.KEYWORD)
    app.theme = theme
    return app


def typed(query: str, *keys: str):
    async def run_before(pilot) -> None:
        pilot.app.query_one("#query").cursor_blink = False
        await type_query(pilot, query)
        current = pilot.app.query_one(ResultList).current
        title = f"{Path(current.path).name}:{current.start_line}"
        await until(pilot, lambda: pilot.app.query_one(Preview).border_title.endswith(title))
        if keys:
            await pilot.press(*keys)
        await pilot.pause(0.3)

    return run_before


def test_snapshot_search_80x24(db: Path, embedder: Embedder, snap_compare) -> None:
    assert snap_compare(snapshot_app(db, embedder), terminal_size=(80, 24), run_before=typed("玉ねぎを炒める"))


def test_snapshot_search_wide_light(db: Path, embedder: Embedder, snap_compare) -> None:
    app = snapshot_app(db, embedder, theme="textual-light")
    assert snap_compare(app, terminal_size=(140, 36), run_before=typed("release changelog"))


def test_snapshot_index_screen(db: Path, embedder: Embedder, snap_compare) -> None:
    async def run_before(pilot) -> None:
        pilot.app.query_one("#query").cursor_blink = False
        await pilot.press("ctrl+o")
        await until(pilot, lambda: pilot.app.screen.query_one("#roots").row_count == 1)
        await pilot.pause(0.3)

    assert snap_compare(snapshot_app(db, embedder), terminal_size=(80, 24), run_before=run_before)


def test_snapshot_help_and_filters(db: Path, embedder: Embedder, snap_compare) -> None:
    assert snap_compare(snapshot_app(db, embedder), terminal_size=(80, 24), run_before=typed("京都", "f1"))


def test_the_app_tells_the_truth(db: Path, home: Path, embedder: Embedder) -> None:
    """Counts that follow another process's writes, a pasted paragraph kept whole, Quit in the
    footer, no hidden entries in the folder picker, a passage's pages as the CLI shows them."""
    from rich.console import Console
    from textual import events

    from oboyu.search.query import MAX_QUERY_CHARS, Result
    from oboyu.tui.widgets import result_prompt

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await type_query(pilot, "カレー")
            await until(pilot, lambda: app.summary.documents > 0)
            before = app.summary.documents
            (home / "notes" / "new-note.md").write_text("# 新しいメモ\n\n植木鉢の土を替える。\n", encoding="utf-8")
            Indexer(IndexFile(db), embedder).index([home / "notes"])  # as another process would, through the file
            app.query_one("#query").value = ""
            await type_query(pilot, "植木鉢")
            await until(pilot, lambda: app.summary.documents == before + 1)
            assert f"{before + 1:,} docs" in str(app.query_one("#status").render())

            box = app.query_one("#query")
            box.value = ""
            box.post_message(events.Paste("会議の\n議事録を\r\nまとめる"))
            await until(pilot, lambda: box.value == "会議の 議事録を まとめる")
            box.value = ""
            box.post_message(events.Paste("a" * 300_000))  # crashed the app (MeCab): cut to the longest query
            await until(pilot, lambda: len(box.value) == MAX_QUERY_CHARS)
            await pilot.pause()
            assert any("the paste was cut" in n.message for n in app._notifications)

            quit_key = [b for b in app.active_bindings.values() if b.binding.key == "ctrl+q"]
            assert quit_key and quit_key[0].binding.show and quit_key[0].binding.description == "Quit"

            (home / ".hidden").mkdir()
            (home / "visible").mkdir()
            app.push_screen(FolderPicker(home))
            await pilot.pause()
            tree = app.screen.query_one("#tree")
            await until(pilot, lambda: len(tree.root.children) > 0)
            names = {str(node.label) for node in tree.root.children}
            assert "visible" in names and "notes" in names and not any(n.startswith(".") for n in names)

    asyncio.run(run())
    pages = Result(rank=1, confidence=0.5, path="/d/report.pdf", start_line=1, end_line=9, heading="h", title=None,
                   snippet="s", chunk_id="c", page_start=1, page_end=2)
    console = Console(width=100, record=True)
    console.print(result_prompt(pages))
    assert "p. 1-2" in console.export_text()


def test_the_list_sets_unlikely_results_apart_under_a_divider_that_is_skipped() -> None:
    from textual.app import App, ComposeResult

    from oboyu.search.query import UNLIKELY
    from tests.test_output_formats import made_result

    class ListOnly(App):
        def compose(self) -> ComposeResult:
            yield ResultList(id="results")

    async def run() -> None:
        app = ListOnly()
        async with app.run_test() as pilot:
            listed = app.query_one(ResultList)
            listed.show([made_result(1, 0.83, True), made_result(2, 0.004, False), made_result(3, 0.002, False)])
            await pilot.pause()
            labels = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
            assert listed.option_count == 4 and UNLIKELY in labels[1] and listed.get_option_at_index(1).disabled
            assert listed.unlikely == {made_result(2, 0, False).chunk_id, made_result(3, 0, False).chunk_id}
            listed.highlighted = 0
            listed.step(1)  # over the divider
            assert listed.current is not None and listed.current.rank == 2
            # none over the line (told a good match by its tokens): all set apart, the first one highlighted
            listed.show([made_result(1, 0.02, False), made_result(2, 0.01, False)])
            await pilot.pause()
            assert listed.get_option_at_index(0).disabled and UNLIKELY in str(listed.get_option_at_index(0).prompt)
            assert listed.highlighted == 1 and listed.current is not None and listed.current.rank == 1

    asyncio.run(run())


def test_the_status_bar_ends_in_an_ellipsis_where_the_terminal_is_narrow(db: Path, embedder: Embedder) -> None:
    """A user trial: the bar was cut at the border mid-word, with nothing to say that more followed."""
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(44, 20)) as pilot:
            bar = app.query_one("#status")
            await until(pilot, lambda: bar.render_line(0).text.strip() != "")
            line = bar.render_line(0).text.rstrip()
            assert line.endswith("…") and line.lstrip().startswith("6 docs · 11 chunks"), line

    asyncio.run(run())


def test_the_filters_dialog_keeps_its_words_and_buttons_at_50_columns(db: Path, embedder: Embedder) -> None:
    """A user trial at 50 columns: the labels ended at the border mid-word, and Cancel was off the row."""
    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(50, 30)) as pilot:
            await pilot.press("ctrl+f")
            await until(pilot, lambda: isinstance(app.screen, FilterScreen))
            await pilot.pause()
            shown = app.export_screenshot()
            assert "leaves&#160;out)" in shown and "7d)" in shown and "Cancel" in shown
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(80, 24)) as pilot:  # a trial's 80x24: the buttons were cut off
            await pilot.press("ctrl+f")
            await until(pilot, lambda: isinstance(app.screen, FilterScreen))
            await pilot.pause()
            dialog = app.screen.query_one("#dialog")
            assert dialog.max_scroll_y == 0 and all(b.region.bottom <= dialog.region.bottom for b in app.screen.query("Button"))

    asyncio.run(run())


def test_the_preview_wraps_a_long_line_under_its_number() -> None:
    """A user trial: a paragraph that is one line (a Word file's, a note's) was cut at the pane's
    edge, so the preview showed its first forty characters. Each row fits the pane, every
    character is kept, and the passage's row counts the wrapped rows above it."""
    from rich.cells import cell_len

    from oboyu.tui.preview import MATCH, preview_text

    paragraph = "経費精算は毎月25日までに申請してください。" * 6
    lines = ["# 手順", paragraph, "", "領収書は原本を総務へ。"]
    text, row = preview_text(lines, 4, 4, {2: [(0, 4)]}, width=40)
    rows = text.plain.split("\n")
    assert all(cell_len(r) <= 40 for r in rows) and len(rows) > len(lines)
    assert rows[row].startswith("4 ▌ 領収書")
    assert "".join(r[4:] for r in rows[1:row - 1]) == paragraph  # wrapped under its number, nothing lost
    assert [text.plain[s.start:s.end] for s in text.spans if s.style == MATCH] == ["経費精算"]  # the match kept
    unwrapped, row = preview_text(lines, 4, 4, {})
    assert len(unwrapped.plain.split("\n")) == len(lines) and row == 3


def test_the_preview_never_starts_a_row_with_a_closing_mark() -> None:
    """A user trial: the preview's rows of a Japanese paragraph started with 。 (Rich folds at
    the edge wherever it falls). At every width: no row starts with a closing mark nor ends with
    an opening one, each fits, nothing is lost; English still breaks at spaces."""
    import unicodedata

    from rich.cells import cell_len

    from oboyu.tui.preview import preview_text
    from oboyu.tui.wrapping import NO_ROW_END, NO_ROW_START

    paragraph = "会議は十時から。資料は「前日」までに共有する（厳守）。議事録は、翌日までにまとめる。ちょっと待ってね！" * 3
    for width in range(20, 61):
        text, _ = preview_text(["x", paragraph], 2, 2, {}, width=width)
        rows = [row[4:] for row in text.plain.split("\n")[1:]]
        assert "".join(rows) == paragraph and all(cell_len(row) <= width - 4 for row in rows), width
        assert not any(row[0] in NO_ROW_START for row in rows[1:]), (width, rows)
        assert not any(row[-1] in NO_ROW_END for row in rows[:-1]), (width, rows)
    # a line with spaces (and not ASCII): a space at the edge hangs, never a row alone or a word cut
    # short; a tab takes its cells; a combining dakuten (NFD) stays with its kana
    spaced = "東京駅 大阪駅 名古屋駅 京都駅 café au lait " * 3
    nfd = unicodedata.normalize("NFD", "がぎぐげご。ぱぴぷぺぽ、") * 4
    for width in range(12, 41):
        for line in (spaced, "\t" + spaced, nfd):
            text, _ = preview_text(["x", line], 2, 2, {}, width=width)
            rows = [row[4:] for row in text.plain.split("\n")[1:]]
            assert all(cell_len(row) <= width - 4 for row in rows) and all(row.strip() for row in rows[1:]), (width, rows)
            assert "".join(rows).replace(" ", "") == line.expandtabs().replace(" ", ""), (width, rows)
            assert not any(row and unicodedata.combining(row[0]) for row in rows), (width, rows)
            words = {word for row in rows for word in row.split()}
            assert words <= set(line.split()) | {w for w in words if not w.isascii()}, (width, rows)
    sentence = "the quick brown fox jumps over the lazy dog "
    english, _ = preview_text(["x", sentence * 3], 2, 2, {}, width=30)
    assert all(set(row[4:].split()) <= set(sentence.split()) for row in english.plain.split("\n")[1:])  # whole words


def test_the_preview_of_a_passage_inside_one_long_line_starts_at_the_passage() -> None:
    """A user trial: a result inside a minified file's one line of 108 KB showed the line's start,
    a hundred rows above the passage. The rows of its snippet are the marked ones, and the view
    starts there."""
    from oboyu.tui.preview import preview_text, snippet_columns

    filler = "var a=1;b=2;c=3;" * 400
    line = filler + "function  retryConnection(maxRetries){return backoff(maxRetries)}" + filler
    snippet = "…function retryConnection(maxRetries){return backoff(…"
    focus = snippet_columns(line, snippet)
    assert focus is not None and line[focus[0]:].startswith("function  retryConnection")
    text, row = preview_text(["// bundle", line, "// end"], 2, 2, {}, width=60, focus=focus)
    rows = text.plain.split("\n")
    marked = [i for i, r in enumerate(rows) if "▌" in r]
    assert row == marked[0] > 50 and len(marked) <= 3
    assert "retryConn" in "".join(rows[i] for i in marked)
    assert not rows[row].startswith("2 ")  # a row of line 2 well after its first
    assert snippet_columns("a short line", "short") is None  # the passage is the line: all of it marked


def test_an_index_upgraded_as_the_app_opens_it_says_how_far_it_is(
    db: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library's log goes to stderr, which nobody sees while the app owns the terminal: an
    older index's upgrade (minutes at a million passages) showed nothing. Its lines are
    notifications, and the upgraded index answers."""
    from oboyu.index import reanalysis

    with Store(db) as store:
        store.con.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    monkeypatch.setattr(reanalysis, "KEYWORD_BATCH", 1)
    monkeypatch.setattr(reanalysis, "SAY_AFTER", 0.0)
    monkeypatch.setattr(reanalysis, "SAY_EVERY", 0.0)

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: any("upgrading the index" in n.message and "ETA" in n.message
                                           for n in app._notifications))
            await type_query(pilot, "飴色")
            await until(pilot, lambda: "飴色" in preview_text(app))

    asyncio.run(run())
    with Store(db, read_only=True) as store:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)


def test_a_character_typed_in_the_list_goes_on_the_search(db: Path, embedder: Embedder) -> None:
    """A user trial moved to a result and typed on: the keys were lost. Those the list has (`e`,
    `y`, Space) still act there."""

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await type_query(pilot, "カレー")
            await pilot.press("tab")
            assert app.focused is app.query_one(ResultList)
            await pilot.press("y")
            assert app.clipboard.endswith("curry.txt") and app.focused is app.query_one(ResultList)
            await pilot.press(*"の作り方")
            await until(pilot, lambda: app.shown is not None and app.shown.query == "カレーの作り方")
            assert app.query_one("#query").value == "カレーの作り方" and app.focused is app.query_one("#query")
            # a burst, as an IME commits a word (a trial's 替え玉 left 替): every key, in order
            await pilot.press("tab")
            assert app.focused is app.query_one(ResultList)
            for character in "と玉ねぎ":
                key = events.Key(character, character)
                key.set_sender(app)
                app._driver.send_message(key)
            await until(pilot, lambda: app.query_one("#query").value == "カレーの作り方と玉ねぎ")

    asyncio.run(run())


def test_the_preview_shows_the_passage_in_a_short_pane(db: Path, embedder: Embedder) -> None:
    """A user trial at 60x20: the preview held two rows and scrolled to two rows above the
    passage, so the passage (line 3) never showed. At every size, its first row is in view."""

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(60, 20)) as pilot:
            await type_query(pilot, "議題は前日の十七時までに共有")
            preview = app.query_one(Preview)
            for size in ((60, 20), (60, 19), (100, 30)):
                await pilot.resize_terminal(*size)
                preview.load(app.query_one(ResultList).results[0], "議題")
                await until(pilot, lambda: preview.passage_row > 0 and preview.border_title)
                await pilot.pause(0.2)
                shown = preview.scrollable_content_region.height
                assert shown > 0, size
                assert preview.scroll_y <= preview.passage_row < preview.scroll_y + shown, (size, shown)

    asyncio.run(run())


def test_switching_to_another_index_leaves_none_of_the_first_one_s_results(db: Path, embedder: Embedder) -> None:
    """A trial switched to an empty index: the first one's results and selection stayed, and `y`
    copied them."""

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await type_query(pilot, "カレーの作り方")
            await pilot.press("tab", "space")
            results = app.query_one(ResultList)
            assert results.results and results.selected
            app.switch_index(str(db.parent / "other.duckdb"))
            await until(pilot, lambda: app.live.db_path == db.parent / "other.duckdb")
            await pilot.pause()
            assert not results.results and not results.selected and not results.chosen()

    asyncio.run(run())


def test_results_follow_a_file_another_process_indexed(db: Path, embedder: Embedder) -> None:
    """A trial saved a note while `oboyu index --watch` ran: the open app showed the old text until
    its next key."""

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            await type_query(pilot, "カレーの作り方")
            await until(pilot, lambda: "飴色" in preview_text(app))
            notes = db.parent / "notes"
            curry = next(notes.rglob("curry.txt"))
            curry.write_text(curry.read_text(encoding="utf-8").replace("飴色", "きつね色"), encoding="utf-8")
            with Store(db) as store:  # as another process's run writes it
                Indexer(store, embedder).index([notes])
            await until(pilot, lambda: "きつね色" in preview_text(app))

    asyncio.run(run())
