"""The search screen's parts: the search box, the results list and the preview (what it shows is
made in preview.py; the status bar is in status.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from rich.console import Group
from rich.styled import Styled
from rich.table import Table
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from oboyu.search.languages import ACROSS_LANGUAGES_SHORT
from oboyu.search.live import Answer
from oboyu.search.query import MAX_QUERY_CHARS, UNLIKELY, Result, unlikely_from
from oboyu.text import visible, visible_name
from oboyu.tui.messages import TypedOn
from oboyu.tui.preview import highlighted, read_preview


def display_path(path: str | Path) -> str:
    """A path with the home folder written as ~, control characters made visible."""
    text, home = str(path), os.path.expanduser("~")
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        text = "~" + text[len(home) :]
    return visible(text)


MARK = "● "  # before the name of a selected result


def result_prompt(result: Result, selected: bool = False) -> Group:
    """Three lines: file name, folder and score; heading path; snippet with the matches marked."""
    path = Path(result.path)
    first = Table.grid(expand=True, padding=(0, 0, 0, 1))
    first.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    first.add_column(justify="right", no_wrap=True)
    name = Text(visible_name(path.name), style="bold", no_wrap=True, overflow="ellipsis")
    if selected:
        name = Text.assemble((MARK, "green"), name, no_wrap=True, overflow="ellipsis")
    name.append(f"  {display_path(path.parent)}", style="dim")
    if result.copies:  # the same file elsewhere, folded into this result
        name.append(f"  +{len(result.copies)} {'copy' if len(result.copies) == 1 else 'copies'}", style="dim")
    score = result.readable_score
    if result.other_matches:
        score = f"+{result.other_matches}  {score}"
    first.add_row(name, Text(score, style="dim"))
    heading = Text(visible(result.heading or result.title or ""), style="italic", no_wrap=True, overflow="ellipsis")
    where = result.part if result.page_start is not None \
        else f"L{result.start_line}–{result.end_line}"
    heading.append(f"  {where}", style="dim")
    return Group(first, heading, highlighted(result.snippet, result.matches))


PREVIEW_ROWS_ABOVE = 2  # of the file, shown above the passage where the pane has room
LIST_KEYS = {"e", "y", " ", "?"}  # what a character does in the list and the preview (help.md)


def typed_on(widget: OptionList | VerticalScroll, event: events.Key) -> None:
    """A character that is no key of the list or the preview goes on the search (a user trial typed
    on after moving to a result, and the keys were lost). Sent up from the widget that had it, not
    judged by the app's focus: the keys of a burst (an IME's word) reach the list before the first
    moves the focus, and a trial's 替え玉 left 替."""
    typed = event.character if event.is_printable else None
    if typed and typed not in LIST_KEYS:
        widget.post_message(TypedOn(typed))
        event.stop()


