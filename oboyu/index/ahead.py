"""Work made one step ahead in another thread: while the caller works on an item, the next is made."""

from __future__ import annotations

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
