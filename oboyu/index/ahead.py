"""Work made ahead in another thread: while the caller works on an item, the next are made."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

Item = TypeVar("Item")


def ahead(items: Iterator[Item]) -> Iterator[Item]:
    """`items` (never None), each made in a thread while the caller works on the one before; the
    maker's error is raised after the items made before it. Leaving early lets the maker finish
    the item in hand and stop."""
    with queued(items, 1, name="oboyu-next-group") as ready:
        while (item := ready.get()) is not None:
            yield item


@contextlib.contextmanager
def queued(items: Iterator[Item], size: int, leaving: threading.Event | None = None,
           name: str = "oboyu-reader") -> Iterator[queue.Queue]:
    """A thread putting `items` into a queue of `size` at most, ended by None. Leaving the block
    sets `leaving` (which the maker of `items` may watch) and lets the thread finish the item in
    hand and close `items` (their own cleanup runs in that thread); its error is raised here when
    the caller is done."""
    work: queue.Queue = queue.Queue(maxsize=size)
    errors: list[BaseException] = []
    leaving = leaving or threading.Event()

    def make() -> None:
        try:
            for item in items:
                if leaving.is_set():
                    break
                work.put(item)
        except BaseException as exc:  # surfaced in the caller's thread
            errors.append(exc)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()
            work.put(None)

    maker = threading.Thread(target=make, name=name, daemon=True)
    maker.start()
    try:
        yield work
    finally:
        leaving.set()
        while maker.is_alive():  # let a maker blocked on a full queue finish
            try:
                work.get_nowait()
            except queue.Empty:
                maker.join(0.05)
    if errors:
        raise errors[0]
