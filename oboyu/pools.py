"""Objects that one thread at a time may use, borrowed from a pool: MeCab's taggers, Snowball's stemmers.

A tagger is not safe to share between threads, and fugashi never unmaps a tagger's dictionary,
even once the tagger is gone (five made and dropped on one thread leave five mapped): kept one a
thread (`threading.local`), `oboyu serve`, which answers each handed-off query in a thread of its
own, grew to 3.8 GB after 145 queries (a user trial). So a thread borrows an idle one and gives it
back, there are only ever as many as ran at once, and none is ever dropped (that would leak too)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Pool(Generic[T]):
    def __init__(self, make: Callable[[], T]):
        self._make = make
        self._idle: list[T] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def borrowed(self) -> Iterator[T]:
        """An idle object (a new one when none is idle), given back when the block ends: read what
        it made inside the block, as its next use may reuse that memory."""
        with self._lock:
            item = self._idle.pop() if self._idle else None
        if item is None:
            item = self._make()
        try:
            yield item
        finally:
            with self._lock:
                self._idle.append(item)

    @property
    def idle(self) -> int:
        """How many are idle now (all that were made, when none is borrowed)."""
        with self._lock:
            return len(self._idle)
