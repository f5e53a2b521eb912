"""Dialogs over the search screen: help, filters, recent documents, a prompt for a line of text, a
yes-or-no question (the indexes screen is in indexes.py)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Markdown, OptionList
from textual.widgets.option_list import Option

from oboyu.errors import OboyuError
from oboyu.search.filters import Filters, make_filters
from oboyu.text import visible, visible_name
from oboyu.tui.memory import Opened
from oboyu.tui.messages import FiltersChosen
from oboyu.tui.widgets import display_path


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        text = resources.files("oboyu.tui").joinpath("help.md").read_text(encoding="utf-8")
        with Vertical(id="dialog", classes="help"):
            with VerticalScroll(id="help-text"):  # focused: ↑ ↓, PgUp PgDn, Home End scroll it
                yield Markdown(text)
            yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help-text").focus()


class FilterScreen(ModalScreen[None]):
    """Path patterns, file types and a modification-time range; applied before ranking. What is
    chosen goes to the app as FiltersChosen."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, texts: dict[str, str]):
        super().__init__()
        self.texts = texts  # what the current filters were read from

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="filters"):
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
            self.choose(Filters(), {})
        else:
            self.dismiss()

    def apply(self) -> None:
        values = self.values()
        try:
            filters = make_filters(values["paths"].split(), values["types"] or None,
                                   values["since"] or None, values["until"] or None)
        except OboyuError as exc:
            self.query_one("#error", Label).update(Text(visible(str(exc))))
            return
        self.choose(filters, values)

    def choose(self, filters: Filters, texts: dict[str, str]) -> None:
        # to the app itself, not bubbled: this screen closes before it would pass a message on
        self.app.post_message(FiltersChosen(filters, texts))
        self.dismiss()

    def action_cancel(self) -> None:
        self.dismiss()


class RecentScreen(ModalScreen[Opened | None]):
    """The documents opened from the app on this index, the newest first; Enter opens one again."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, recent: list[Opened]):
        super().__init__()
        self.recent = recent

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="recent"):
            yield Label("Recent documents", classes="title")
            if not self.recent:
                yield Label("Nothing opened from the app yet: e opens a result.")
            yield OptionList(*(Option(self.line(o), id=str(i)) for i, o in enumerate(self.recent)))
            yield Footer()

    @staticmethod
    def line(opened: Opened) -> Text:
        path = Path(opened.path)
        text = Text(visible_name(path.name), style="bold", no_wrap=True, overflow="ellipsis")
        text.append(f"  {display_path(path.parent)}", style="dim")
        text.append(f"  {opened.opened.replace('T', ' ')}", style="dim italic")
        return text

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.recent[int(event.option.id or 0)])

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

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # a stray Enter keeps the folder (a trial's removed it)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
