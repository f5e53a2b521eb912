"""The library's front door: how the command line, the app and the MCP server open an index to
search or to update it, so that each front end is only about its own screen or protocol.

    embedder = open_embedder(db)                             # the index's own model (the default for a new one)
    open_indexer(IndexFile(db), embedder).index([folder])  # the embedding cache, the file opened per write
    live = open_live(db, embedder)                           # searches from memory, reloaded as the file changes
    live.search("会議の議事録", k=5)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from oboyu.index.index_file import IndexFile, WritableIndex
from oboyu.index.store import Store, open_for_reading
from oboyu.models.embedding import Embedder
from oboyu.models.loading import load_embedder, load_reranker
from oboyu.progress import ProgressLine
from oboyu.search.live import LiveIndex

if TYPE_CHECKING:  # the indexer's modules are read only by a command that indexes: not by a query
    from oboyu.index.cluster import Cluster
    from oboyu.index.indexer import Indexer, OnProgress, Workers

__all__ = ["IndexFile", "index_model", "open_cluster", "open_embedder", "open_indexer", "open_live", "open_reading"]

READ_WAIT_SECONDS = 15.0  # an indexer holds the file for one batch's write at a time


def open_reading(db: Path, on_wait: Callable[[], None] | None = None, wait_seconds: float = READ_WAIT_SECONDS) -> Store:
    """The index read-only; while an indexer writes a batch, wait (`on_wait` hears it once)."""
    return open_for_reading(db, wait_seconds=wait_seconds, on_wait=on_wait)


def index_model(db: Path, on_wait: Callable[[], None] | None = None) -> str | None:
    """The model an index was built with (`id@fingerprint`), or None for a new or empty one."""
    if not Path(db).exists():
        return None
    with open_reading(db, on_wait) as store:
        return store.model_id()


def open_embedder(db: Path, model: str | None = None, progress: ProgressLine | None = None,
                  on_build_step: Callable[[str], None] | None = None, notify: Callable[[str], None] | None = None,
                  on_wait: Callable[[], None] | None = None) -> Embedder:
    """The model to embed with for this index: `model` (an installed model's id) if given, else
    the one the index was built with, else the default model (built on first use)."""
    return load_embedder(index_model(db, on_wait), model, progress, on_build_step, notify)


def open_indexer(index: WritableIndex, embedder: Embedder, *, progress: ProgressLine | None = None,
                 on_progress: OnProgress | None = None, stop: threading.Event | None = None, full: bool = False,
                 follow_symlinks: bool = False, workers: Workers | None = None) -> Indexer:
    """An Indexer as every front end wants it: vectors kept in and taken from the embedding
    cache, the index file opened only for each batch's write; `workers` (a Ray cluster's,
    `open_cluster`) prepare and embed."""
    from oboyu.index.embedding_cache import EmbeddingCache
    from oboyu.index.indexer import Indexer

    return Indexer(index, embedder, progress=progress, on_progress=on_progress, follow_symlinks=follow_symlinks, stop=stop,
                   cache=EmbeddingCache.default(), full=full, workers=workers)


def open_cluster(address: str, embedder: Embedder, notify: Callable[[str], None] | None = None) -> Cluster:
    """Workers on a Ray cluster for `open_indexer` ("local" starts one on this machine); needs the
    `cluster` extra. Connects now, so that a wrong address fails before any work; call it from a
    thread that outlives the run (Ray's local processes die with the thread that started them).
    Close it (or use it as a context manager) to stop the workers."""
    from oboyu.index.cluster import Cluster

    cluster = Cluster(address, embedder, notify)
    cluster.connect()
    return cluster


def open_live(db: Path, embedder: Embedder | None = None, rerank: bool | None = None) -> LiveIndex:
    """The index for a long-lived process; `rerank`: None uses the installed reranker if any,
    True insists on one, False never reranks."""
    return LiveIndex(db, embedder, load_reranker(rerank))
