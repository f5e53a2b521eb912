"""The status bar: the index's counts, the search mode, what restricts or delays the answers, an
indexing run's progress, the model and the index file. Its attributes are bound to the app's
(`data_bind`); it redraws itself when one changes."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from oboyu.index.reports import IndexProgress, meaning_share
from oboyu.models.embedding import Embedder
from oboyu.search.filters import Filters
from oboyu.search.live import IndexSummary
from oboyu.text import counted
from oboyu.tui.widgets import display_path

NOT_READ = IndexSummary(None, 0, 0)  # the summary until the index is first read: the bar says nothing yet


def model_label(embedder: Embedder | None) -> str:
    """The model's short name and what answers as you type: queries are onnxruntime's whichever
    engine made the passages."""
    if embedder is None:
        return "no model"
    name = embedder.info.model_id.split("/")[-1].split("@")[0]
    return f"{name} ({embedder.query_provider.removesuffix('ExecutionProvider')})"


class StatusBar(Widget):
    summary = reactive(NOT_READ, init=False)
    mode = reactive("", init=False)
    filters: reactive[Filters] = reactive(Filters, init=False)
    stale = reactive(False, init=False)  # the index is being written elsewhere: answers from its last loaded state
    preparing = reactive(False, init=False)  # its search arrays are being made
    indexing = reactive(False, init=False)
    progress: reactive[IndexProgress | None] = reactive(None, init=False)
    model = reactive("", init=False)
    db_path = reactive(Path(), init=False)

    def render(self) -> Text:
        summary = self.summary
        if summary is NOT_READ:
            return Text("")
        parts = [counted(summary.documents, "doc"), counted(summary.chunks, "chunk"), self.mode]
        if summary.embedded < summary.chunks and self.progress is None:
            parts.append(f"meaning: {meaning_share(summary.embedded, summary.chunks)} of passages")
        if not self.filters.is_empty():
            parts.append("filtered")
        if self.preparing:
            parts.append("preparing fast search: last loaded state" if self.stale else "preparing fast search")
        elif self.stale:
            parts.append("index busy: last loaded state")
        if self.progress is not None:
            parts.append(self.progress.line())
        elif self.indexing:
            parts.append("indexing…")
        parts += [self.model, display_path(self.db_path)]
        return Text(" · ".join(parts))
