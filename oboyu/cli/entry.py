"""The `oboyu` command's entry point: Ctrl+C is said in one line ("oboyu: interrupted", status 130)
from the first line of oboyu that runs, before the hand-off's own imports (socket, threading):
a Ctrl+C 8 to 40 ms after the start printed a traceback from inside them. What comes before
(Python's start, its `site`) is the interpreter's."""

from __future__ import annotations

import signal

from oboyu.cli.interrupts import leave_now

if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # an ignored SIGINT (a background job) stays so
    signal.signal(signal.SIGINT, leave_now)

from oboyu.cli.handoff import main  # after the handler, on purpose

__all__ = ["main"]
