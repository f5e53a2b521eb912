"""The app's index: its model loaded and its summary read in worker threads, and the runs that write
it, one at a time: indexing folders, removing one. The runs are thread workers that report by
messages (`post` is the app's thread-safe `post_message`): progress at most every PROGRESS_INTERVAL
seconds, then how the run ended. OboyuApp is built on IndexingApp."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App
from textual.message import Message
from textual.reactive import var

from oboyu.api import open_indexer
from oboyu.errors import OboyuError
from oboyu.index.failures import explained
from oboyu.index.lock import IndexLock
from oboyu.index.reports import IndexProgress, IndexStats
from oboyu.models.embedding import Embedder
from oboyu.models.loading import load_embedder
from oboyu.models.rerank import Reranker
from oboyu.search.live import LiveIndex
from oboyu.tui.messages import (
    IndexingFinished,
    IndexingProgressed,
    IndexRequested,
    ModelLoaded,
    ReindexRequested,
    RemovalFailed,
    RemoveRequested,
    StopRequested,
    SummaryRead,
)
from oboyu.tui.status import NOT_READ, model_label
from oboyu.tui.widgets import display_path

PROGRESS_INTERVAL = 0.2  # seconds between progress updates from the indexer

Post = Callable[[Message], object]


class IndexingApp(App):
    """The index, its model and the runs that write it, as reactive state; the indexes screen asks
    for runs by messages."""

    db_path = var(Path(), init=False, always_update=True)  # the index file; setting it opens it anew
    model = var("loading model…", init=False)  # what the status bar says of the model
    summary = var(NOT_READ, init=False, always_update=True)
    indexing = var(False, init=False)
    index_progress: var[IndexProgress | None] = var(None, init=False)
    index_note = var("", init=False)  # how the run in hand started, or how the last one ended

    def __init__(self, db_path: Path, embedder: Embedder | None = None, reranker: Reranker | None = None):
        super().__init__()
        self.live = LiveIndex(db_path, embedder, reranker)
        self.model_ready = threading.Event()
        if embedder is not None:
            self.model_ready.set()
            self.set_reactive(IndexingApp.model, model_label(embedder))
        self.set_reactive(IndexingApp.db_path, self.live.db_path)
        self._index_stop = threading.Event()

    def watch_db_path(self, path: Path) -> None:
        self.live = LiveIndex(path, self.live.embedder, self.live.reranker)
        self.refresh_summary()

    def switch_index(self, path_text: str | None) -> None:
        """Search another index file (a new one where its folder exists)."""
        if not path_text:
            return
        if self.indexing:
            self.notify("wait for the indexing run to finish", severity="warning")
            return
        path = Path(os.path.expanduser(path_text))
        if not path.exists() and not path.parent.is_dir():
            self.notify(f"no such folder: {path.parent}", severity="error")
            return
        self.db_path = path

    def index_written(self) -> None:
        """After a run or a removal: the summary is read again."""
        self.refresh_summary()

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
            # a damaged index fails here first, reading which model it was built with (a user trial
            # read "cannot load the model: IO Error" as the model's fault)
            said = explained(exc, self.live.db_path) or (exc if isinstance(exc, OboyuError) else None)
            self.call_from_thread(self.notify, str(said) if said else f"cannot load the model: {exc}", severity="error")
        finally:
            self.model_ready.set()
        self.post_message(ModelLoaded())

    def on_model_loaded(self) -> None:
        self.model = model_label(self.live.embedder)

    @work(thread=True, group="summary", exclusive=True, exit_on_error=False)
    def refresh_summary(self) -> None:
        try:
            self.post_message(SummaryRead(self.live.summary()))
        except OboyuError as exc:
            self.call_from_thread(self.notify, str(exc), severity="warning")

    def on_summary_read(self, message: SummaryRead) -> None:
        self.summary = message.summary

    def start_indexing(self, paths: list[Path]) -> None:
        if self.indexing:
            self.notify("an indexing run is in progress; wait for it or stop it (s)", severity="warning")
            return
        self._index_stop = threading.Event()
        self.index_progress = None
        self.index_note = f"starting: {', '.join(display_path(p) for p in paths)}"
        self.indexing = True
        self.run_worker(partial(index_folders, self.live, self.model_ready, paths, self._index_stop, self.post_message),
                        thread=True, group="index", exit_on_error=False)

    def on_index_requested(self, message: IndexRequested) -> None:
        self.start_indexing(message.paths)

    def on_reindex_requested(self, message: ReindexRequested) -> None:
        roots = message.roots if message.roots is not None else [r.path for r in self.summary.roots]
        if not roots:
            self.notify("no folders indexed yet", severity="warning")
            return
        self.start_indexing([Path(r) for r in roots])

    def on_stop_requested(self, message: StopRequested) -> None:
        if self.indexing:
            self._index_stop.set()
            self.notify("stopping after the batch in hand…", timeout=2)

    def on_remove_requested(self, message: RemoveRequested) -> None:
        if self.indexing:
            self.notify("wait for the indexing run to finish", severity="warning")
            return
        self.run_worker(partial(remove_folder, self.live, message.root, self.post_message),
                        thread=True, group="index", exit_on_error=False)

    def on_removal_failed(self, message: RemovalFailed) -> None:
        self.notify(f"cannot remove {message.root}: {message.error}", severity="error")

    def on_indexing_progressed(self, message: IndexingProgressed) -> None:
        self.index_progress = message.progress

    def on_indexing_finished(self, message: IndexingFinished) -> None:
        if message.error is not None:
            error = message.error
            self.index_note = str(error) if isinstance(error, OboyuError) else f"indexing failed: {error!r}"
            self.notify(self.index_note, severity="error")
        elif message.stats is not None:
            self.index_note = message.stats.summary()
            self.notify(self.index_note, title="Index updated")
        self.index_progress = None
        self.indexing = False
        self.index_written()


def index_folders(live: LiveIndex, model_ready: threading.Event, paths: list[Path], stop: threading.Event,
                  post: Post) -> None:
    """Index `paths` into `live`'s file once the model is loaded; `stop` ends the run after its batch."""
    last = 0.0

    def progress(step: IndexProgress) -> None:
        nonlocal last
        if time.monotonic() - last >= PROGRESS_INTERVAL:
            last = time.monotonic()
            post(IndexingProgressed(step))

    try:
        for path in paths:
            if not path.exists():
                raise OboyuError(f"no such folder: {path}")
            if not os.access(path, os.R_OK | os.X_OK if path.is_dir() else os.R_OK):
                raise OboyuError(f"cannot read {path}: permission denied")
        model_ready.wait()
        if live.embedder is None:
            raise OboyuError("the model is not loaded; indexing needs it")
        # the file is opened for each batch's write only, so other processes read meanwhile
        stats = open_indexer(live, live.embedder, on_progress=progress, stop=stop).index(paths)
    except Exception as exc:
        post(IndexingFinished(None, exc))
        return
    post(IndexingFinished(stats))


def remove_folder(live: LiveIndex, root: str, post: Post) -> None:
    """Drop an indexed folder and its rows, under the indexer's lock: an `oboyu index` elsewhere
    would write the folder back."""
    try:
        with IndexLock(live.db_path), live.writing() as store:
            removed = store.remove_root(root)
    except Exception as exc:
        post(RemovalFailed(root, exc))
        return
    post(IndexingFinished(IndexStats(removed=removed)))
