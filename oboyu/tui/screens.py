"""Screens over the search screen: help, filters, a folder picker, a prompt, and the indexes."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, DirectoryTree, Footer, Input, Label, Markdown, ProgressBar, Static

from oboyu.errors import OboyuError
from oboyu.index.reports import IndexProgress
from oboyu.search.filters import Filters, make_filters
from oboyu.search.live import IndexSummary
from oboyu.text import visible
from oboyu.tui.widgets import display_path

if TYPE_CHECKING:
    from oboyu.tui.app import OboyuApp


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        text = resources.files("oboyu.tui").joinpath("help.md").read_text(encoding="utf-8")
        with Vertical(id="dialog", classes="help"):
            yield Markdown(text)
            yield Footer()


class FilterScreen(ModalScreen[Filters | None]):
    """Path patterns, file types and a modification-time range; applied before ranking."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: Filters, texts: dict[str, str]):
        super().__init__()
        self.current, self.texts = current, texts

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Filters", classes="title")
            yield Label("Paths (as in .gitignore, space-separated; ! leaves out)")
            yield Input(self.texts.get("paths", ""), placeholder="*.md  notes/*  !drafts/*", id="paths")
            yield Label("Types")
            yield Input(self.texts.get("types", ""), placeholder="md,txt", id="types")
            yield Label("Modified since / until (2026-01-31, or an age like 7d)")
            with Horizontal(classes="row"):
                yield Input(self.texts.get("since", ""), placeholder="since", id="since")
                yield Input(self.texts.get("until", ""), placeholder="until", id="until")
            yield Label("", id="error")
            with Horizontal(classes="buttons"):
                yield Button("Apply", variant="primary", id="apply")
                yield Button("Clear", id="clear")
                yield Button("Cancel", id="cancel")

    def values(self) -> dict[str, str]:
        return {name: self.query_one(f"#{name}", Input).value.strip() for name in ("paths", "types", "since", "until")}

    def on_input_submitted(self) -> None:
        self.apply()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self.apply()
        elif event.button.id == "clear":
            self.texts.clear()
            self.dismiss(Filters())
        else:
            self.dismiss(None)

    def apply(self) -> None:
        values = self.values()
        try:
            filters = make_filters(values["paths"].split(), values["types"] or None,
                                   values["since"] or None, values["until"] or None)
        except OboyuError as exc:
            self.query_one("#error", Label).update(Text(visible(str(exc))))
            return
        self.texts.clear()
        self.texts.update(values)
        self.dismiss(filters)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PromptScreen(ModalScreen[str | None]):
    """One line of text, e.g. the path of another index file."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, value: str = "", placeholder: str = ""):
        super().__init__()
        self.title_text, self.value, self.placeholder = title, value, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, classes="title")
            yield Input(self.value, placeholder=self.placeholder)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


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


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("escape,n", "answer(False)", "No"), Binding("y", "answer(True)", "Yes")]

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(visible(self.question)))
            with Horizontal(classes="buttons"):
                yield Button("Yes", variant="error", id="yes")
                yield Button("No", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class IndexScreen(Screen):
    """The indexed folders with their counts; add, remove and reindex them in the background."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("a", "add", "Add folder"),
        Binding("d", "remove", "Remove"),
        Binding("r", "reindex", "Reindex"),
        Binding("R", "reindex_all", "Reindex all"),
        Binding("s", "stop", "Stop"),
    ]

    @property
    def oboyu(self) -> OboyuApp:
        return cast("OboyuApp", self.app)

    def compose(self) -> ComposeResult:
        yield Label("", id="index-title")
        yield DataTable(id="roots", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="progress-row"):
            yield ProgressBar(id="progress", show_eta=False)
            yield Static("", id="progress-text")
        yield Footer()

    def on_mount(self) -> None:
        self.show_roots(self.oboyu.summary)  # as last read; the app reads it again and calls back
        self.oboyu.refresh_summary()
        self.show_progress(self.oboyu.index_progress)

    def show_roots(self, summary: IndexSummary) -> None:
        self.query_one("#index-title", Label).update(
            Text(f"{display_path(self.oboyu.live.db_path)} · {summary.documents:,} documents · {summary.chunks:,} chunks")
        )
        table = self.query_one("#roots", DataTable)
        table.clear(columns=True)
        # widths set here, from the rows, so the table never draws before it has measured them
        folders = [display_path(r.path) for r in summary.roots]
        table.add_column("Folder", width=max([cell_len(f) for f in folders] + [6]))
        table.add_column("Documents", width=9)
        table.add_column("Chunks", width=9)
        table.add_column("Last update", width=16)
        for folder, r in zip(folders, summary.roots):
            when = r.last_update.strftime("%Y-%m-%d %H:%M") if isinstance(r.last_update, datetime) else "—"
            table.add_row(Text(folder), f"{r.documents:,}", f"{r.chunks:,}", when, key=r.path)  # Text: never markup

    def show_progress(self, progress: IndexProgress | None, message: str = "") -> None:
        bar = self.query_one("#progress", ProgressBar)
        text = self.query_one("#progress-text", Static)
        bar.display = progress is not None  # an idle bar would animate
        if progress is None:
            text.update(Text(visible(message)) if message else
                        ("indexing…" if self.oboyu.indexing else "a: add a folder · r: reindex · d: remove"))
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
                self.oboyu.start_indexing([path])

        self.oboyu.push_screen(FolderPicker(Path.home()), chosen)

    def action_remove(self) -> None:
        root = self.selected_root()
        if root is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.oboyu.remove_root(root)

        self.oboyu.push_screen(ConfirmScreen(f"Remove {display_path(root)} and all its rows from the index?"), confirmed)

    def action_reindex(self) -> None:
        root = self.selected_root()
        if root is not None:
            self.oboyu.start_indexing([Path(root)])

    def action_reindex_all(self) -> None:
        self.oboyu.reindex_all()

    def action_stop(self) -> None:
        self.oboyu.stop_indexing()
