"""An index kept open for a long-lived process (the app, the MCP server): searches rank from
memory, and the index file is opened only when it has changed on disk, briefly and read-only, so
that `oboyu index` in another process can take the write lock between queries. While another
process writes, unfiltered searches answer from the state last loaded and say so.

The same process may write too (the TUI's reindex): `writing()` hands out the writable Store and,
while it is open, readers read the committed state through a cursor of it. The app's indexer
takes it for each batch's write only, so other processes read between batches.

A large index's search arrays are made beside the process (`preparing`) while it answers from
the arrays it last loaded (or, at its start, an older generation's kept beside the index), or in
the index file when there are none.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from oboyu.errors import ArraysUnwritableError, IndexBusyError, OboyuError
from oboyu.index.arrays_cache import made_arrays
from oboyu.index.index_file import file_signature
from oboyu.index.records import RootSummary
from oboyu.index.store import Store, open_for_reading
from oboyu.models.embedding import Embedder
from oboyu.models.rerank import Reranker
from oboyu.modes import Mode
from oboyu.paths import disk_path, stored_path
from oboyu.search.filters import Filters
from oboyu.search.preparing import ArraysMaker, background_from_rows
from oboyu.search.query import Result, search
from oboyu.search.rankers import SqlRanker
from oboyu.search.resident import ResidentIndex

logger = logging.getLogger(__name__)
READ_WAIT_SECONDS = 0.5  # how long a query waits for another process's write lock


@dataclass
class Answer:
    results: list[Result]
    stale: bool = False  # another process is writing, or the arrays are being made: the last loaded state
    preparing: bool = False  # the index's search arrays are being made: answers are slower until they are


@dataclass
class IndexSummary:
    model: str | None
    documents: int
    chunks: int
    roots: list[RootSummary] = field(default_factory=list)
    embedded: int = 0  # chunks with their vector: meaning search reaches them


class LiveIndex:
    def __init__(self, db_path: Path, embedder: Embedder | None = None, reranker: Reranker | None = None,
                 read_wait: float = READ_WAIT_SECONDS):
        self.db_path = Path(db_path)
        self.read_wait = read_wait  # how long a query waits while another process writes
        self.embedder = embedder  # may arrive later (loaded in the background); keyword search needs none
        self.reranker = reranker  # reorders the best passages when given
        self.resident = ResidentIndex()
        self._seen: tuple | None = None  # file signature when the resident index was last checked
        self._lock = threading.RLock()  # opening connections; the writer's life
        self._searching = threading.Lock()  # one search at a time: the app's and a handed-off query's
        self._writer: Store | None = None
        self.unwritable: str | None = None  # why the search arrays cannot be made: rank in the file then
        self.maker = ArraysMaker(self.db_path)  # a large index's arrays, made beside this process
        weakref.finalize(self, self.maker.stop)

    def exists(self) -> bool:
        return self.db_path.exists()

    # --- access to the file ----------------------------------------------------------------

    @contextlib.contextmanager
    def reading(self) -> Iterator[Store]:
        """A read-only Store for a moment; raises IndexBusyError when another process writes
        for longer than `read_wait`."""
        with self._lock:
            if self._writer is not None:
                store = Store.reader_of(self._writer)
            else:
                store = open_for_reading(self.db_path, self.read_wait)
            try:
                yield store
            finally:
                store.close()

    @contextlib.contextmanager
    def writing(self) -> Iterator[Store]:
        """The writable Store for a moment (the app's indexer opens it for each batch); readers
        in this process go on meanwhile through a cursor of it."""
        with self._lock:
            if self._writer is not None:
                raise OboyuError("this index is already being updated")
            self.maker.stop()  # its reader would keep the writer out, and its generation is ending
            self._writer = Store.open_writer(self.db_path)
        try:
            yield self._writer
        finally:
            with self._lock:
                writer, self._writer = self._writer, None
                writer.close()

    def signature(self) -> tuple:
        """Cheap evidence of a change (`file_signature`)."""
        return file_signature(self.db_path)

    def refresh(self) -> bool:
        """Bring the in-memory index up to date; False when the last loaded state must do
        (another process holds the file, or this index's new arrays are being made)."""
        signature = self.signature()
        if self.maker.running():
            return self.resident.generation is None  # else the last loaded state answers
        if self.maker.finished():
            failure = self.maker.collect()
            if failure is not None:  # ranked in the file, tried again when the index changes
                logger.warning("the index's search arrays were not made (%s); searching the index file meanwhile", failure)
                self.unwritable, self._seen = failure, signature
                return True
            self._seen = None  # open what it made, or make the next generation's
        if signature == self._seen and (self.resident.generation is not None or self.unwritable is not None):
            return True
        try:
            with self.reading() as store:
                made = None
                if self._moved_and_large(store):
                    made = made_arrays(store)  # opened once: handed to the resident index below
                    if made is None:
                        self.maker.start()
                        self.unwritable, self._seen = None, signature
                        self.resident.open_last(store)  # a first start answers from an older generation's, if kept
                        return self.resident.generation is None
                self.resident.refresh(store, made)
            self.unwritable = None
        except IndexBusyError:
            if self.resident.generation is None:
                raise
            return False
        except ArraysUnwritableError as error:  # searches rank in the index file, tried again when it changes
            if self.unwritable is None:
                logger.warning("%s; searching the index file meanwhile", error)
            self.unwritable = str(error)
            self._seen = signature
            return True
        self._seen = signature
        return True

    def _moved_and_large(self, store: Store) -> bool:
        """Whether the store has a generation not loaded here, whose arrays, where not made yet,
        take more than a moment to make."""
        moved = (store.get_meta("generation") or "") != self.resident.generation
        return moved and store.counts()[1] >= background_from_rows()

    def _in_file(self) -> bool:
        """Whether searches rank in the index file: no arrays can be made, or none are loaded
        while they are made."""
        return self.unwritable is not None or (self.maker.running() and self.resident.generation is None)

    # --- what callers ask --------------------------------------------------------------------

    def search(self, query: str, mode: Mode = Mode.HYBRID, k: int = 10, filters: Filters | None = None,
               group: bool = True) -> Answer:
        if not self.exists():
            raise OboyuError(f"no index at {self.db_path}; add a folder first")
        with self._searching:
            if filters is None or filters.is_empty():
                fresh = self.refresh()
                if not self._in_file():
                    return Answer(search(self.resident, self.embedder, query, k, None, mode, group, self.reranker),
                                  stale=not fresh, preparing=self.maker.running())
            # the arrays in memory, when current, weigh each result against every file (`search`)
            try:
                everywhere = self.resident if self.refresh() and not self._in_file() else None
            except IndexBusyError:  # never loaded, and a writer holds the file: SQL weighs them
                everywhere = None
            with self.reading() as store:
                return Answer(search(SqlRanker(store), self.embedder, query, k, filters, mode, group, self.reranker,
                                     everywhere_ranker=everywhere), preparing=self.maker.running())

    def coverage(self) -> tuple[int, int]:
        """(passages with a vector, passages), from memory."""
        with self._searching:
            self.refresh()
            if self._in_file():
                with self.reading() as store:
                    return store.vector_coverage()
            return self.resident.embedded_rows, len(self.resident.has_vector)

    def file_roots(self) -> Mapping[str, str]:
        """Indexed file (as the system names it) -> its indexed folder, from memory when the
        index has not changed: a long-lived server answers without opening the index."""
        if not self.exists():
            return {}
        self.refresh()
        if self._in_file():
            with self.reading() as store:
                return _OnDisk(store.file_roots())
        return _OnDisk(self.resident.roots)

    def model_id(self) -> str | None:
        """The model the index was built with (None for a new index)."""
        if not self.exists():
            return None
        with self.reading() as store:
            return store.model_id()

    def summary(self) -> IndexSummary:
        if not self.exists():
            return IndexSummary(None, 0, 0)
        with self.reading() as store:
            documents, chunks = store.counts()
            embedded, _ = store.vector_coverage()
            return IndexSummary(store.model_id(), documents, chunks, store.root_summaries(), embedded)


class _OnDisk(Mapping[str, str]):
    """The index's file -> root map, looked up by the names results carry (a name that is not
    UTF-8 is held in the index's form): translated per lookup, not per file."""

    def __init__(self, stored: dict[str, str]):
        self.stored = stored

    def __getitem__(self, path: str) -> str:
        return self.stored[stored_path(path)]

    def __iter__(self) -> Iterator[str]:
        return map(disk_path, self.stored)

    def __len__(self) -> int:
        return len(self.stored)
