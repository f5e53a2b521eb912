"""One writer of an index at a time: a lock file beside the index, held by `oboyu index` (and
`--watch`) for the whole run, while the DuckDB file itself is opened only for each write so
that queries from other processes get in between. The operating system releases the lock when
the process ends, however it ends, so a killed indexer never leaves a stale lock behind."""

from __future__ import annotations

import os
from pathlib import Path

from oboyu.errors import IndexBusyError

try:
    import fcntl
except ImportError:  # Windows: DuckDB's own file lock is the only guard there
    fcntl = None  # type: ignore[assignment]


class IndexLock:
    def __init__(self, db_path: Path):
        self.db_path = Path(db_path)
        self.path = Path(str(db_path) + ".lock")
        self._handle: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.read(handle, 32).decode("ascii", "replace").strip() or "?"
                os.close(handle)
                raise IndexBusyError(
                    f"another oboyu process (pid {holder}) is updating the index {self.db_path}; "
                    "wait for it to finish (queries work meanwhile)"
                ) from None
        os.ftruncate(handle, 0)
        os.write(handle, str(os.getpid()).encode())
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            os.close(self._handle)  # closing drops the flock
            self._handle = None

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
