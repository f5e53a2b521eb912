"""The search screen's parts: the results list, the preview of a passage in its file, the status bar."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Group
from rich.style import Style
from rich.styled import Styled
from rich.table import Table
from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from oboyu.search.query import Result
from oboyu.text import visible, visible_pieces

MATCH = Style(bold=True, color="black", bgcolor="yellow")  # readable on light and dark themes
PREVIEW_CONTEXT_LINES = 200  # lines of the file shown around the passage


def display_path(path: str | Path) -> str:
    """A path with the home folder written as ~, control characters made visible."""
    text, home = str(path), os.path.expanduser("~")
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        text = "~" + text[len(home) :]
    return visible(text)


def highlighted(text: str, spans: list[tuple[int, int]], style: Style | str = "") -> Text:
    """Text from a file with its matches marked, control characters made visible (piece by
    piece, since a visible form may be longer than the character it stands for)."""
    out = Text(style=style, no_wrap=True, overflow="ellipsis")
    for piece, matched in visible_pieces(text, spans):
        out.append(piece, style=MATCH if matched else "")
    return out


def result_prompt(result: Result) -> Group:
    """Three lines: file name, folder and score; heading path; snippet with the matches marked."""
    path = Path(result.path)
    first = Table.grid(expand=True, padding=(0, 0, 0, 1))
    first.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    first.add_column(justify="right", no_wrap=True)
    name = Text(visible(path.name), style="bold", no_wrap=True, overflow="ellipsis")
    name.append(f"  {display_path(path.parent)}", style="dim")
    if result.copies:  # the same file elsewhere, folded into this result
        name.append(f"  +{len(result.copies)} {'copy' if len(result.copies) == 1 else 'copies'}", style="dim")
    score = f"{result.score:.3f}"
    if result.other_matches:
        score = f"+{result.other_matches}  {score}"
    first.add_row(name, Text(score, style="dim"))
    heading = Text(visible(result.heading or result.title or ""), style="italic", no_wrap=True, overflow="ellipsis")
    where = result.part if result.page_start is not None \
        else f"L{result.start_line}–{result.end_line}"
    heading.append(f"  {where}", style="dim")
    return Group(first, heading, highlighted(result.snippet, result.matches))


class ResultList(OptionList):
    """The ranked files (or passages); highlighting one shows it in the preview. Weak matches
    (under the confidence line) come after the others, dimmed, under a divider that cannot be
    highlighted, which says "no good match" when they are all there is."""

    results: list[Result] = []

    def show(self, results: list[Result]) -> None:
        strong = [r for r in results if not r.weak]
        weak = [r for r in results if r.weak]
        self.results = strong + weak
        options = [Option(result_prompt(r), id=r.chunk_id) for r in strong]
        if weak:
            label = "weak matches" if strong else "no good match · the closest, weak"
            options.append(Option(Text(f"── {label} ──", style="dim italic"), disabled=True))
            options += [Option(Styled(result_prompt(r), "dim"), id=r.chunk_id) for r in weak]
        self.set_options(options)
        if results:
            self.highlighted = 0 if strong else 1

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


def preview_text(lines: list[str], first: int, last: int, spans: dict[int, list[tuple[int, int]]],
                 context: int = PREVIEW_CONTEXT_LINES) -> tuple[Text, int]:
    """Numbered lines around the passage (lines first..last, 1-based) with the passage marked in
    the gutter and matches highlighted; returns the text and the row of the passage's first line."""
    lo, hi = max(1, first - context), min(len(lines), last + context)
    width = len(str(hi))
    out = Text(no_wrap=True, overflow="crop", end="")
    for number in range(lo, hi + 1):
        inside = first <= number <= last
        out.append(f"{number:>{width}} ", style="bold" if inside else "dim")
        out.append("▌ " if inside else "  ", style="yellow" if inside else "")
        line = highlighted(lines[number - 1], spans.get(number, []))
        out.append_text(line)
        if number < hi:
            out.append("\n")
    return out, first - lo


class Preview(VerticalScroll, can_focus=True):
    """The passage in the context of its file, scrolled to it."""

    def compose(self):
        yield Static(id="preview-text")

    def show(self, text: Text, row: int, title: str) -> None:
        self.border_title = Text(visible(title))  # a Text: a file name is never read as markup
        self.query_one("#preview-text", Static).update(text)
        self.call_after_refresh(self.scroll_to, y=max(0, row - 2), animate=False)

    def clear(self, message: str = "") -> None:
        self.border_title = ""
        self.query_one("#preview-text", Static).update(Text(message, style="dim"))


class QueryInput(Input):
    """The search box. A pasted paragraph becomes one line, its lines joined by spaces (a plain
    Input keeps only the first line, without a word)."""

    def _on_paste(self, event: events.Paste) -> None:
        text = " ".join(event.text.split())
        if text:
            if self.selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *self.selection)
        event.prevent_default()  # Input's own handler, which keeps the first line, does not run
        event.stop()
