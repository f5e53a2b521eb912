"""The keyword index made anew from the stored passages, when an upgrade changes how words are
analysed (`schema.KEYWORDS_MADE_ANEW`).

MeCab's analysis is most of the cost: about a millisecond a passage on one core, some twenty
minutes for a million passages. So the new index is made beside the one in use, committed a batch
at a time (a stopped upgrade goes on where it was, and memory stays flat: one transaction held a
million passages' terms in 6.7 GB), then put in its place in the upgrade's transaction. A large
index is analysed by worker processes, one a core (MeCab holds the GIL, so threads would not
help), while this process reads the next passages and writes the last ones' terms; and the
upgrade says how far it is on the library's log (`oboyu: ...` on stderr).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import duckdb

from oboyu.documents.keywords import counts_of
from oboyu.index.records import keyword_text
from oboyu.progress import format_duration

if TYPE_CHECKING:
    from concurrent.futures import Future

KEYWORD_BATCH = 4096  # passages read at a time, not every passage's text and terms held at once
POOL_FROM = 20_000  # passages; fewer are analysed here (a worker takes about a second to start)
MOST_WORKERS = 8
SAY_AFTER, SAY_EVERY = 2.0, 30.0  # seconds: a short upgrade says nothing, a long one every so often
_log = logging.getLogger(__name__)
NEXT = "_next"  # the suffix of the tables an upgrade fills beside the keyword index in use
_Terms = Callable[[], list[Counter[str]]]  # waits for the terms of a batch of texts


class KeywordStore(Protocol):
    """What the re-analysis uses of `store.Store`."""

    con: duckdb.DuckDBPyConnection

    def insert_keywords(self, counts: list[tuple[str, dict[str, int]]], tables: str = "") -> None: ...

    def _transaction(self) -> contextlib.AbstractContextManager[None]: ...


def make_keywords_beside(store: KeywordStore) -> None:
    """Every passage's keyword terms from its stored text, into kw_postings_next and
    kw_lengths_next, a batch at a time in id order, each batch committed: what a stopped upgrade
    made is kept, and it goes on after the last passage it wrote (the caller holds the file for
    writing, so the passages cannot change meanwhile). An earlier upgrade's tables that do not
    match the passages (an older oboyu wrote to the file in between) are made again."""
    con = store.con
    con.execute(f"CREATE TABLE IF NOT EXISTS kw_postings{NEXT} (chunk_id VARCHAR, term VARCHAR, tf INTEGER)")
    con.execute(f"CREATE TABLE IF NOT EXISTS kw_lengths{NEXT} (chunk_id VARCHAR, length INTEGER)")
    total = _count(con, "SELECT count(*) FROM chunks")
    done, last = con.execute(f"SELECT count(*), max(chunk_id) FROM kw_lengths{NEXT}").fetchone()  # type: ignore[misc]
    progress = _Progress(total, done)
    with _analysis(total - done) as analyse:
        waiting: deque[tuple[list[str], _Terms]] = deque()
        for ids, texts in _batches(con, last or ""):
            waiting.append((ids, analyse(texts)))
            if len(waiting) > 1:  # the workers analyse this batch while the last one is written
                _write(store, *waiting.popleft(), progress)
        while waiting:
            _write(store, *waiting.popleft(), progress)
    missing = f"SELECT count(*) FROM chunks c ANTI JOIN kw_lengths{NEXT} n ON n.chunk_id = c.id"
    if _count(con, f"SELECT count(*) FROM kw_lengths{NEXT}") != total or _count(con, missing):
        _log.warning("upgrading the index: the passages changed since an upgrade was stopped; starting it again")
        con.execute(f"DROP TABLE kw_postings{NEXT}")
        con.execute(f"DROP TABLE kw_lengths{NEXT}")
        make_keywords_beside(store)


def put_keywords_in_place(store: KeywordStore) -> None:
    """The keyword index `make_keywords_beside` made, in place of the one in use (the caller
    holds a transaction)."""
    for table in ("kw_postings", "kw_lengths"):
        store.con.execute(f"DROP TABLE IF EXISTS {table}")
        store.con.execute(f"ALTER TABLE {table}{NEXT} RENAME TO {table}")


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    return con.execute(sql).fetchone()[0]  # type: ignore[index]


def _batches(con: duckdb.DuckDBPyConnection, after: str) -> Iterator[tuple[list[str], list[str]]]:
    while rows := con.execute(
        "SELECT c.id, c.heading, d.title, c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE c.id > ? ORDER BY c.id LIMIT ?", [after, KEYWORD_BATCH]
    ).fetchall():
        yield [row[0] for row in rows], [keyword_text(title, heading, text) for _, heading, title, text in rows]
        after = rows[-1][0]


def _write(store: KeywordStore, ids: list[str], terms: _Terms, progress: _Progress) -> None:
    counts = terms()
    with store._transaction():
        store.insert_keywords([(cid, c) for cid, c in zip(ids, counts, strict=True)], tables=NEXT)
    progress.advance(len(ids))


@contextlib.contextmanager
def _analysis(total: int) -> Iterator[Callable[[list[str]], _Terms]]:
    """A function that starts the analysis of some texts and returns how to wait for their terms."""
    workers = min(_cores(), MOST_WORKERS)
    if total < POOL_FROM or workers < 2 or not _may_spawn():
        yield _here
        return
    # spawned, not forked: this process has DuckDB's threads running
    import multiprocessing  # read only by a large upgrade: not at every open
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:

        def start(texts: list[str]) -> _Terms:
            size = -(-len(texts) // workers)
            parts: list[Future[list[Counter[str]]]] = [pool.submit(counts_of, texts[i : i + size]) for i in range(0, len(texts), size)]
            return lambda: [counts for part in parts for counts in part.result()]

        yield start


def _here(texts: list[str]) -> _Terms:
    counts = counts_of(texts)
    return lambda: counts


def _may_spawn() -> bool:
    """Whether worker processes may be spawned here: each imports the main module again, which
    would run a script without a `__main__` guard a second time. oboyu's own commands and a
    session with no main file (a notebook, the REPL) may; a person's script calling the library
    analyses in its own process."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None:  # python -m ...
        return spec.name.partition(".")[0] == "oboyu"
    path = getattr(main, "__file__", None)
    return path is None or "oboyu" in (Path(path).stem, Path(sys.argv[0]).stem)  # the console script


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


class _Progress:
    """Lines on the library's log for an upgrade that takes a while: the first after SAY_AFTER
    seconds, then one every SAY_EVERY, and one at the end."""

    def __init__(self, total: int, done: int):
        self.total, self.done, self.before = total, done, done  # `before`: a stopped upgrade's
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
        rate = (self.done - self.before) / max(now - self.started, 1e-6)
        left = (self.total - self.done) / rate if rate else 0.0
        _log.warning(f"upgrading the index for this oboyu's keyword search (once): the words of {self.done:,} "
                     f"of {self.total:,} passages analysed again · {rate:,.0f}/s · ETA {format_duration(left)}")
