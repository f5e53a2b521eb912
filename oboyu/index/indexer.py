"""Indexing: compare the disk with the index (`plan`); then the keyword pass, in which a reader
thread reads, extracts and chunks the files (oboyu.index.preparing) while the main thread stores
them a batch at a time; then the meaning pass, which embeds every passage still without a vector
(reusing the embedding cache) and stores the vectors a group at a time. With `workers` (a Ray
cluster) other processes prepare and embed; this one still plans, asks the cache and writes.

Every file's rows change in one transaction, and a file that fails anywhere before storing is
skipped with its reason. Given a path rather than an open Store, the indexer opens the index only
for each write, so queries from other processes get in between; a lock file keeps to one indexer
per index.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from oboyu.documents.chunking import Chunker
from oboyu.documents.crawl import DEFAULT_MAX_BYTES, FileEntry, JunkFolder, Skipped, reaches
from oboyu.errors import OboyuError
from oboyu.index.ahead import ahead, queued
from oboyu.index.chunk_cache import ChunkCache
from oboyu.index.embedding_cache import EmbeddingCache, Lookup, look_up
from oboyu.index.index_file import WritableIndex
from oboyu.index.isolation import UNEMBEDDABLE, attempt, embedded_alone, write_each_alone_on_refusal
from oboyu.index.lock import IndexLock
from oboyu.index.plan import OwnFiles, Part, Plan, compare, known_skips, stored_files
from oboyu.index.preparing import NotReadableHere, Outcome, Prepared, Touched, Unindexable, Vanished, prepare_file
from oboyu.index.records import ChunkRecord, DocumentRecord, KnownSkip, StoredFile, chunk_id, embedding_text
from oboyu.index.reports import IndexProgress, IndexStats, InHand
from oboyu.index.roots import checked_description
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.paths import disk_path, is_within, outermost, stored_path
from oboyu.progress import ProgressLine
from oboyu.text import visible

EMBED_GROUP_CHUNKS = 256  # chunks of the meaning pass embedded, and committed, together
FIRST_GROUP_CHUNKS = 32  # the first group, doubled up to EMBED_GROUP_CHUNKS: the first vectors land in a second
KEYWORD_BATCH_CHUNKS = 1024  # chunks of the keyword pass stored in one write ...
KEYWORD_COMMIT_SECONDS = 2.0  # ... or fewer, when this long has passed since the last write
QUEUE_FILES = 64
# the reading pass's ETA is extrapolated from bytes read once this share of them is: before, a few
# small files in front of a long one gave "ETA 160h" (their cost is per file, not per byte)
ETA_GROUNDED_SHARE = 0.01
# runs this large tokenize with the fast tokenizer, whose load (0.5 s, ~290 MB) a few files do not repay
BULK_TOKENIZER_FILES, BULK_TOKENIZER_PASSAGES = 100, 500


OnProgress = Callable[[IndexProgress], None]


@dataclass(frozen=True)
class PrepareSettings:
    max_bytes: int
    full: bool  # re-read and re-chunk files whose content is as indexed
    bulk: bool  # a large run: tokenize with the fast tokenizer


Tag = TypeVar("Tag")
Todo = list[tuple[FileEntry, StoredFile | None]]


class Workers(Protocol):
    """Other processes that prepare files and embed passages for this indexer (a Ray cluster:
    oboyu.index.cluster); the indexer alone plans and writes."""

    def prepared(self, todo: Todo, settings: PrepareSettings,
                 stop: threading.Event) -> contextlib.AbstractContextManager[Iterator[Outcome]]:
        """Each file's outcome, in the order they finish, until `stop` is set; leaving the block
        drops unfinished work."""
        ...

    def embedded(self, groups: Iterator[tuple[Tag, list[str]]]) -> Iterator[tuple[Tag, np.ndarray]]:
        """Each group's vectors (its texts as the model reads them), in the order they finish;
        groups are drawn only as there is room for them."""
        ...


_NOTHING_YET = object()  # the reader had no file ready within KEYWORD_COMMIT_SECONDS


class Indexer:
    def __init__(self, index: WritableIndex, embedder: Embedder, *, progress: ProgressLine | None = None,
                 on_progress: OnProgress | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 follow_symlinks: bool = False, stop: threading.Event | None = None,
                 cache: EmbeddingCache | None = None, full: bool = False, workers: Workers | None = None):
        """`index`: a Store, an IndexFile or a LiveIndex (`WritableIndex`). Each step is drawn on `progress` and
        told to `on_progress`. Setting `stop` ends the run after the batch in hand. `cache` supplies and keeps
        vectors; `full` re-reads and re-chunks every file; `workers` prepare and embed in other processes."""
        self.target = index
        self.index_path = index.db_path
        self.own = OwnFiles.of(self.index_path)  # the index's own files, never indexed
        self._store_lock = threading.Lock()  # the meaning pass reads its next group while it writes the last
        self.embedder = embedder
        self.progress = progress or ProgressLine(enabled=False)
        self.on_progress = on_progress
        self.max_bytes = max_bytes
        self.follow_symlinks = follow_symlinks
        self.stop = stop or threading.Event()
        self.cache = cache
        self.full = full
        self.workers = workers
        self.chunker = Chunker(embedder.count_tokens, embedder.split_by_tokens)
        self.chunkings = ChunkCache(cache, embedder.info.model_id, self.chunker) if cache is not None else None
        self._known_skips: dict[str, KnownSkip] = {}  # this run's remembered unindexable files
        self._bulk_wanted = False  # this run is large enough for the fast tokenizer
        self._vectors_missing = 0  # chunks waiting for their vector: none, and the meaning pass has nothing to look for
        self._in_hand: InHand | None = None  # the file the reader thread is on

    # --- what callers ask ----------------------------------------------------------------------

    def index(self, paths: Iterable[Path], name: str | None = None, description: str | None = None) -> IndexStats:
        """Index files and folders: a path outside every root becomes a root (named `name`, or
        its folder's name); a path inside one updates that part of it. `description` is the
        root's ("" clears it)."""
        paths = list(dict.fromkeys(Path(os.path.abspath(p)) for p in paths))
        if (name is not None or description is not None) and len(paths) != 1:
            raise OboyuError(f"a {'name' if name is not None else 'description'} goes with exactly one folder")
        if name is not None and not name.strip():
            raise OboyuError("a folder's name cannot be empty")
        if description is not None:
            checked_description(description)  # a bad one fails before any work

        def parts_of(store: Store, stats: IndexStats) -> list[Part]:
            parts = []
            for path in paths:
                root = store.root_holding(str(path))
                if root is not None and root.path == str(path) and not path.exists():
                    stats.removed += store.remove_root(root.path)  # a root deleted from disk leaves
                    continue
                if root is None and not path.exists():
                    stats.skipped.append(Skipped(path, "no such file or folder"))
                    continue
                if root is None and not (path.is_file() or path.is_dir()):  # a device, FIFO or socket: no root
                    stats.skipped.append(Skipped(path, "not a regular file or folder"))
                    continue
                is_root = root is not None and root.path == str(path)
                if root is not None and not is_root and not reaches(Path(root.path), path, root.follow_symlinks):
                    root = None  # a folder its root's walk leaves out (junk, hidden): named, it is indexed on its own
                if (name is not None or description is not None) and root is not None and not is_root:
                    option = "--name names" if name is not None else "--describe describes"
                    raise OboyuError(f"{path} is inside the indexed folder {root.name} ({root.path}); "
                                     f"{option} a folder indexed on its own")
                if root is None or (is_root and (name or (self.follow_symlinks and not root.follow_symlinks))):
                    follow = self.follow_symlinks or (is_root and root is not None and root.follow_symlinks)
                    if stored_path(path) != str(path):  # roots are kept by the name the system gives
                        raise OboyuError(f"{visible(str(path))}: a name that is not UTF-8 cannot be a folder of its own; "
                                         "index the folder that holds it")
                    root = store.add_root(str(path), name, follow)
                if description is not None:
                    root = store.describe_root(root, description)
                parts.append(Part(root, path))
            return parts

        return self._run(parts_of)

    def update(self, names: Iterable[str] = ()) -> IndexStats:
        """Update every root (or those named: names or paths). A root missing from disk (an
        unmounted drive) keeps its rows and is reported; `remove` drops it."""
        return self._run(lambda store, stats: self._root_parts(store, names, stats))

    def update_paths(self, paths: Iterable[Path]) -> IndexStats:
        """Bring these paths (files or folders, present or gone) up to date: what a watcher
        calls with the paths that changed. Paths outside every root are ignored."""

        def parts_of(store: Store, stats: IndexStats) -> list[Part]:
            parts = []
            for path in outermost(Path(os.path.abspath(p)) for p in paths):
                root = store.root_holding(str(path))
                # a root gone from disk (an unmounted drive) keeps its rows, as in update()
                if root is not None and os.path.exists(root.path):
                    parts.append(Part(root, path))
            return parts

        return self._run(parts_of)

    def plan(self, names: Iterable[str] = ()) -> Plan:
        """What `update(names)` would change, content hashes compared; writes nothing."""
        with self._reading() as store:
            stats = IndexStats()
            parts = self._root_parts(store, names, stats)
            stored = stored_files(store, parts)
            known = known_skips(store, parts)
        plan = compare(stored, parts, self.max_bytes, self.full, hash_changed=True, known=known, own=self.own)
        plan.missing_roots = stats.missing_roots
        return plan

    # --- the run --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _open(self) -> Iterator[Store]:
        """The index, writable, for one step; one thread at a time."""
        with self._store_lock, self.target.writing() as store:
            yield store

    def _reading(self) -> contextlib.AbstractContextManager[Store]:
        return self.target.reading()

    def _run(self, parts_of: Callable[[Store, IndexStats], list[Part]]) -> IndexStats:
        """Under the indexer lock: choose the parts to compare, plan, apply."""
        with IndexLock(self.index_path), contextlib.ExitStack() as after:
            # the fast tokenizer's 280 MB are for a large run, not for the queries of a long-lived process
            after.callback(self.embedder.drop_bulk_tokenizer)
            stats = IndexStats()
            started = time.perf_counter()
            with self._open() as store:
                store.set_model(self.embedder.info.model_id, self.embedder.info.dimensions)
                parts = parts_of(store, stats)  # first: an unknown folder's name is no run cut short
                store.mark_run(started=True)
                stored = stored_files(store, parts)
                self._known_skips = known_skips(store, parts)
                recorded = store.left_out()  # every root's, so also the indexed folders
                embedded, chunks = store.vector_coverage()
                self._vectors_missing = chunks - embedded  # an interrupted run's, to make in this one
            # opened per write, the file is closed while the disk is walked and hashed: readers get in
            plan = compare(stored, parts, self.max_bytes, self.full, known=self._known_skips, own=self.own)
            # a junk folder indexed on its own is not left out: its own root walks it
            plan.skipped = [s for s in plan.skipped if stored_path(s.path) not in recorded]
            self._apply(plan, stats)
            junk = [stored_path(s.path) for s in plan.skipped if isinstance(s, JunkFolder)]
            changed = {}
            for part in parts:  # a whole root's walk says what it left out; written only when that changed
                root = part.root.path
                if str(part.path) == root:
                    left_out = sorted(folder for folder in junk if is_within(folder, root))
                    if left_out != sorted(recorded.get(root, [])):
                        changed[root] = left_out
            with self._open() as store:
                for root, left_out in changed.items():
                    store.set_left_out(root, left_out)
                store.mark_run(started=stats.stopped)  # a run asked to stop is unfinished too
            stats.seconds = time.perf_counter() - started
            return stats

    def _root_parts(self, store: Store, names: Iterable[str], stats: IndexStats) -> list[Part]:
        names = list(names)
        if names:
            roots = store.roots_named(names)
        else:
            roots = store.roots()
            if not roots:
                raise OboyuError("no folders are indexed yet; run `oboyu index PATH` first")
        parts = []
        for root in roots:
            if os.path.exists(root.path):
                parts.append(Part(root, Path(root.path)))
            else:
                stats.missing_roots.append(root)
        return parts

    def _apply(self, plan: Plan, stats: IndexStats) -> None:
        stats.found_skipped(plan.skipped)
        stats.unchanged += plan.unchanged
        if plan.renamed or plan.removed or plan.forgotten or plan.walk_problems:
            with self._open() as store:
                store.move_documents(plan.renamed)
                store.delete_paths(plan.removed)
                store.remember_skipped([(path, root, KnownSkip(-1, 0, reason)) for path, root, reason in plan.walk_problems],
                                       plan.forgotten)
            stats.renamed += len(plan.renamed)
            stats.removed += len(plan.removed)
        todo: list[tuple[FileEntry, StoredFile | None]] = [(entry, None) for entry in plan.added]
        self._process(todo + list(plan.changed), stats)
        if not stats.stopped and self._vectors_missing:
            self._embed_missing(stats)

    def _process(self, todo: list[tuple[FileEntry, StoredFile | None]], stats: IndexStats) -> None:
        """The keyword pass: read, extract and chunk the files, store them with their keyword
        terms (and the vectors the cache has) a batch at a time, committed at least every
        KEYWORD_COMMIT_SECONDS: keyword search finds a file soon after the run reaches it."""
        if not todo:
            return
        self._bulk_wanted = len(todo) >= BULK_TOKENIZER_FILES  # loaded by the first file that is chunked
        total_bytes = sum(e.size for e, _ in todo) or 1
        indexed_before = {stored_path(e.path) for e, previous in todo if previous is not None}
        entries = {stored_path(e.path): e for e, _ in todo}
        started = last_write = time.perf_counter()
        done_files = done_bytes = chunks_read = 0
        pending: list[Prepared] = []
        touched: list[FileEntry] = []
        unreadable: list[str] = []  # indexed before, unreadable now: their old text must go
        unindexable: list[Unindexable] = []
        pending_chunks = 0

        def report() -> None:
            elapsed = time.perf_counter() - started
            rate = chunks_read / elapsed if elapsed > 0 else 0.0
            grounded = done_bytes >= ETA_GROUNDED_SHARE * total_bytes
            eta = elapsed * (total_bytes - done_bytes) / done_bytes if grounded and done_bytes else None
            in_hand = self._in_hand
            note = in_hand.note(time.perf_counter()) if in_hand is not None else ""
            self._report(IndexProgress(done_files, len(todo), chunks_read, rate, eta, in_hand=note))

        try:
            with self._reader(todo) as work:
                while True:
                    if self.stop.is_set():
                        stats.stopped = True
                        break
                    try:
                        item = work.get(timeout=KEYWORD_COMMIT_SECONDS)
                    except queue.Empty:  # a slow file: what is read so far gets searchable meanwhile
                        item = _NOTHING_YET
                    done_files += isinstance(item, (Skipped, Unindexable, Touched, Prepared, Vanished))
                    if isinstance(item, Vanished):
                        if stored_path(item.path) in indexed_before:
                            unreadable.append(stored_path(item.path))  # its rows go: counted as removed
                    elif isinstance(item, (Skipped, Unindexable)):
                        stats.skipped.append(Skipped(item.path, item.reason))
                        if stored_path(item.path) in indexed_before:
                            unreadable.append(stored_path(item.path))
                        entry = item.entry if isinstance(item, Unindexable) else entries.get(stored_path(item.path))
                        if entry is not None:  # remembered, with its reason, for `status` and the next run
                            unindexable.append(Unindexable(entry, item.reason))
                    elif isinstance(item, Touched):
                        touched.append(item.entry)
                        done_bytes += item.entry.size
                    elif isinstance(item, Prepared):
                        pending.append(item)
                        pending_chunks += len(item.chunks)
                        chunks_read += len(item.chunks)
                        done_bytes += item.entry.size
                    due = (item is None or pending_chunks >= KEYWORD_BATCH_CHUNKS
                           or time.perf_counter() - last_write >= KEYWORD_COMMIT_SECONDS)
                    if due and (pending or touched or unreadable or unindexable):
                        self._store_batch(pending, touched, unreadable, unindexable, stats)
                        pending, touched, unreadable, unindexable, pending_chunks = [], [], [], [], 0
                        last_write = time.perf_counter()
                    report()
                    if item is None:
                        break
                if stats.stopped and (touched or unreadable or unindexable):  # finished work is kept
                    self._store_batch([], touched, unreadable, unindexable, stats)
        finally:
            self.progress.clear()

    def _embed_missing(self, stats: IndexStats) -> None:
        """The meaning pass: vectors for every chunk of the index that has none (this run's new
        text, and what an interrupted run left), in groups (`group_bounds`), each group's
        vectors committed together. Setting `stop` ends it after the group in hand; the next
        run goes on from there."""
        with self._open() as store:
            waiting = store.chunks_without_vectors()
            embedded_before, total = store.vector_coverage()
        if not waiting:
            return
        if len(waiting) >= BULK_TOKENIZER_PASSAGES and self.workers is None:
            self.embedder.use_bulk_tokenizer()
        had = f"; {embedded_before:,} of the index's {total:,} have theirs" if embedded_before else ""
        self.progress.message(f"keyword search is ready; making the vectors of {len(waiting):,} "
                              f"passage{'' if len(waiting) == 1 else 's'} "
                              f"(meaning search reaches each as it is made{had})", of_progress=True)
        started = time.perf_counter()
        done = 0

        def report() -> None:
            elapsed = time.perf_counter() - started
            rate = done / elapsed if elapsed > 0 else 0.0
            eta = (len(waiting) - done) / rate if rate > 0 else None
            self._report(IndexProgress(0, 0, done, rate, eta, phase="meaning",
                                       vectors_done=embedded_before + done, vectors_total=total))

        def groups() -> Iterator[tuple[tuple[list[str], Lookup], list[str]]]:
            """Each group's chunk ids and what the cache holds for them, with the texts still to embed."""
            for start, end in group_bounds(len(waiting)):
                if self.stop.is_set():
                    stats.stopped = True
                    return
                ids = waiting[start:end]
                with self._open() as store:
                    inputs = store.embedding_inputs(ids)
                ids = [cid for cid in ids if cid in inputs]
                lookup = look_up(self.embedder, [embedding_text(*inputs[cid]) for cid in ids], self.cache)
                yield (ids, lookup), list(lookup.missing.values())

        try:
            report()
            for (ids, lookup), fresh in self._embedded(groups()):
                vectors = lookup.fill(fresh, self.cache, self.embedder.info.model_id)
                failed = np.isnan(vectors).any(axis=1)  # a text the engine failed on alone
                with self._open() as store:
                    store.add_vectors([cid for cid, bad in zip(ids, failed) if not bad], vectors[~failed])
                    if failed.any():
                        for path in store.skip_documents_of([cid for cid, bad in zip(ids, failed) if bad], UNEMBEDDABLE):
                            stats.skipped.append(Skipped(Path(disk_path(path)), UNEMBEDDABLE))
                stats.count_embedded(lookup)
                done += len(ids)
                report()
            stats.stopped |= done < len(waiting) and self.stop.is_set()
        finally:
            self.progress.clear()

    def _embedded(self, groups: Iterator[tuple[Tag, list[str]]]) -> Iterator[tuple[Tag, np.ndarray]]:
        if self.workers is not None:
            yield from self.workers.embedded(groups)
            return
        # the next group is read, looked up and tokenized in another thread while the engine (which
        # lets go of the GIL) embeds this one: 1.3 s of a 36 s cold index of 150 files, hidden
        tokenized = ((tag, texts, attempt(self.embedder.token_ids, texts)) for tag, texts in groups)
        for tag, texts, token_ids in ahead(tokenized):
            if self.stop.is_set():  # the group read ahead waits for the next run
                return
            vectors = attempt(self.embedder.embed_ids, token_ids) if not isinstance(token_ids, Exception) else token_ids
            yield tag, vectors if not isinstance(vectors, Exception) else embedded_alone(self.embedder, texts, vectors)

    def _report(self, step: IndexProgress) -> None:
        self.progress.update(step.line())
        if self.on_progress is not None:
            self.on_progress(step)

    def _reader(self, todo: list[tuple[FileEntry, StoredFile | None]]) -> contextlib.AbstractContextManager[queue.Queue]:
        """A thread preparing the files into a bounded queue, ended by None; its error is raised
        here when the caller is done."""
        stop = threading.Event()

        def read() -> Iterator[Outcome]:
            with self._outcomes(todo, stop) as outcomes:  # `stop`: set as the caller leaves
                for outcome in outcomes:
                    if isinstance(outcome, Prepared):
                        # looked up here, in the reader thread: in the main thread each row fetched
                        # waited for the GIL this thread holds (1.2 s of a 3.9 s warm re-index of 150 files)
                        outcome.vectors = look_up(self.embedder, [embedding_text(outcome.document.title, c.heading, c.text)
                                                                  for c in outcome.chunks], self.cache).vectors
                    yield outcome

        return queued(read(), QUEUE_FILES, stop)

    def _outcomes(self, todo: Todo, stop: threading.Event) -> contextlib.AbstractContextManager[Iterator[Outcome]]:
        if self.workers is not None:
            return self.workers.prepared(todo, PrepareSettings(self.max_bytes, self.full, self._bulk_wanted), stop)
        # `stop` looked at before each file: a stopped run reads no file more
        return contextlib.nullcontext(self._prepare(entry, previous) for entry, previous in todo if not stop.is_set())

    def _prepare(self, entry: FileEntry, previous: StoredFile | None) -> Outcome:
        self._in_hand = InHand(entry.path, entry.size, time.perf_counter())
        outcome = prepare_file(entry, previous, self.embedder, self.chunker, self.max_bytes, self.full, self._bulk_wanted,
                               chunkings=self.chunkings)
        assert not isinstance(outcome, NotReadableHere)  # only a worker's
        self._in_hand = None
        return outcome

    def _store_batch(self, prepared: list[Prepared], touched: list[FileEntry], unreadable: list[str],
                     unindexable: list[Unindexable], stats: IndexStats) -> None:
        """One write of the keyword pass: the files' documents, chunks and keyword terms, with the
        vectors the cache holds (the rest wait for the meaning pass)."""
        items = []
        for p in prepared:
            items.append(self._rows_of(p, stats))
        with self._open() as store:
            prepared, refused = write_each_alone_on_refusal(store, items, prepared)
            stats.skipped += [Skipped(r.path, r.reason) for r in refused]
            unindexable = unindexable + refused
            store.update_file_stats([(stored_path(e.path), e.size, e.mtime_ns) for e in touched])
            store.delete_paths(unreadable)
            # a file remembered as unindexable that reads now is forgotten
            indexed_now = [p.document.path for p in prepared if p.document.path in self._known_skips]
            store.remember_skipped([(stored_path(u.entry.path), str(u.entry.root), KnownSkip(u.entry.size, u.entry.mtime_ns, u.reason))
                                    for u in unindexable], indexed_now)
        stats.unchanged += len(touched)
        stats.removed += len(unreadable)
        for p in prepared:
            if p.is_new:
                stats.added += 1
            elif p.content_changed:
                stats.changed += 1
            else:  # rebuilt by --full, its content as it was
                stats.unchanged += 1

    def _rows_of(self, p: Prepared, stats: IndexStats) -> tuple[DocumentRecord, list[ChunkRecord], np.ndarray]:
        """A prepared file's rows: its document, chunks and the vectors the cache held."""
        records = [
                ChunkRecord(chunk_id(p.document.path, c.start_char, c.end_char, c.text), c.ordinal, c.heading,
                            c.start_line, c.end_line, c.start_char, c.end_char, c.text, dict(terms), pages[0], pages[1])
                for c, terms, pages in zip(p.chunks, p.terms, p.pages)
            ]
        vectors = p.vectors if p.vectors is not None else np.full((len(records), self.embedder.info.dimensions), np.nan, np.float32)
        missing = int(np.isnan(vectors).any(axis=1).sum())
        stats.reused += len(records) - missing
        self._vectors_missing += missing
        return p.document, records, vectors


def group_bounds(count: int) -> Iterator[tuple[int, int]]:
    """The meaning pass's groups of `count` chunks, as (start, end): FIRST_GROUP_CHUNKS, doubling
    to EMBED_GROUP_CHUNKS. A run of 180 passages made them in one group, so search reached none
    until the last was made, and Ctrl+C at any moment before kept none of them."""
    start, size = 0, min(FIRST_GROUP_CHUNKS, EMBED_GROUP_CHUNKS)
    while start < count:
        yield start, min(start + size, count)
        start, size = start + size, min(2 * size, EMBED_GROUP_CHUNKS)
