"""Search as you type, off the UI thread: one search runs at a time, the newest request wins, and
searches start at most every THROTTLE_SECONDS (the first key searches at once; the last key
always gets its own search). Answers carry a serial number so a late one never replaces a newer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from oboyu.modes import Mode
from oboyu.search.filters import Filters
from oboyu.search.live import Answer, LiveIndex

THROTTLE_SECONDS = 0.1


@dataclass(frozen=True)
class SearchRequest:
    serial: int
    query: str
    mode: Mode
    filters: Filters
    k: int = 10  # each result costs a snippet (MeCab on it: about 1 ms)


class SearchLoop:
    """Runs in a worker thread; `deliver(request, answer_or_error, seconds)` is called there."""

    def __init__(self, live: LiveIndex, model_ready: threading.Event,
                 deliver: Callable[[SearchRequest, Answer | Exception, float], None]):
        self.live = live
        self.model_ready = model_ready
        self.deliver = deliver
        self._pending: SearchRequest | None = None
        self._serial = 0
        self._wake = threading.Condition()
        self._stopped = False
        self._last_start = 0.0

    def request(self, query: str, mode: Mode, filters: Filters) -> SearchRequest:
        with self._wake:
            self._serial += 1
            self._pending = SearchRequest(self._serial, query, mode, filters)
            self._wake.notify()
            return self._pending

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()

    def run(self) -> None:
        while True:
            with self._wake:
                while self._pending is None and not self._stopped:
                    self._wake.wait()
                if self._stopped:
                    return
            wait = self._last_start + THROTTLE_SECONDS - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            with self._wake:
                request, self._pending = self._pending, None
            if request is None:
                continue
            if request.mode.uses_vectors:
                self.model_ready.wait()
            self._last_start = started = time.monotonic()
            try:
                outcome: Answer | Exception = self.live.search(request.query, request.mode, request.k, request.filters)
            except Exception as exc:  # shown as a notification; the loop goes on
                outcome = exc
            self.deliver(request, outcome, time.monotonic() - started)
