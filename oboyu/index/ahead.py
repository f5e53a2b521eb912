"""Work made ahead in another thread: while the caller works on an item, the next are made."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

Item = TypeVar("Item")


def ahead(items: Iterator[Item]) -> Iterator[Item]:
    """`items`, each made in a thread while the caller works on the one before; the maker's
    error is raised where its item would have come. Leaving early lets the maker finish the item
    in hand and stop."""
    ready: queue.Queue = queue.Queue(maxsize=1)
    done = object()
    leaving = threading.Event()

    def make() -> None:
        try:
            for item in items:
                ready.put((item, None))
                if leaving.is_set():
                    return
        except BaseException as exc:  # surfaced in the caller's thread
            ready.put((done, exc))
            return
        ready.put((done, None))

    maker = threading.Thread(target=make, name="oboyu-next-group", daemon=True)
    maker.start()
    try:
        while True:
            item, error = ready.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        leaving.set()
        while maker.is_alive():  # let a maker blocked on a full queue finish
            try:
                ready.get_nowait()
            except queue.Empty:
                maker.join(0.05)


@contextlib.contextmanager
def queued(items: Iterator[Item], size: int, leaving: threading.Event | None = None) -> Iterator[queue.Queue]:
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

    maker = threading.Thread(target=make, name="oboyu-reader", daemon=True)
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
