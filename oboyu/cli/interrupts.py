"""Ctrl+C in the `oboyu` command: always the one line "oboyu: interrupted" and exit status 130;
and a reader that goes away (`oboyu query x | head -1`): exit status 141, as for a program SIGPIPE ended.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be. Inside a
native library's set-up (onnxruntime, OpenVINO, DuckDB and NumPy load their C++ parts on first
import) that exception is turned into an ImportError ("initialization failed", NumPy's "PLEASE
READ THIS"), which read as "openvino is not installed", or it left a half-made module that
crashed the interpreter's shutdown. So the command holds Ctrl+C back while an import runs.

The standard library only: the entry point imports this before anything heavy.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

INTERRUPTED = "oboyu: interrupted"
AGAIN_AFTER_SECONDS = 0.05  # how soon a Ctrl+C held back during an import is raised again
IMPORT_MACHINERY = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")


def leave_now(signum: int, frame: FrameType | None) -> None:
    """Ctrl+C before any work began (a warm process answering, the commands loading): said as
    main() says it, and at once; nothing is stored yet, so there is nothing to finish."""
    sys.stderr.write(INTERRUPTED + "\n")
    sys.stderr.flush()
    os._exit(130)


def interrupt_outside_imports(signum: int, frame: FrameType | None) -> None:
    """A KeyboardInterrupt, as Python's own handler raises it, except while a module is being
    imported: then the signal is sent again shortly, until it lands after the import."""
    if _importing(frame):
        again = threading.Timer(AGAIN_AFTER_SECONDS, os.kill, (os.getpid(), signal.SIGINT))
        again.daemon = True
        again.start()
        return
    raise KeyboardInterrupt


def _importing(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename in IMPORT_MACHINERY:
            return True
        frame = frame.f_back
    return False


CLOSED_PIPE = 128 + 13  # the exit status a shell gives a program that SIGPIPE ended; 1 would read "no match"


def leave_closed_pipe() -> int:
    """stdout to nowhere, so that the interpreter's last flush does not fail on the closed pipe;
    returns the exit status to leave with."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return CLOSED_PIPE
