"""One writer of an index at a time: lock files held by `oboyu index` (and `--watch`) for the
whole run, while the DuckDB file itself is opened only for each write so that queries from other
processes get in between. The operating system releases a lock when the process ends, however it
ends, so a killed indexer never leaves a stale lock behind.

The locks are keyed to the real file, not to the path given: one beside the file its path leads
to (symlinks resolved), and, once the file exists, one named after its device and inode in the
cache dir, which every hard link to it shares."""

from __future__ import annotations

import os
from pathlib import Path

from oboyu.errors import IndexBusyError
from oboyu.paths import cache_dir

try:
    import fcntl
except ImportError:  # Windows: DuckDB's own file lock is the only guard there
    fcntl = None  # type: ignore[assignment]


def lock_files(db_path: Path) -> list[Path]:
    """The lock files of an index, whichever path reaches it."""
    real = Path(os.path.realpath(db_path))
    files = [real.with_name(real.name + ".lock")]
    try:
        info = os.stat(real)
    except OSError:  # not made yet: nothing can link to it
        return files
    return [*files, cache_dir() / "locks" / f"{info.st_dev}-{info.st_ino}.lock"]


class IndexLock:
    def __init__(self, db_path: Path):
        self.db_path = Path(db_path)
        self._handles: list[int] = []

    def acquire(self) -> None:
        try:
            for path in lock_files(self.db_path):
                self._handles.append(_lock(path, self.db_path))
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        while self._handles:
            os.close(self._handles.pop())  # closing drops the flock

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def index_busy(db_path: Path) -> bool:
    """Whether another process holds the index's lock (an `oboyu index` or `--watch` under way);
    False where there are no file locks (Windows)."""
    if fcntl is None:
        return False
    for path in lock_files(db_path):
        try:
            handle = os.open(path, os.O_RDONLY)
        except OSError:  # none yet: nobody holds it
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(handle)  # closing drops a lock taken here
    return False


def _lock(path: Path, db_path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    if fcntl is not None:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(handle, 32).decode("ascii", "replace").strip() or "?"
            os.close(handle)
            raise IndexBusyError(
                f"another oboyu process (pid {holder}) is updating the index {db_path}; "
                "wait for it to finish (queries work meanwhile)"
            ) from None
    os.ftruncate(handle, 0)
    os.write(handle, str(os.getpid()).encode())
    return handle