class ResultList(OptionList):
    """The ranked files (or passages); highlighting one shows it in the preview. Beside a good
    match, the results under the good-match line after the last one over it (all of them when none
    is over it) are dimmed, under a divider that cannot be highlighted ("less likely"). Weak
    matches (under the confidence line) come after the others, dimmed, under a divider that says
    "no good match" when they are all there is. Space selects results (kept across searches, for
    opening or copying them together), marked with a dot."""

    results: list[Result] = []
    answer: Answer | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.selected: dict[str, Result] = {}  # chunk id -> result, in the order chosen
        self.unlikely: set[str] = set()  # chunk ids shown under the good-match line beside a good match

    def on_key(self, event: events.Key) -> None:
        typed_on(self, event)

    def prompt(self, result: Result) -> Group | Styled:
        prompt = result_prompt(result, result.chunk_id in self.selected)
        return Styled(prompt, "dim") if result.weak or result.chunk_id in self.unlikely else prompt

    def show(self, results: list[Result]) -> None:
        strong = [r for r in results if not r.weak]
        weak = [r for r in results if r.weak]
        self.results = strong + weak
        tail = unlikely_from(strong)  # beside a good match, those under its line: shown, dimmed, set apart
        self.unlikely = {r.chunk_id for r in strong[tail:]}
        options = [Option(self.prompt(r), id=r.chunk_id) for r in strong[:tail]]
        if self.unlikely:
            options.append(Option(Text(f"── {UNLIKELY} ──", style="dim italic"), disabled=True))
        options += [Option(self.prompt(r), id=r.chunk_id) for r in strong[tail:]]
        if weak:
            label = "weak matches" if strong else "no good match · the closest, weak"
            options.append(Option(Text(f"── {label} ──", style="dim italic"), disabled=True))
            options += [Option(self.prompt(r), id=r.chunk_id) for r in weak]
        self.set_options(options)
        if results:  # the first result, not a divider
            self.highlighted = next(i for i, option in enumerate(options) if not option.disabled)

    def show_answer(self, answer: Answer | None) -> None:
        """The answer's results, their count in the border (weak ones apart), and the selection's."""
        self.answer = answer
        self.show(answer.results if answer else [])
        self.update_title()

    def update_title(self) -> None:
        title = "Results"
        if self.answer is not None:
            good = sum(not r.weak for r in self.answer.results)
            weak = len(self.answer.results) - good
            title += f" · {good}" + (f" (+{weak} weak)" if weak else "") \
                + (" · last loaded state" if self.answer.stale else "")
        if self.selected:
            title += f" · {len(self.selected)} selected"
        if self.answer is not None and any(r.across_languages for r in self.answer.results):
            title += f" · {ACROSS_LANGUAGES_SHORT}"  # last: a narrow border cuts it, not the counts
        self.border_title = title

    def toggle_selected(self) -> None:
        """Select the highlighted result, or leave it out of the selection."""
        result = self.current
        if result is None:
            return
        if self.selected.pop(result.chunk_id, None) is None:
            self.selected[result.chunk_id] = result
        self.replace_option_prompt(result.chunk_id, self.prompt(result))
        self.update_title()

    def clear_selection(self) -> None:
        shown = [r for r in self.results if r.chunk_id in self.selected]
        self.selected.clear()
        for result in shown:
            self.replace_option_prompt(result.chunk_id, self.prompt(result))
        self.update_title()

    def chosen(self) -> list[Result]:
        """What an action applies to: the selection, else the highlighted result."""
        if self.selected:
            return list(self.selected.values())
        return [self.current] if self.current is not None else []

    def step(self, delta: int) -> None:
        """Move the highlight by delta results, over the divider."""
        enabled = [i for i in range(self.option_count) if not self.get_option_at_index(i).disabled]
        if not enabled:
            return
        now = enabled.index(self.highlighted) if self.highlighted in enabled else -1
        self.highlighted = enabled[max(0, min(len(enabled) - 1, now + delta))]

    @property
    def current(self) -> Result | None:
        if self.highlighted is None or not 0 <= self.highlighted < self.option_count:
            return None
        chosen = self.get_option_at_index(self.highlighted).id
        return next((r for r in self.results if r.chunk_id == chosen), None)


