"""One progress line on stderr: rewritten in place on a terminal, printed now and then otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def format_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{max(0.0, seconds):.1f}s"
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class ProgressLine:
    def __init__(self, stream: TextIO | None = None, enabled: bool = True, interval: float | None = None,
                 delay: float = 0.0):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        # a piece of work (until `clear`) says nothing, messages included, until it has run this
        # long: `--watch` printed a progress line and a meaning-pass notice for each file saved
        self.delay = delay
        self.clock = time.monotonic  # what `delay` is measured by
        self._since: float | None = None
        self._held: list[str] = []
        self.tty = self.stream.isatty()
        self.interval = interval if interval is not None else (0.2 if self.tty else 5.0)
        # on a terminal the line shows at once; in a log, the first line comes after one interval
        self._last = 0.0 if self.tty else time.monotonic()
        self._width = 0

    def update(self, text: str, force: bool = False) -> None:
        if not self.enabled or not self._past_delay():
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        if self.tty:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def message(self, text: str, of_progress: bool = False) -> None:
        """A line of its own (clears the progress line first on a terminal). One `of_progress`
        (what a pass is doing) waits, as the line does, until the work has run `delay` seconds."""
        if not self.enabled:
            return
        if of_progress and not self._past_delay():
            self._held.append(text)
            return
        self._clear_line()
        self.stream.write(text + "\n")
        self.stream.flush()

    def _past_delay(self) -> bool:
        """Whether the work in hand has run `delay` seconds; the first time it has, what it held back is said."""
        if not self.delay:
            return True
        now = self.clock()
        if self._since is None:
            self._since = now
        if now - self._since < self.delay:
            return False
        held, self._held = self._held, []
        for text in held:
            self.stream.write(text + "\n")
        return True

    def clear(self) -> None:
        """Ends the line, and the piece of work `delay` counts from: what it held back is dropped."""
        self._since, self._held = None, []
        self._clear_line()

    def _clear_line(self) -> None:
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
