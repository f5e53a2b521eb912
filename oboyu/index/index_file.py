"""How an Indexer holds the index it updates."""

from __future__ import annotations

import contextlib
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


@dataclass(frozen=True)
class IndexFile:
    """An index file, opened to write one batch and closed after it."""

    db_path: Path

    def writing(self) -> contextlib.AbstractContextManager[Store]:
        return contextlib.closing(Store.open_writer(self.db_path))

    def reading(self) -> contextlib.AbstractContextManager[Store]:
        return open_for_reading(self.db_path)
