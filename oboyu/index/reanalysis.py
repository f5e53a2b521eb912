"""The keyword index made anew from the stored passages, when an upgrade changes how words are
analysed (`schema.KEYWORDS_MADE_ANEW`).

MeCab's analysis is most of the cost: about 0.8 ms a passage on one core, so some 13 minutes for
a million passages. A large index is analysed by worker processes, one a core (MeCab holds the
GIL, so threads would not help), while this process reads the next passages and writes the last
ones' terms; and the upgrade says how far it is on the library's log (`oboyu: ...` on stderr).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Protocol

import duckdb

from oboyu.documents.keywords import counts_of
from oboyu.index.records import keyword_text
from oboyu.progress import format_duration

KEYWORD_BATCH = 4096  # passages read at a time, not every passage's text and terms held at once
POOL_FROM = 20_000  # passages; fewer are analysed here (a worker takes about a second to start)
MOST_WORKERS = 8
SAY_AFTER, SAY_EVERY = 2.0, 30.0  # seconds: a short upgrade says nothing, a long one every so often
_log = logging.getLogger(__name__)
_Terms = Callable[[], list[Counter[str]]]  # waits for the terms of a batch of texts


class Store(Protocol):
    con: duckdb.DuckDBPyConnection

    def insert_keywords(self, counts: list[tuple[str, dict[str, int]]]) -> None: ...


def index_keywords(store: Store) -> None:
    """Every passage's keyword terms from its stored text, a batch at a time in id order (the
    caller holds a transaction and has emptied the keyword tables)."""
    total = store.con.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
    progress = _Progress(total)
    with _analysis(total) as analyse:
        waiting: deque[tuple[list[str], _Terms]] = deque()
        for ids, texts in _batches(store):
            waiting.append((ids, analyse(texts)))
            if len(waiting) > 1:  # the workers analyse this batch while the last one is written
                _write(store, *waiting.popleft(), progress)
        while waiting:
            _write(store, *waiting.popleft(), progress)


def _batches(store: Store) -> Iterator[tuple[list[str], list[str]]]:
    after = ""
    while rows := store.con.execute(
        "SELECT c.id, c.heading, d.title, c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE c.id > ? ORDER BY c.id LIMIT ?", [after, KEYWORD_BATCH]
    ).fetchall():
        yield [row[0] for row in rows], [keyword_text(title, heading, text) for _, heading, title, text in rows]
        after = rows[-1][0]


def _write(store: Store, ids: list[str], terms: _Terms, progress: _Progress) -> None:
    store.insert_keywords([(cid, counts) for cid, counts in zip(ids, terms(), strict=True)])
    progress.advance(len(ids))


@contextlib.contextmanager
def _analysis(total: int) -> Iterator[Callable[[list[str]], _Terms]]:
    """A function that starts the analysis of some texts and returns how to wait for their terms."""
    workers = min(_cores(), MOST_WORKERS)
    if total < POOL_FROM or workers < 2:
        yield _here
        return
    # spawned, not forked: this process has DuckDB's threads running
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:

        def start(texts: list[str]) -> _Terms:
            size = -(-len(texts) // workers)
            parts: list[Future[list[Counter[str]]]] = [pool.submit(counts_of, texts[i : i + size]) for i in range(0, len(texts), size)]
            return lambda: [counts for part in parts for counts in part.result()]

        yield start


def _here(texts: list[str]) -> _Terms:
    counts = counts_of(texts)
    return lambda: counts


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


class _Progress:
    """Lines on the library's log for an upgrade that takes a while: the first after SAY_AFTER
    seconds, then one every SAY_EVERY, and one at the end."""

    def __init__(self, total: int):
        self.total, self.done = total, 0
        self.started = self.said = time.monotonic()
        self.spoke = False

    def advance(self, passages: int) -> None:
        self.done += passages
        now = time.monotonic()
        if self.done >= self.total:
            if self.spoke:
                _log.warning(f"upgrading the index: the words of {self.total:,} passages analysed again in "
                             f"{format_duration(now - self.started)}")
            return
        if now - self.said < (SAY_EVERY if self.spoke else SAY_AFTER):
            return
        self.said, self.spoke = now, True
        rate = self.done / (now - self.started)
        left = (self.total - self.done) / rate if rate else 0.0
        _log.warning(f"upgrading the index for this oboyu's keyword search (once): the words of {self.done:,} "
                     f"of {self.total:,} passages analysed again · {rate:,.0f}/s · ETA {format_duration(left)}")
