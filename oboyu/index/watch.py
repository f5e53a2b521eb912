"""Keeping an index current as files change: filesystem events (watchfiles: inotify, FSEvents,
ReadDirectoryChangesW) are debounced into batches, and each batch updates only the paths it
names, so a saved file is searchable about a second later. A burst (a `git checkout` of
thousands of files) becomes one update of the folders it touched. An ignore file's change
updates its folder (what it now leaves out goes, what it brought back comes); oboyu's own files
(an index kept inside a watched folder) are no change.

The folders watched are the index's, re-read each second: one indexed meanwhile by another
`oboyu index` is watched from then on, and one deleted (the OS's watch goes with it) is watched
again, and brought up to date, once it is back."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from oboyu.documents.crawl import IGNORE_FILES
from oboyu.errors import IndexBusyError
from oboyu.index.indexer import Indexer
from oboyu.index.plan import OwnFiles
from oboyu.index.reports import IndexStats
from oboyu.paths import stored_path

DEBOUNCE_MS = 400  # the longest a batch gathers events
QUIET_MS = 50  # a batch closes after this long without events
BURST_PATHS = 200  # above this, update whole roots rather than path by path
READY_MS = 1000  # how often the watcher wakes when nothing happens
BUSY_RETRY_SECONDS = 0.5  # how often a change waiting for another process's update tries again


def watch(indexer: Indexer, roots_now: Callable[[], list[Path]], on_batch: Callable[[IndexStats], None],
          on_roots: Callable[[list[Path], list[Path]], None] | None = None, stop: threading.Event | None = None) -> None:
    """Update the index from events under the folders `roots_now` gives (those of the index that
    exist) until `stop` is set (or Ctrl+C, which raises KeyboardInterrupt out of here). `on_roots`
    hears which folders are watched, and which went, each time that changes (first: all, none)."""
    from watchfiles import watch as changes_of

    stop = stop or threading.Event()
    own = indexer.own
    watched: list[Path] = []

    def now_watching(roots: list[Path]) -> None:
        nonlocal watched
        if roots != watched and on_roots is not None:
            on_roots(roots, [root for root in watched if root not in roots])
        watched = roots

    def update(paths: list[Path] | set[Path]) -> None:
        """The paths brought up to date once no other process is updating the index: another
        `oboyu index` beside the watch (one that adds a folder, say) ended it with "another oboyu
        process is updating the index" (a test run on a loaded machine)."""
        while True:
            try:
                on_batch(indexer.update_paths(paths))
                return
            except IndexBusyError:
                if stop.wait(BUSY_RETRY_SECONDS):
                    return

    while not stop.is_set():
        roots = roots_now()
        if not roots:  # every folder gone (an unmounted drive): wait for one to come back
            now_watching(roots)
            stop.wait(READY_MS / 1000)
            continue
        seen = identities(roots)
        first = True
        # yield_on_timeout: the first (possibly empty) yield says the OS watches are in place
        for changes in changes_of(*roots, debounce=DEBOUNCE_MS, step=QUIET_MS, stop_event=stop, rust_timeout=READY_MS,
                                  yield_on_timeout=True, ignore_permission_denied=True, raise_interrupt=True):
            if first:  # what changed before the watches were in place (since the last update, or the folder's return)
                first = False
                now_watching(roots)
                update(roots)
            named = {Path(path) for _, path in changes}
            paths = changed_paths(named, roots, own)
            if paths:
                update(paths)
            if named & set(roots) or roots_now() != roots or identities(roots) != seen:
                break  # watch the folders as they are now: one deleted (and made again), or mounted, is another


def identities(roots: list[Path]) -> list[tuple[int, int] | None]:
    """Each folder's device and inode: a drive unmounted or mounted at a watched mount point keeps
    its path, and the OS's watch is on the old folder. (A folder deleted and made again may get
    its old inode back: the event that names the folder itself says so.)"""
    found: list[tuple[int, int] | None] = []
    for root in roots:
        try:
            status = os.stat(root)
            found.append((status.st_dev, status.st_ino))
        except OSError:
            found.append(None)
    return found


def changed_paths(paths: set[Path], roots: list[Path], own: OwnFiles) -> set[Path]:
    """What a batch of events asks to update: an ignore file's folder for the ignore file, none of
    oboyu's own files, and the roots themselves for a burst."""
    paths = {path.parent if path.name in IGNORE_FILES else path for path in paths if not own.hold(stored_path(path))}
    if len(paths) > BURST_PATHS:
        return {root for root in roots if any(p == root or root in p.parents for p in paths)}
    return paths
