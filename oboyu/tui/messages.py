"""What the app is told: small typed messages that bubble up from its screens and come back from its
worker threads; the app handles each in an `on_<name>` method. State goes the other way, down, as
reactive attributes: no screen calls into the app."""

from __future__ import annotations

import logging
from pathlib import Path

from textual.app import App
from textual.message import Message

from oboyu.index.reports import IndexProgress, IndexStats
from oboyu.search.filters import Filters
from oboyu.search.live import Answer, IndexSummary
from oboyu.tui.searching import SearchRequest

# --- from the widgets ------------------------------------------------------------------------


class TypedOn(Message):
    """A character typed in the results list or the preview that is no key there: it goes on the
    search. Posted by the widget that had the key, in the order typed."""

    def __init__(self, character: str) -> None:
        super().__init__()
        self.character = character


# --- from the screens ------------------------------------------------------------------------


class IndexRequested(Message):
    """Add these folders to the index, or bring them up to date."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.paths = paths


class ReindexRequested(Message):
    """Bring these indexed folders up to date; every one when `roots` is None."""

    def __init__(self, roots: list[str] | None = None) -> None:
        super().__init__()
        self.roots = roots


class RemoveRequested(Message):
    """Drop an indexed folder and all its rows from the index."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = root


class StopRequested(Message):
    """Stop the indexing run in progress after the batch in hand."""


class FiltersChosen(Message):
    """New filters, and the texts they were read from (the filter screen opens with them again)."""

    def __init__(self, filters: Filters, texts: dict[str, str]) -> None:
        super().__init__()
        self.filters, self.texts = filters, texts


# --- from the worker threads -----------------------------------------------------------------


class ModelLoaded(Message):
    """The model is loaded, or could not be (the app's index then has `embedder` None)."""


class SummaryRead(Message):
    def __init__(self, summary: IndexSummary) -> None:
        super().__init__()
        self.summary = summary


class AnswerReady(Message):
    """A search's answer, or the error it ended with, and how long it took."""

    def __init__(self, request: SearchRequest, outcome: Answer | Exception, seconds: float) -> None:
        super().__init__()
        self.request, self.outcome, self.seconds = request, outcome, seconds


class IndexingProgressed(Message):
    def __init__(self, progress: IndexProgress) -> None:
        super().__init__()
        self.progress = progress


class IndexingFinished(Message):
    """An indexing run (or a removal) ended: what it did, or the error that stopped it."""

    def __init__(self, stats: IndexStats | None, error: Exception | None = None) -> None:
        super().__init__()
        self.stats, self.error = stats, error


class RemovalFailed(Message):
    def __init__(self, root: str, error: Exception) -> None:
        super().__init__()
        self.root, self.error = root, error


class LibraryMessage(Message):
    """A line of the library's log: an upgrade's progress, a wait for another process, a cache
    moved aside. From any thread."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class LibraryLog(logging.Handler):
    """The library's log, posted to the app as LibraryMessages: the CLI writes it on stderr, which
    nobody sees while the app owns the terminal (an index's upgrade, minutes at a million
    passages, showed nothing)."""

    def __init__(self, app: App) -> None:
        super().__init__(logging.WARNING)
        self.app = app

    def emit(self, record: logging.LogRecord) -> None:
        self.app.post_message(LibraryMessage(record.getMessage()))  # thread-safe
