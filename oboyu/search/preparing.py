"""A large index's search arrays (`oboyu.index.arrays`) made beside a long-lived process (the app,
the MCP server, `--stdin`, `serve`), so that it answers while they are made: from the last
arrays it loaded, or in the index file as a one-shot query does. Making them takes seconds from
about 50,000 passages and minutes at a million (89 s made anew, 19 s brought up to date;
docs/scale.md), which was the wait before a first answer.

A process of its own, not a thread: the build holds DuckDB's memory limit (a setting of the
whole database, which a thread's connection would share with the searches) to 512 MB; a read-only
connection in the same process cannot be opened beside the app's own writer; and the build's
Python work would hold the interpreter against the app's typing. The child is ended when the
index is about to be written (its generation would be gone) or its owner goes; a build killed
half-way leaves a folder the next one removes (`arrays_cache`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

from oboyu.index.arrays import homes

BACKGROUND_FROM_ROWS = 50_000  # passages; OBOYU_BACKGROUND_ARRAYS_FROM lowers it (tests)


def background_from_rows() -> int:
    return int(os.environ.get("OBOYU_BACKGROUND_ARRAYS_FROM") or BACKGROUND_FROM_ROWS)


class ArraysMaker:
    """At most one child process making one index's arrays."""

    def __init__(self, db_path: Path):
        self.db_path = db_path
        self._process: subprocess.Popen[bytes] | None = None
        self._errors: IO[bytes] | None = None

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def finished(self) -> bool:
        """A child that has ended and whose outcome `collect` has not taken yet."""
        return self._process is not None and self._process.poll() is not None

    def start(self) -> None:
        # a file, not a pipe (one nobody reads can fill and stall the child); closed by collect()
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115
        self._process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self._errors)

    def command(self) -> list[str]:
        # not `-m`: the package imports this module first, which runpy warns of
        make = "import sys; from oboyu.search.preparing import make_in_this_process as m; sys.exit(m(sys.argv[1]))"
        return [sys.executable, "-c", make, str(self.db_path)]

    def collect(self) -> str | None:
        """Why the ended child made nothing (its last line on stderr), or None when it made them."""
        process, errors = self._process, self._errors
        self._process = self._errors = None
        if process is None or errors is None:
            return None
        with errors:
            errors.seek(0)
            lines = errors.read().decode(errors="replace").strip().splitlines()
        if process.returncode == 0:
            return None
        return lines[-1] if lines else f"the process making them ended with status {process.returncode}"

    def stop(self) -> None:
        """End a running child (its work is about to be out of date, or its owner leaves), and
        remove what it left half-made: the next build would leave it for a day on Windows, where
        whether a process still runs cannot be asked (`arrays_cache`)."""
        if self.running():
            assert self._process is not None
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            for base in homes(self.db_path):
                for left in base.glob(f".building-{self._process.pid}-*"):
                    shutil.rmtree(left, ignore_errors=True)
        self.collect()


def _lower_priority() -> None:
    """The person's typing in the app comes first on a small machine."""
    if hasattr(os, "nice"):
        try:
            os.nice(10)
        except OSError:
            pass


def make_in_this_process(db_path: Path | str) -> int:
    """The child's work: the arrays of the index's current generation; 0 when made, 1 with one
    line on stderr when not."""
    from oboyu.errors import OboyuError, first_line
    from oboyu.index.arrays_cache import arrays_of
    from oboyu.index.store import open_for_reading

    _lower_priority()
    try:
        with open_for_reading(Path(db_path)) as store:
            arrays_of(store)
    except (OboyuError, OSError) as error:
        print(first_line(error), file=sys.stderr)
        return 1
    return 0
