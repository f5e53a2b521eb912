"""The interactive app: `oboyu` on a terminal, or `oboyu tui`: search as you type, preview,
open, manage indexes. Textual; every blocking call runs in a worker thread."""

from __future__ import annotations

from pathlib import Path

__all__ = ["run"]


def run(db_path: Path, rerank: bool | None = None) -> None:
    """Open the app on this index; `rerank` as in `oboyu.api.open_live`."""
    from oboyu.models.loading import load_reranker
    from oboyu.tui.app import OboyuApp

    OboyuApp(db_path, reranker=load_reranker(rerank)).run()