class Preview(VerticalScroll, can_focus=True):
    """The passage in the context of its file, scrolled to it; the file is read in a worker thread."""

    wanted: str | None = None  # the chunk id of the result to show; a preview of another comes too late
    passage_row = 0  # the row of the text shown where the passage starts
    _message = ""  # what the pane says when it shows no result
    _loaded: tuple[Result, str, int] | None = None  # what was last asked for, and the width it was wrapped to

    def compose(self) -> ComposeResult:
        yield Static(id="preview-text")

    def on_key(self, event: events.Key) -> None:
        typed_on(self, event)

    def load(self, result: Result, query: str) -> None:
        """Show `result`, its matches of `query` marked, once its file is read."""
        self.wanted = result.chunk_id
        width = self._text_width()
        self._loaded = (result, query, width)
        self._read(result, query, width)

    def _text_width(self) -> int:
        """The cells a line has: the pane's, less room for the scrollbar a long preview shows."""
        return max(0, self.content_region.width - self.styles.scrollbar_size_vertical)

    def on_resize(self) -> None:
        # lines are wrapped to the pane: a wider or narrower one wraps them again
        if self._loaded is not None and self.wanted is not None and self._text_width() != self._loaded[2]:
            self.load(*self._loaded[:2])
        elif self._loaded is None and self._message:
            self._show_message()

    @work(thread=True, group="preview", exclusive=True, exit_on_error=False)
    def _read(self, result: Result, query: str, width: int) -> None:
        text, row = read_preview(result, query, width)
        self.app.call_from_thread(self._show_result, result, text, row)

    def _show_result(self, result: Result, text: Text, row: int) -> None:
        if result.chunk_id != self.wanted:
            return  # the highlight moved on meanwhile
        # a page, slide or row says where in the file; in a text file, its line does
        where = f" · {result.part}" if result.part else f":{result.start_line}"
        self.show(text, row, display_path(result.path) + where)

    def show(self, text: Text, row: int, title: str) -> None:
        self.border_title = Text(visible(title))  # a Text: a file name is never read as markup
        self.query_one("#preview-text", Static).update(text)
        self.passage_row = row
        self.call_after_refresh(self._scroll_to_passage, row)

    def _scroll_to_passage(self, row: int) -> None:
        """The passage's first row near the top, with up to PREVIEW_ROWS_ABOVE rows of context,
        fewer in a pane too short for them: at 60x20 the pane held two rows, and the passage on
        the third never showed (a user trial)."""
        above = min(PREVIEW_ROWS_ABOVE, max(0, (self.scrollable_content_region.height - 1) // 3))
        self.scroll_to(y=max(0, row - above), animate=False)

    def clear(self, message: str = "") -> None:
        self.wanted = self._loaded = None
        self.border_title = ""
        self._message = message
        self._show_message()

    def _show_message(self) -> None:
        """The message wrapped to the pane (whose text does not wrap: the preview comes wrapped):
        at 100 columns "No indexed file passes the filters" lost its hint on how paths match."""
        text, width = Text(self._message, style="dim"), self._text_width()
        if width > 0 and self.is_mounted:
            text = Text("\n").join(text.wrap(self.app.console, width))
        self.query_one("#preview-text", Static).update(text)

    # ↑ ↓ PgUp PgDn on a preview that all fits do nothing: Textual passes them on to the app,
    # whose same keys moved the selection and so changed the preview under the reader
    def _scroll_if_it_can(self, move: Callable[[], object]) -> None:
        if self.allow_vertical_scroll:
            move()

    def action_scroll_down(self) -> None:
        self._scroll_if_it_can(self.scroll_down)

    def action_scroll_up(self) -> None:
        self._scroll_if_it_can(self.scroll_up)

    def action_page_down(self) -> None:
        self._scroll_if_it_can(self.scroll_page_down)

    def action_page_up(self) -> None:
        self._scroll_if_it_can(self.scroll_page_up)


class QueryInput(Input):
    """The search box. A pasted paragraph becomes one line, its lines joined by spaces (a plain
    Input keeps only the first line, without a word), cut to the longest query searched (a paste
    of 300,000 characters crashed the app)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, max_length=MAX_QUERY_CHARS, **kwargs)

    def _on_paste(self, event: events.Paste) -> None:
        text = " ".join(event.text.split())
        room = MAX_QUERY_CHARS - len(self.value) + len(self.selected_text)
        if len(text) > room:
            text = text[: max(room, 0)]
            self.app.notify(f"the paste was cut: a query holds at most {MAX_QUERY_CHARS:,} characters", severity="warning")
        if text:
            if self.selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *self.selection)
        event.prevent_default()  # Input's own handler, which keeps the first line, does not run
        event.stop()
