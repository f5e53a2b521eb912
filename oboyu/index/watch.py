"""Keeping an index current as files change: filesystem events (watchfiles: inotify, FSEvents,
ReadDirectoryChangesW) are debounced into batches, and each batch updates only the paths it
names, so a saved file is searchable about a second later. A burst (a `git checkout` of
thousands of files) becomes one update of the folders it touched."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from oboyu.index.indexer import Indexer
from oboyu.index.reports import IndexStats

DEBOUNCE_MS = 400  # the longest a batch gathers events
QUIET_MS = 50  # a batch closes after this long without events
BURST_PATHS = 200  # above this, update whole roots rather than path by path
READY_MS = 1000  # how often the watcher wakes when nothing happens


def watch(indexer: Indexer, roots: list[Path], on_batch: Callable[[IndexStats], None],
          on_ready: Callable[[], None] | None = None, stop: threading.Event | None = None) -> None:
    """Update the index from events under `roots` until `stop` is set (or Ctrl+C, which raises
    KeyboardInterrupt out of here). `on_ready` hears when events are being caught."""
    from watchfiles import watch as changes_of

    ready = False
    # yield_on_timeout: the first (possibly empty) yield says the OS watches are in place
    for changes in changes_of(*roots, debounce=DEBOUNCE_MS, step=QUIET_MS, stop_event=stop, rust_timeout=READY_MS,
                              yield_on_timeout=True, ignore_permission_denied=True, raise_interrupt=True):
        if not ready:
            ready = True
            if on_ready is not None:
                on_ready()
            # what changed between the caller's last update and the watches being in place
            on_batch(indexer.update_paths(roots))
        paths = {Path(path) for _, path in changes}
        if not paths:
            continue
        if len(paths) > BURST_PATHS:
            paths = {root for root in roots if any(p == root or root in p.parents for p in paths)}
        on_batch(indexer.update_paths(paths))
