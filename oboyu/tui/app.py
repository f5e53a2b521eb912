"""The interactive app: a search box, results that follow the typing, a preview of the passage in
its file, and the indexes screen; what it remembers of an index between runs is in memory.py. The app holds the state in reactive attributes, bound down to the
status bar and the indexes screen, and handles the messages its screens and workers send up; its
index (model, summary, indexing runs) is IndexingApp's, in indexing.py. Everything slow (the model,
searches, previews, indexing) runs in threads; the UI thread only draws."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from textual import events
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Container
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList

from oboyu.cli.serving import QueryServer
from oboyu.config import settings
from oboyu.errors import OboyuError
from oboyu.index.failures import explained
from oboyu.models.embedding import Embedder
from oboyu.models.rerank import Reranker
from oboyu.modes import MODE_NAMES, Mode
from oboyu.search.filters import Filters
from oboyu.search.live import Answer, IndexSummary
from oboyu.search.query import has_words
from oboyu.text import visible
from oboyu.tui.indexes import IndexScreen
from oboyu.tui.indexing import IndexingApp
from oboyu.tui.memory import AppMemory, Opened
from oboyu.tui.messages import AnswerReady, FiltersChosen, LibraryLog, LibraryMessage, ReindexRequested, StopRequested, TypedOn
from oboyu.tui.opening import ToOpen, open_files
from oboyu.tui.screens import FilterScreen, HelpScreen, PromptScreen, RecentScreen
from oboyu.tui.searching import SearchLoop, SearchRequest
from oboyu.tui.status import StatusBar
from oboyu.tui.widgets import Preview, QueryInput, ResultList, display_path

FOLLOW_SECONDS = 1.0  # how often the app looks whether another process wrote the index
WIDE_COLUMNS = 110  # from this width the preview sits beside the results, else below them


class OboyuApp(IndexingApp):
    CSS_PATH = "oboyu.tcss"
    TITLE = "oboyu"
    BINDINGS = [
        Binding("ctrl+t", "cycle_mode", "Mode"),
        Binding("ctrl+f", "filters", "Filters"),
        Binding("ctrl+o", "indexes", "Indexes"),
        Binding("f1", "help", "Help"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("question_mark", "help", "Help", show=False),
        Binding("down", "move(1)", "Next", show=False),
        Binding("up", "move(-1)", "Previous", show=False),
        Binding("pagedown", "move(5)", show=False),
        Binding("pageup", "move(-5)", show=False),
        Binding("escape", "focus_query", "Search", show=False),
        Binding("ctrl+up", "history(-1)", "Earlier search", show=False),
        Binding("ctrl+down", "history(1)", "Later search", show=False),
        Binding("ctrl+r", "recent", "Recent", show=False),
        Binding("space", "select", "Select", show=False),
        Binding("e", "edit", "Open"),
        Binding("y", "copy_path", "Copy path"),
    ]

    # the search's state (the index's is IndexingApp's): watchers react to it, the status bar is bound to it
    mode = var(Mode.HYBRID, init=False)
    filters: var[Filters] = var(Filters, init=False, always_update=True)
    answer: var[Answer | None] = var(None, init=False, always_update=True)  # what the list shows
    stale = var(False, init=False)  # the index is being written elsewhere: the answer is its last loaded state
    preparing = var(False, init=False)  # its search arrays are being made: answers are slower meanwhile

    def __init__(self, db_path: Path, embedder: Embedder | None = None, mode: Mode = Mode.HYBRID,
                 reranker: Reranker | None = None):
        super().__init__(db_path, embedder, reranker)
        self.set_reactive(OboyuApp.mode, mode)
        self.filter_texts: dict[str, str] = {}  # what the filters were read from
        self._summary_generation: str | None = None  # the index generation the summary was read at
        self._searches = SearchLoop(self.live, self.model_ready, self._deliver_from_thread)
        self.shown: SearchRequest | None = None  # the request whose answer the list shows
        self.shown_at = 0.0  # perf_counter() when it was shown (keystroke latency benchmarks)
        self.last_search_seconds = 0.0
        self.memory = AppMemory(db_path)
        self._history_at: int | None = None  # the history entry the box shows, while it is unchanged
        self.typed = ""  # what the search box holds
        self.queries_served = QueryServer(self.live)  # started on mount
        self._seen_signature: tuple = ()  # the index file's, when the app last looked (follow_index)
        self.library_log = LibraryLog(self)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Notifications carry file names and error messages: never read as markup, control
        characters made visible."""
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=markup)

    def on_library_message(self, message: LibraryMessage) -> None:
        self.notify(message.text, timeout=10)

    def action_help_quit(self) -> None:
        """Textual's answer to Ctrl+C, in plain words: its own is markup, which notify() shows as
        typed ("Press [b]ctrl+q[/b] to quit the app")."""
        self.notify("Ctrl+Q quits the app", title="Do you want to quit?")

    # --- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield QueryInput(placeholder="Search your documents (日本語 / English)…", id="query")
        with Container(id="body"):
            yield ResultList(id="results")
            yield Preview(id="preview")
        yield StatusBar(id="status").data_bind(
            OboyuApp.summary, OboyuApp.mode, OboyuApp.filters, OboyuApp.stale, OboyuApp.preparing, OboyuApp.indexing,
            OboyuApp.model, OboyuApp.db_path, progress=OboyuApp.index_progress,
        )
        yield Footer()

    def on_mount(self) -> None:
        logging.getLogger("oboyu").addHandler(self.library_log)
        self.query_one(ResultList).border_title = "Results"
        self.query_one(Preview).clear("Type to search.")
        self.query_one("#query", Input).focus()
        self.query_one("#body").set_class(self.size.width < WIDE_COLUMNS, "narrow")
        # a daemon thread: it must not hold the app's exit
        threading.Thread(target=self._searches.run, name="oboyu-search", daemon=True).start()
        if not self.model_ready.is_set():
            self.load_model()
        self.refresh_summary()
        self.serve_queries()
        if settings().restore_last_search:
            self.restore_last_search()
        self._seen_signature = self.live.signature()
        self.set_interval(FOLLOW_SECONDS, self.follow_index)

    def follow_index(self) -> None:
        """Another process wrote the index (`oboyu index --watch` saw a file saved): the search
        shown is asked again, so that its results and preview follow the files (a trial saw the
        old text until its next key). The app's own runs say so themselves (`index_written`)."""
        signature = self.live.signature()
        if signature != self._seen_signature:
            self._seen_signature = signature
            if self.shown is not None and not self.indexing:
                self.search_now()

    def restore_last_search(self) -> None:
        remembered = self.memory.of_index
        if remembered.last_mode in MODE_NAMES:
            self.set_reactive(OboyuApp.mode, Mode(remembered.last_mode))
        if remembered.last_query:
            self.show_in_box(remembered.last_query)

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#body").set_class(event.size.width < WIDE_COLUMNS, "narrow")

    def on_unmount(self) -> None:
        logging.getLogger("oboyu").removeHandler(self.library_log)
        self._searches.stop()
        self._index_stop.set()
        self.remember_last_search()
        self.queries_served.close()

    def serve_queries(self) -> None:
        """`oboyu query` on this index is answered here while the app is open (cli/serving.py),
        unless `oboyu serve` answers for it already."""
        self.queries_served.close()
        self.queries_served = QueryServer(self.live)
        self.queries_served.start()

    def remember_last_search(self) -> None:
        """The query in the box counts as a search made; it and the mode are kept for the next start."""
        remembered = self.memory.of_index
        remembered.last_query = self.typed.strip()
        remembered.last_mode = str(self.mode)
        remembered.remember_search(remembered.last_query)
        self.memory.save()

    # --- the index (the rest of its state and handling is IndexingApp's) -----------------------

    def watch_summary(self, summary: IndexSummary) -> None:
        if not summary.documents and not self.indexing:
            self.query_one(Preview).clear(
                # the instruction on a line of its own: the pane cuts a long line (a trial lost it at 120 columns)
                f"The index {display_path(self.live.db_path)} is empty.\nPress Ctrl+O, then a, to add a folder."
            )

    def watch_db_path(self, path: Path) -> None:
        if self.memory.key != str(path.expanduser().resolve()):
            self.remember_last_search()
            self.memory = AppMemory(path)
        super().watch_db_path(path)
        self._searches.live = self.live
        self.serve_queries()
        self.shown = None
        # the other index's results and selection go (a trial switched to an empty index and still
        # saw them, and `y` copied them)
        self.query_one(ResultList).clear_selection()
        self.answer = None
        self.search_now()

    def index_written(self) -> None:
        super().index_written()
        self.search_now()

    # --- searching ---------------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "query":
            self.typed = event.value  # kept here: at unmount the box has gone before the app
            history = self.memory.of_index.history
            if self._history_at is not None and event.value != history[self._history_at]:
                self._history_at = None  # edited: the box no longer shows the entry
            self.search_now()

    def watch_mode(self) -> None:
        self.search_now()

    def watch_filters(self) -> None:
        self.search_now()

    def search_now(self) -> None:
        query = self.query_one("#query", Input).value
        if not has_words(query):  # nothing yet to search for (「 typed first): no error while typing
            self.shown = None
            self.answer = None
            return
        self._searches.request(query, self.mode, self.filters)

    def _deliver_from_thread(self, request: SearchRequest, outcome: Answer | Exception, seconds: float) -> None:
        try:
            self.post_message(AnswerReady(request, outcome, seconds))
        except RuntimeError:  # the app has closed
            pass

    def on_answer_ready(self, message: AnswerReady) -> None:
        request, outcome = message.request, message.outcome
        if self.shown is not None and request.serial <= self.shown.serial:
            return  # an answer to an older query never replaces a newer one
        box = next(self.query("#query").results(Input), None)
        if box is None or not box.value.strip():
            return  # the app is closing, or the box was cleared meanwhile
        if isinstance(outcome, Exception):
            said = outcome if isinstance(outcome, OboyuError) else explained(outcome, self.live.db_path)
            self.notify(str(said) if said else f"search failed: {outcome!r}", severity="error")
            return
        self.shown, self.shown_at, self.last_search_seconds = request, time.perf_counter(), message.seconds
        if self.live.resident.generation != self._summary_generation:  # written meanwhile, perhaps elsewhere
            self._summary_generation = self.live.resident.generation
            self.refresh_summary()
        self.answer = outcome

    def watch_answer(self, answer: Answer | None) -> None:
        results, preview = self.query_one(ResultList), self.query_one(Preview)
        results.show_answer(answer)
        if answer is None:
            preview.clear("Type to search.")
            return
        self.stale, self.preparing = answer.stale, answer.preparing
        if not answer.results:  # say why, as `oboyu query` does (a user trial's filter `notes/*` matched nothing, unsaid)
            if self.shown is not None and not self.shown.filters.is_empty():
                holds = " and holds these words" if self.shown.mode is Mode.KEYWORD else ""
                preview.clear(f"No indexed file passes the filters{holds} (Ctrl+F changes them; a path is matched "
                              "inside its indexed folder: `*.md`, `drafts/`).")
            elif self.shown is not None and self.shown.mode is Mode.KEYWORD:
                preview.clear("No passage holds these words (keyword mode; Ctrl+T changes the mode).")
            else:
                preview.clear("No results.")

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        result = self.query_one(ResultList).current
        if result is not None and self.shown is not None:
            self.query_one(Preview).load(result, self.shown.query)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.query_one(Preview).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "query":
            self.remember_search()
            if self.query_one(ResultList).current is not None:
                self.query_one(Preview).focus()

    # --- what is remembered: history and recent documents ---------------------------------------

    def remember_search(self) -> None:
        """The query in the box was used (submitted, or its results opened or copied)."""
        if self.memory.of_index.remember_search(self.query_one("#query", Input).value):
            self._history_at = None
            self.memory.save()

    def show_in_box(self, query: str) -> None:
        box = self.query_one("#query", Input)
        box.value = query
        box.cursor_position = len(query)

    def action_history(self, step: int) -> None:
        """Ctrl+↑ an earlier search, Ctrl+↓ a later one (past the newest: an empty box); ↑ in an
        empty box too."""
        history = self.memory.of_index.history
        if not history:
            self.notify("no searches remembered for this index yet", timeout=2)
            return
        at = len(history) if self._history_at is None else self._history_at
        at = max(0, min(len(history), at + step))
        query = history[at] if at < len(history) else ""
        self._history_at = at if at < len(history) else None
        self.show_in_box(query)
        self.query_one("#query", Input).focus()

    def action_clear_history(self) -> None:
        self.memory.of_index.history.clear()
        self._history_at = None
        self.memory.save()
        self.notify("search history cleared for this index", timeout=2)

    def action_recent(self) -> None:
        self.push_screen(RecentScreen(self.memory.of_index.recent), self.open_recent)

    def open_recent(self, opened: Opened | None) -> None:
        if opened is not None:
            self.open_and_remember([ToOpen(opened.path, opened.line, opened.file_type)])

    def open_and_remember(self, files: list[ToOpen]) -> None:
        for done in reversed(open_files(self, files)):  # the first chosen ends up the newest
            self.memory.of_index.remember_opened(done.path, done.line, done.file_type)
        self.memory.save()

    # --- actions and the palette -------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        on_search_screen = not self.screen_stack or len(self.screen_stack) == 1
        if action in ("edit", "copy_path", "move", "focus_query", "cycle_mode", "filters", "help", "history",
                      "recent", "select") and not on_search_screen:
            return False
        if action in ("edit", "copy_path", "select") and not self.query_one(ResultList).chosen():
            return None  # shown, greyed out
        return True

    def action_move(self, delta: int) -> None:
        box = self.query_one("#query", Input)
        if delta == -1 and self.focused is box and not box.value:
            self.action_history(-1)
            return
        self.query_one(ResultList).step(delta)

    def action_focus_query(self) -> None:
        self.query_one("#query", Input).focus()

    def on_typed_on(self, message: TypedOn) -> None:
        """A character typed in the list or the preview (`widgets.typed_on`): on the end of the
        query, the box focused without selecting the query for the next key to replace."""
        box = self.query_one("#query", Input)
        box.action_end()
        box.insert_text_at_cursor(message.character)
        if self.focused is not box:
            box.select_on_focus = False
            self.screen.set_focus(box)
            box.call_later(setattr, box, "select_on_focus", True)  # after the focus event, queued before it

    def action_cycle_mode(self) -> None:
        modes = list(Mode)
        mode = modes[(modes.index(self.mode) + 1) % len(modes)]
        self.notify(f"mode: {mode}", timeout=1.5)
        self.mode = mode

    def action_filters(self) -> None:
        self.push_screen(FilterScreen(self.filter_texts))

    def on_filters_chosen(self, message: FiltersChosen) -> None:
        self.filter_texts = message.texts
        self.filters = message.filters

    def action_indexes(self) -> None:
        if not isinstance(self.screen, IndexScreen):
            self.index_note = ""  # a note is for the screen it was written on
            self.push_screen(IndexScreen().data_bind(OboyuApp.summary, OboyuApp.db_path, OboyuApp.indexing,
                                                     progress=OboyuApp.index_progress, note=OboyuApp.index_note))
            self.refresh_summary()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_select(self) -> None:
        self.query_one(ResultList).toggle_selected()

    def action_clear_selection(self) -> None:
        self.query_one(ResultList).clear_selection()

    def action_copy_path(self) -> None:
        """The highlighted result's path, or the selected results' paths, one a line."""
        paths = list(dict.fromkeys(r.path for r in self.query_one(ResultList).chosen()))
        if paths:
            self.remember_search()
            self.copy_to_clipboard("\n".join(paths))
            what = display_path(paths[0]) if len(paths) == 1 else f"{len(paths)} paths"
            # through the terminal (OSC 52), which cannot say whether it took it: tmux, for one, takes it only
            # with `set-clipboard on` (a user trial saw "copied" and an empty clipboard)
            self.notify(f"sent {what} to the terminal's clipboard (if it allows apps to set it)", timeout=3)

    def action_edit(self) -> None:
        """The highlighted result, or the selected ones, opened (text in the editor, all at once)."""
        chosen = self.query_one(ResultList).chosen()
        if chosen:
            self.remember_search()
            self.open_and_remember([ToOpen.of(r) for r in chosen])

    def action_switch_index(self) -> None:
        self.push_screen(PromptScreen("Index file to search", str(self.live.db_path)), self.switch_index)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Reindex all", "Update every indexed folder", partial(self.post_message, ReindexRequested()))
        yield SystemCommand("Indexes", "Indexed folders: add, remove, reindex", self.action_indexes)
        yield SystemCommand("Switch index", "Search another index file", self.action_switch_index)
        yield SystemCommand("Filters", "Restrict by path, type or date", self.action_filters)
        yield SystemCommand("Cycle mode", " → ".join(Mode), self.action_cycle_mode)
        yield SystemCommand("Recent documents", "Documents opened from the app on this index", self.action_recent)
        yield SystemCommand("Clear search history", "Forget this index's searches (↑, Ctrl+↑/↓)",
                            self.action_clear_history)
        yield SystemCommand("Clear selection", "Unselect the results chosen with space", self.action_clear_selection)
        yield SystemCommand("Stop indexing", "Stop the run in progress after its batch",
                            partial(self.post_message, StopRequested()))
