"""The interactive app: a search box, results that follow the typing, a preview of the passage in
its file, and the indexes screen. Everything slow (the model, searches, previews, indexing) runs
in threads; the UI thread only draws."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Container
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static

from oboyu.api import open_indexer
from oboyu.documents.filetypes import SOURCE_TYPES
from oboyu.documents.keywords import match_spans, words
from oboyu.documents.viewing import read_document
from oboyu.errors import OboyuError
from oboyu.index.lock import IndexLock
from oboyu.index.reports import IndexProgress, IndexStats, meaning_share
from oboyu.models.embedding import Embedder
from oboyu.models.loading import load_embedder
from oboyu.models.rerank import Reranker
from oboyu.search.filters import Filters
from oboyu.search.live import Answer, IndexSummary, LiveIndex
from oboyu.search.query import MODES, Result
from oboyu.text import visible
from oboyu.tui.screens import FilterScreen, HelpScreen, IndexScreen, PromptScreen
from oboyu.tui.searching import SearchLoop, SearchRequest
from oboyu.tui.widgets import Preview, QueryInput, ResultList, display_path, preview_text

PREVIEW_MAX_BYTES = 20 * 1024 * 1024
HIGHLIGHT_LINES = 40  # lines around the passage whose matches are marked in the preview
PROGRESS_INTERVAL = 0.2  # seconds between progress updates from the indexer
WIDE_COLUMNS = 110  # from this width the preview sits beside the results, else below them


class OboyuApp(App):
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
        Binding("e", "edit", "Open"),
        Binding("y", "copy_path", "Copy path"),
    ]

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Notifications carry file names and error messages: never read as markup, control
        characters made visible."""
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=markup)

    def __init__(self, db_path: Path, embedder: Embedder | None = None, mode: str = "hybrid",
                 reranker: Reranker | None = None):
        super().__init__()
        self.live = LiveIndex(db_path, embedder, reranker)
        self.model_ready = threading.Event()
        if embedder is not None:
            self.model_ready.set()
        self.mode = mode
        self.filters = Filters()
        self.filter_texts: dict[str, str] = {}
        self.summary = IndexSummary(None, 0, 0)
        self._summary_generation: str | None = None  # the index generation the summary was read at
        self.index_progress: IndexProgress | None = None
        self.indexing = False
        self.stale = False
        self._index_stop = threading.Event()
        self._searches = SearchLoop(self.live, self.model_ready, self._deliver_from_thread)
        self.shown: SearchRequest | None = None  # the request whose answer the list shows
        self.shown_at = 0.0  # perf_counter() when it was shown (keystroke latency benchmarks)
        self.last_search_seconds = 0.0

    # --- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield QueryInput(placeholder="Search your documents (日本語 / English)…", id="query")
        with Container(id="body"):
            yield ResultList(id="results")
            yield Preview(id="preview")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#results", ResultList).border_title = "Results"
        self.query_one("#preview", Preview).clear("Type to search.")
        self.query_one("#query", Input).focus()
        self._place_preview(self.size.width)
        # a daemon thread: it must not hold the app's exit
        threading.Thread(target=self._searches.run, name="oboyu-search", daemon=True).start()
        if not self.model_ready.is_set():
            self.load_model()
        self.refresh_summary()

    def on_resize(self, event) -> None:
        self._place_preview(event.size.width)

    def _place_preview(self, width: int) -> None:
        self.query_one("#body").set_class(width < WIDE_COLUMNS, "narrow")

    def on_unmount(self) -> None:
        self._searches.stop()
        self._index_stop.set()

    # --- background work ---------------------------------------------------------------------

    @work(thread=True, group="model", exit_on_error=False)
    def load_model(self) -> None:
        def report(step: str) -> None:
            self.call_from_thread(self.notify, step, title="Setting up the model (first use only)")

        def dropped(notice: str) -> None:  # an accelerator that failed its probe
            self.call_from_thread(self.notify, notice, severity="warning")

        try:
            # the model the index was built with (the default model for a new index)
            self.live.embedder = load_embedder(self.live.model_id(), on_build_step=report, notify=dropped).load()
        except Exception as exc:  # searches then say the model is missing; keyword mode still works
            self.call_from_thread(self.notify, f"cannot load the model: {exc}", severity="error")
        finally:
            self.model_ready.set()
        self.call_from_thread(self.update_status)

    @work(thread=True, group="summary", exclusive=True, exit_on_error=False)
    def refresh_summary(self) -> None:
        try:
            summary = self.live.summary()
        except OboyuError as exc:
            self.call_from_thread(self.notify, str(exc), severity="warning")
            return
        self.call_from_thread(self._set_summary, summary)

    def _set_summary(self, summary: IndexSummary) -> None:
        self.summary = summary
        self.update_status()
        for screen in self._index_screens():
            screen.show_roots(summary)
        if not summary.documents and not self.indexing:
            self.query_one("#preview", Preview).clear(
                f"The index {display_path(self.live.db_path)} is empty. Press Ctrl+O, then a, to add a folder."
            )

    # --- searching ---------------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "query":
            self.search_now()

    def search_now(self) -> None:
        query = self.query_one("#query", Input).value
        if not query.strip():
            self.shown = None
            self.query_one("#results", ResultList).show([])
            self.query_one("#preview", Preview).clear("Type to search.")
            return
        self._searches.request(query, self.mode, self.filters)

    def _deliver_from_thread(self, request: SearchRequest, outcome: Answer | Exception, seconds: float) -> None:
        try:
            self.call_from_thread(self._show_answer, request, outcome, seconds)
        except RuntimeError:  # the app has closed
            pass

    def _show_answer(self, request: SearchRequest, outcome: Answer | Exception, seconds: float) -> None:
        if self.shown is not None and request.serial <= self.shown.serial:
            return  # an answer to an older query never replaces a newer one
        boxes = self.query("#query").results(Input)
        box = next(boxes, None)
        if box is None or not box.value.strip():
            return  # the app is closing, or the box was cleared meanwhile
        if isinstance(outcome, Exception):
            self.notify(str(outcome) if isinstance(outcome, OboyuError) else f"search failed: {outcome!r}",
                        severity="error")
            return
        self.shown, self.shown_at, self.last_search_seconds = request, time.perf_counter(), seconds
        self.stale = outcome.stale
        if self.live.resident.generation != self._summary_generation:  # written meanwhile, perhaps elsewhere
            self._summary_generation = self.live.resident.generation
            self.refresh_summary()
        results = self.query_one("#results", ResultList)
        results.show(outcome.results)
        good = sum(not r.weak for r in outcome.results)
        results.border_title = f"Results · {good}" + (f" (+{len(outcome.results) - good} weak)" if good < len(outcome.results) else "") \
            + (" · index busy, last loaded state" if outcome.stale else "")
        if not outcome.results:
            self.query_one("#preview", Preview).clear("No results.")
        self.update_status()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        result = self.query_one("#results", ResultList).current
        if result is not None and self.shown is not None:
            self.load_preview(result, self.shown.query)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.query_one("#preview", Preview).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "query" and self.query_one("#results", ResultList).current is not None:
            self.query_one("#preview", Preview).focus()

    @work(thread=True, group="preview", exclusive=True, exit_on_error=False)
    def load_preview(self, result: Result, query: str) -> None:
        try:
            lines = read_document(result.path, PREVIEW_MAX_BYTES, result.file_type or None).lines
        except OboyuError as exc:
            self.call_from_thread(self._show_preview, result, None, f"{exc} (showing the indexed passage)")
            return
        terms = set(words(query))
        lo, hi = max(1, result.start_line - HIGHLIGHT_LINES), min(len(lines), result.end_line + HIGHLIGHT_LINES)
        spans = {n: match_spans(lines[n - 1], terms) for n in range(lo, hi + 1)}
        text, row = preview_text(lines, result.start_line, min(result.end_line, len(lines)), spans)
        self.call_from_thread(self._show_preview, result, (text, row), "")

    def _show_preview(self, result: Result, shown, message: str) -> None:
        current = self.query_one("#results", ResultList).current
        if current is None or current.chunk_id != result.chunk_id:
            return  # the highlight moved on meanwhile
        preview = self.query_one("#preview", Preview)
        # a page, slide or row says where in the file; in a text file, its line does
        title = f"{display_path(result.path)} · {result.part}" if result.part else f"{display_path(result.path)}:{result.start_line}"
        if shown is None:
            preview.show(Text(visible(message) + "\n\n" + visible(result.snippet)), 0, title)
        else:
            preview.show(shown[0], shown[1], title)

    # --- actions -----------------------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        self.query_one("#results", ResultList).step(delta)

    def action_focus_query(self) -> None:
        self.query_one("#query", Input).focus()

    def action_cycle_mode(self) -> None:
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        self.notify(f"mode: {self.mode}", timeout=1.5)
        self.update_status()
        self.search_now()

    def action_filters(self) -> None:
        def chosen(filters: Filters | None) -> None:
            if filters is not None:
                self.filters = filters
                self.update_status()
                self.search_now()

        self.push_screen(FilterScreen(self.filters, self.filter_texts), chosen)

    def action_indexes(self) -> None:
        if not isinstance(self.screen, IndexScreen):
            self.push_screen(IndexScreen())

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("edit", "copy_path", "move", "focus_query", "cycle_mode", "filters", "help") and \
                not self._on_search_screen():
            return False
        if action in ("edit", "copy_path") and self.query_one("#results", ResultList).current is None:
            return None  # shown, greyed out
        return True

    def _on_search_screen(self) -> bool:
        return not self.screen_stack or len(self.screen_stack) == 1

    def action_copy_path(self) -> None:
        result = self.query_one("#results", ResultList).current
        if result is not None:
            self.copy_to_clipboard(result.path)
            self.notify(f"copied {display_path(result.path)}", timeout=2)

    def action_edit(self) -> None:
        result = self.query_one("#results", ResultList).current
        if result is None:
            return
        if result.file_type and result.file_type not in SOURCE_TYPES:
            self.open_externally(result.path)
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.notify("set $EDITOR (or $VISUAL) to open files", severity="warning")
            return
        command = shlex.split(editor) + editor_arguments(editor, result.path, result.start_line)
        try:
            with self.suspend():
                subprocess.run(command, check=False)
        except Exception as exc:  # no terminal to give away, editor missing, …
            self.notify(f"cannot run {editor}: {exc}", severity="error")
        self.refresh()

    def open_externally(self, path: str) -> None:
        """A PDF, a workbook, a mail: in the application the desktop opens it with."""
        command = opener_command(path)
        if command is None:
            self.notify("no program to open files with here (xdg-open, open)", severity="warning")
            return
        try:
            if sys.platform == "win32":
                os.startfile(path)  # type: ignore[attr-defined]  # Windows only
            else:
                subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
            self.notify(f"opening {visible(Path(path).name)}", timeout=2)
        except OSError as exc:
            self.notify(f"cannot open {visible(Path(path).name)}: {exc.strerror or exc}", severity="error")

    # --- indexing ----------------------------------------------------------------------------

    def start_indexing(self, paths: list[Path]) -> None:
        if self.indexing:
            self.notify("an indexing run is in progress; wait for it or stop it (s)", severity="warning")
            return
        self.indexing = True
        self._index_stop = threading.Event()
        self.index_progress = None
        self._show_index_progress(None, f"starting: {', '.join(display_path(p) for p in paths)}")
        self.run_worker(partial(self._index_in_thread, paths), thread=True, group="index", exit_on_error=False)

    def reindex_all(self) -> None:
        roots = [Path(r.path) for r in self.summary.roots]
        if not roots:
            self.notify("no folders indexed yet", severity="warning")
            return
        self.start_indexing(roots)

    def stop_indexing(self) -> None:
        if self.indexing:
            self._index_stop.set()
            self.notify("stopping after the batch in hand…", timeout=2)

    def _index_screens(self) -> list[IndexScreen]:
        return [screen for screen in self.screen_stack if isinstance(screen, IndexScreen)]

    def _index_in_thread(self, paths: list[Path]) -> None:
        last = 0.0

        def progress(step: IndexProgress) -> None:
            nonlocal last
            if time.monotonic() - last >= PROGRESS_INTERVAL:
                last = time.monotonic()
                self.call_from_thread(self._show_index_progress, step)

        try:
            for path in paths:
                if not path.exists():
                    raise OboyuError(f"no such folder: {path}")
                if not os.access(path, os.R_OK | os.X_OK if path.is_dir() else os.R_OK):
                    raise OboyuError(f"cannot read {path}: permission denied")
            self.model_ready.wait()
            if self.live.embedder is None:
                raise OboyuError("the model is not loaded; indexing needs it")
            # the file is opened for each batch's write only, so other processes read meanwhile
            stats = open_indexer(self.live, self.live.embedder, on_progress=progress, stop=self._index_stop).index(paths)
        except Exception as exc:
            self.call_from_thread(self._index_finished, None, exc)
            return
        self.call_from_thread(self._index_finished, stats, None)

    def _show_index_progress(self, step: IndexProgress | None, message: str = "") -> None:
        self.index_progress = step
        for screen in self._index_screens():
            screen.show_progress(step, message)
        self.update_status()

    def _index_finished(self, stats: IndexStats | None, error: Exception | None) -> None:
        self.indexing = False
        self.index_progress = None
        if error is not None:
            message = str(error) if isinstance(error, OboyuError) else f"indexing failed: {error!r}"
            self.notify(message, severity="error")
            self._show_index_progress(None, message)
        elif stats is not None:
            line = stats.summary()
            self.notify(line, title="Index updated")
            self._show_index_progress(None, line)
        self.refresh_summary()
        self.search_now()

    def remove_root(self, root: str) -> None:
        if self.indexing:
            self.notify("wait for the indexing run to finish", severity="warning")
            return
        self.run_worker(partial(self._remove_in_thread, root), thread=True, group="index", exit_on_error=False)

    def _remove_in_thread(self, root: str) -> None:
        try:  # under the indexer's lock: an `oboyu index` elsewhere would write the root back
            with IndexLock(self.live.db_path), self.live.writing() as store:
                removed = store.remove_root(root)
        except Exception as exc:
            self.call_from_thread(self.notify, f"cannot remove {root}: {exc}", severity="error")
            return
        self.call_from_thread(self._index_finished, IndexStats(removed=removed), None)

    # --- palette and status ------------------------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Reindex all", "Update every indexed folder", self.reindex_all)
        yield SystemCommand("Indexes", "Indexed folders: add, remove, reindex", self.action_indexes)
        yield SystemCommand("Switch index", "Search another index file", self.action_switch_index)
        yield SystemCommand("Filters", "Restrict by path, type or date", self.action_filters)
        yield SystemCommand("Cycle mode", "hybrid → vector → keyword", self.action_cycle_mode)
        yield SystemCommand("Stop indexing", "Stop the run in progress after its batch", self.stop_indexing)

    def action_switch_index(self) -> None:
        def chosen(value: str | None) -> None:
            if not value:
                return
            if self.indexing:
                self.notify("wait for the indexing run to finish", severity="warning")
                return
            path = Path(os.path.expanduser(value))
            if not path.exists() and not path.parent.is_dir():
                self.notify(f"no such folder: {path.parent}", severity="error")
                return
            embedder = self.live.embedder
            self.live = self._searches.live = LiveIndex(path, embedder, self.live.reranker)
            self.shown = None
            self.refresh_summary()
            self.search_now()

        self.push_screen(PromptScreen("Index file to search", str(self.live.db_path)), chosen)

    def update_status(self) -> None:
        embedder = self.live.embedder
        if embedder is not None:
            model = embedder.info.model_id.split("/")[-1].split("@")[0]
            # what answers as you type: queries are onnxruntime's whichever engine made the passages
            model += f" ({embedder.query_provider.removesuffix('ExecutionProvider')})"
        else:
            model = "loading model…" if not self.model_ready.is_set() else "no model"
        parts = [f"{self.summary.documents:,} docs", f"{self.summary.chunks:,} chunks", self.mode]
        if self.summary.embedded < self.summary.chunks and self.index_progress is None:
            parts.append(f"meaning: {meaning_share(self.summary.embedded, self.summary.chunks)} of passages")
        if self.filters != Filters():
            parts.append("filtered")
        if self.stale:
            parts.append("index busy: last loaded state")
        if self.index_progress is not None:
            parts.append(self.index_progress.line())
        elif self.indexing:
            parts.append("indexing…")
        parts += [model, display_path(self.live.db_path)]
        self.query_one("#status", Static).update(" · ".join(parts))


def editor_arguments(editor: str, path: str, line: int) -> list[str]:
    """How to open a file at a line in common editors: `+LINE FILE` for vi, nano, emacs and most
    terminal editors; `-g FILE:LINE` for VS Code and its kin; `FILE:LINE` for Sublime, Zed, Helix."""
    name = Path(shlex.split(editor)[0]).name if editor.strip() else ""
    if name in ("code", "code-insiders", "codium", "cursor"):
        return ["-g", f"{path}:{line}"]
    if name in ("subl", "zed", "hx", "helix"):
        return [f"{path}:{line}"]
    return [f"+{line}", path]


def opener_command(path: str) -> list[str] | None:
    """The desktop's opener for a file: `open` on macOS, `xdg-open` elsewhere (None when absent);
    Windows uses os.startfile."""
    if sys.platform == "win32":
        return ["start", path]
    tool = "open" if sys.platform == "darwin" else "xdg-open"
    return [tool, path] if shutil.which(tool) else None
