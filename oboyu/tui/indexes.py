"""The indexes screen: the indexed folders with their counts, and the folder picker that adds one.
The app binds what the screen shows; the screen asks it for runs by messages."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, DirectoryTree, Footer, Input, Label, ProgressBar, Static

from oboyu.index.reports import IndexProgress
from oboyu.search.live import IndexSummary
from oboyu.text import visible
from oboyu.tui.messages import IndexRequested, ReindexRequested, RemoveRequested, StopRequested
from oboyu.tui.screens import ConfirmScreen
from oboyu.tui.widgets import display_path

DESCRIPTION_WIDTH = 60  # cells of a folder's description shown; `oboyu status` shows a longer one whole


class IndexScreen(Screen):
    """The indexed folders with their counts; add, remove and reindex them in the background. The
    app binds what it shows (`data_bind`) and is asked for the rest by messages."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("a", "add", "Add folder"),
        Binding("d", "remove", "Remove"),
        Binding("r", "reindex", "Reindex"),
        Binding("R", "reindex_all", "Reindex all"),
        Binding("s", "stop", "Stop"),
    ]

    summary: var[IndexSummary] = var(lambda: IndexSummary(None, 0, 0), init=False)
    db_path = var(Path(), init=False)
    indexing = var(False, init=False)
    progress: var[IndexProgress | None] = var(None, init=False)
    note = var("", init=False)  # under the table while no run is in progress: how the last one ended

    def compose(self) -> ComposeResult:
        yield Label("", id="index-title")
        yield DataTable(id="roots", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="progress-row"):
            yield ProgressBar(id="progress", show_eta=False)
            yield Static("", id="progress-text")
        yield Footer()

    def watch_summary(self) -> None:
        self.show_roots()

    def watch_db_path(self) -> None:
        self.show_roots()

    def watch_indexing(self) -> None:
        self.show_progress()

    def watch_progress(self) -> None:
        self.show_progress()

    def watch_note(self) -> None:
        self.show_progress()

    def show_roots(self) -> None:
        summary = self.summary
        self.query_one("#index-title", Label).update(
            Text(f"{display_path(self.db_path)} · {summary.documents:,} documents · {summary.chunks:,} chunks")
        )
        table = self.query_one("#roots", DataTable)
        table.clear(columns=True)
        # widths set here, from the rows, so the table never draws before it has measured them
        folders = [display_path(r.path) for r in summary.roots]
        table.add_column("Folder", width=max([cell_len(f) for f in folders] + [6]))
        table.add_column("Documents", width=9)
        table.add_column("Chunks", width=9)
        table.add_column("Last changed", width=16)
        described = [visible(r.description or "") for r in summary.roots]
        if any(described):  # a column only when a folder has a description (`oboyu describe`)
            table.add_column("Description", width=min(max(cell_len(d) for d in described), DESCRIPTION_WIDTH))
        for folder, description, r in zip(folders, described, summary.roots):
            when = r.last_update.strftime("%Y-%m-%d %H:%M") if isinstance(r.last_update, datetime) else "—"
            cells = [Text(folder), f"{r.documents:,}", f"{r.chunks:,}", when, *([Text(description)] if any(described) else [])]
            table.add_row(*cells, key=r.path)  # Text: never markup

    def show_progress(self) -> None:
        bar = self.query_one("#progress", ProgressBar)
        text = self.query_one("#progress-text", Static)
        progress = self.progress
        bar.display = progress is not None  # an idle bar would animate
        if progress is None:
            text.update(Text(visible(self.note)) if self.note else
                        ("indexing…" if self.indexing else "a: add a folder · r: reindex · d: remove"))
            return
        bar.update(total=1000, progress=round(1000 * progress.share))
        text.update(progress.line())

    def selected_root(self) -> str | None:
        table = self.query_one("#roots", DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def action_add(self) -> None:
        def chosen(path: Path | None) -> None:
            if path is not None:
                self.post_message(IndexRequested([path]))

        self.app.push_screen(FolderPicker(Path.home()), chosen)

    def action_remove(self) -> None:
        root = self.selected_root()
        if root is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.post_message(RemoveRequested(root))

        self.app.push_screen(ConfirmScreen(f"Remove {display_path(root)} and all its rows from the index?"), confirmed)

    def action_reindex(self) -> None:
        root = self.selected_root()
        if root is not None:
            self.post_message(ReindexRequested([root]))

    def action_reindex_all(self) -> None:
        self.post_message(ReindexRequested())

    def action_stop(self) -> None:
        self.post_message(StopRequested())


class VisibleDirectoryTree(DirectoryTree):
    """Folders as a file manager shows them: hidden entries (.bashrc, .cargo) left out."""

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [path for path in paths if not path.name.startswith(".")]


class FolderPicker(ModalScreen[Path | None]):
    """Choose a folder: browse the tree (Enter opens, a click picks) or type its path."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, start: Path):
        super().__init__()
        self.start = start

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="picker"):
            yield Label("Add a folder to the index", classes="title")
            yield Input(str(self.start), id="folder")
            yield VisibleDirectoryTree(self.start, id="tree")
            yield Label("", id="error")
            with Horizontal(classes="buttons"):
                yield Button("Add", variant="primary", id="add")
                yield Button("Cancel", id="cancel")

    def on_directory_tree_directory_selected(self, event: DirectoryTree.DirectorySelected) -> None:
        self.query_one("#folder", Input).value = str(event.path)

    def on_input_submitted(self) -> None:
        self.choose()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "add":
            self.choose()
        else:
            self.dismiss(None)

    def choose(self) -> None:
        path = Path(os.path.expanduser(self.query_one("#folder", Input).value.strip()))
        if not path.is_dir():
            self.query_one("#error", Label).update(Text(visible(f"not a folder: {path}")))
            return
        self.dismiss(path.resolve())

    def action_cancel(self) -> None:
        self.dismiss(None)
