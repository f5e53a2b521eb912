"""How an Indexer holds the index it updates."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from oboyu.index.store import Store, open_for_reading


class WritableIndex(Protocol):
    """The index an Indexer updates, however it is held: an open Store (held for the run), an
    `IndexFile` (opened for each batch, so that other processes read it between), or a long-lived
    process's LiveIndex (its own searches go on between batches)."""

    @property
    def db_path(self) -> Path: ...

    def writing(self) -> contextlib.AbstractContextManager[Store]: ...

    def reading(self) -> contextlib.AbstractContextManager[Store]: ...


def file_signature(db_path: Path) -> tuple:
    """Cheap evidence that an index changed: the stat of its file and of its write-ahead log."""
    out: list[tuple[int, int, int] | None] = []
    for path in (db_path, Path(f"{db_path}.wal")):
        try:
            st = os.stat(path)
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


@dataclass(frozen=True)
class IndexFile:
    """An index file, opened to write one batch and closed after it."""

    db_path: Path

    def writing(self) -> contextlib.AbstractContextManager[Store]:
        return contextlib.closing(Store.open_writer(self.db_path))

    def reading(self) -> contextlib.AbstractContextManager[Store]:
        return open_for_reading(self.db_path)
