"""Opening an index file that another process holds: DuckDB lets one writer or several readers
have it, and each holds it briefly (a batch's write, a query), so an open retries for a while."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from oboyu.errors import IndexBusyError

Opened = TypeVar("Opened")
RETRY_SECONDS = 0.05


def open_waiting(open_file: Callable[[], Opened], wait_seconds: float, on_wait: Callable[[], None] | None = None,
                 tell_after: float = 0.0) -> Opened:
    """What `open_file` opens, retried while it raises IndexBusyError, up to `wait_seconds`;
    `on_wait` hears once that we have waited `tell_after` seconds."""
    started = time.monotonic()
    told = False
    while True:
        try:
            return open_file()
        except IndexBusyError:
            waited = time.monotonic() - started
            if waited >= wait_seconds:
                raise
            if on_wait is not None and not told and waited >= tell_after:
                on_wait()
                told = True
            time.sleep(RETRY_SECONDS)
