"""Indexing: crawl and compare with the index, then read, decode, extract and chunk in a reader
thread while the main thread embeds and stores, several files per batch so the model sees full,
length-sorted batches. A file that fails anywhere before storing is skipped with its reason."""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .chunking import CONTEXT_CHARS, Chunk, Chunker
from .crawl import DEFAULT_MAX_BYTES, FileEntry, Skipped, crawl, size_cap_reason
from .decoding import UndecodableError, decode
from .embedding import Embedder
from .extract import extract
from .progress import ProgressLine, format_duration
from .keywords import term_counts
from .store import ChunkRecord, DocumentRecord, Store, StoredFile, keyword_text

EMBED_GROUP_CHUNKS = 256  # chunks gathered from several files before one embedding call
QUEUE_FILES = 64


@dataclass
class IndexStats:
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0
    stopped: bool = False  # asked to stop before the end; what was stored is complete per file


@dataclass
class IndexProgress:
    files_done: int
    files_total: int
    chunks: int
    rate: float  # chunks per second
    eta: float  # seconds

    def line(self) -> str:
        return (
            f"indexing {self.files_done:,}/{self.files_total:,} files · {self.chunks:,} chunks · "
            f"{self.rate:.1f} chunks/s · ETA {format_duration(self.eta)}"
        )


@dataclass
class _Prepared:
    entry: FileEntry
    document: DocumentRecord
    chunks: list[Chunk]
    terms: list[Counter[str]]  # keyword index terms of each chunk
    is_new: bool


class _Touched:
    """A file whose stat changed but whose content did not."""

    def __init__(self, entry: FileEntry):
        self.entry = entry


def chunk_id(path: str, chunk: Chunk) -> str:
    key = f"{path}\0{chunk.start_char}\0{chunk.end_char}\0{chunk.text}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(key, digest_size=8).hexdigest()


def embedding_text(document: DocumentRecord, chunk: Chunk) -> str:
    """What the model reads for a chunk: its title and heading path (cut to CONTEXT_CHARS, which
    chunk sizes leave room for), then its text."""
    context = chunk.heading
    if document.title and not context.startswith(document.title):
        context = f"{document.title} > {context}" if context else document.title
    if len(context) > CONTEXT_CHARS:
        context = context[: CONTEXT_CHARS - 1] + "…"
    return f"{context}\n{chunk.text}" if context else chunk.text


def looks_binary(data: bytes) -> bool:
    head = data[:8192]
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf", b"\x00\x00\xfe\xff")):
        return False
    return b"\x00" in head


class Indexer:
    def __init__(self, store: Store, embedder: Embedder, progress: ProgressLine | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES, follow_symlinks: bool = False,
                 on_progress: Callable[[IndexProgress], None] | None = None, stop: threading.Event | None = None):
        """`on_progress` hears of each step; setting `stop` ends the run after the batch in hand."""
        self.store = store
        self.embedder = embedder
        self.progress = progress or ProgressLine(enabled=False)
        self.max_bytes = max_bytes
        self.follow_symlinks = follow_symlinks
        self.on_progress = on_progress
        self.stop = stop or threading.Event()
        self.chunker = Chunker(embedder.count_tokens, embedder.split_by_tokens)

    def index(self, roots: Iterable[Path]) -> IndexStats:
        started = time.perf_counter()
        stats = IndexStats()
        self.store.set_model(self.embedder.info.model_id, self.embedder.info.dimensions)
        roots = list(dict.fromkeys(Path(os.path.abspath(r)) for r in roots))
        found: dict[str, FileEntry] = {}  # by path, so overlapping roots list a file once
        skipped: dict[str, Skipped] = {}
        for item in crawl(roots, self.follow_symlinks, self.max_bytes):
            if isinstance(item, Skipped):
                skipped.setdefault(str(item.path), item)
            else:
                found.setdefault(str(item.path), item)
        stats.skipped.extend(skipped.values())
        stored: dict[str, StoredFile] = {}
        for root in roots:
            stored.update(self.store.files_under(str(root)))
        # files indexed before under these roots that are gone, now ignored or now skipped
        gone = [path for path in stored if path not in found]
        self.store.delete_paths(gone)
        stats.removed += len(gone)
        todo: list[tuple[FileEntry, StoredFile | None]] = []
        for path, entry in found.items():
            previous = stored.get(path)
            if previous is not None and (previous.size, previous.mtime_ns) == (entry.size, entry.mtime_ns):
                stats.unchanged += 1
            else:
                todo.append((entry, previous))
        self._process(todo, stats)
        stats.seconds = time.perf_counter() - started
        return stats

    def _process(self, todo: list[tuple[FileEntry, StoredFile | None]], stats: IndexStats) -> None:
        if not todo:
            return
        total_bytes = sum(e.size for e, _ in todo) or 1
        indexed_before = {str(e.path) for e, previous in todo if previous is not None}
        work: queue.Queue = queue.Queue(maxsize=QUEUE_FILES)
        errors: list[BaseException] = []
        reader_stop = threading.Event()

        def reader() -> None:
            try:
                for entry, previous in todo:
                    if reader_stop.is_set():
                        return
                    work.put(self._prepare(entry, previous))
            except BaseException as exc:  # surfaced in the main thread
                errors.append(exc)
            finally:
                work.put(None)

        thread = threading.Thread(target=reader, name="oboyu-reader", daemon=True)
        thread.start()
        started = time.perf_counter()
        done_files = done_bytes = 0
        pending: list[_Prepared] = []
        pending_chunks = 0
        finished = False
        try:
            while not finished:
                if self.stop.is_set():
                    stats.stopped = True
                    break
                item = work.get()
                batch_ready = False
                if item is None:
                    finished = True
                    batch_ready = True
                elif isinstance(item, Skipped):
                    stats.skipped.append(item)
                    done_files += 1
                    if str(item.path) in indexed_before:  # indexed before, unreadable now
                        self.store.delete_paths([str(item.path)])
                        stats.removed += 1
                elif isinstance(item, _Touched):
                    self.store.update_file_stat(str(item.entry.path), item.entry.size, item.entry.mtime_ns)
                    stats.unchanged += 1
                    done_files += 1
                    done_bytes += item.entry.size
                else:
                    pending.append(item)
                    pending_chunks += len(item.chunks)
                    batch_ready = pending_chunks >= EMBED_GROUP_CHUNKS or work.empty() and pending_chunks >= 32
                if batch_ready and pending:
                    self._embed_and_store(pending, stats)
                    done_files += len(pending)
                    done_bytes += sum(p.entry.size for p in pending)
                    pending, pending_chunks = [], 0
                elapsed = time.perf_counter() - started
                rate = stats.chunks / elapsed if elapsed > 0 else 0.0
                eta = elapsed * (total_bytes - done_bytes) / done_bytes if done_bytes else 0.0
                step = IndexProgress(done_files, len(todo), stats.chunks, rate, eta)
                self.progress.update(step.line())
                if self.on_progress is not None:
                    self.on_progress(step)
        finally:
            reader_stop.set()
            while thread.is_alive():  # let a blocked reader finish
                try:
                    work.get_nowait()
                except queue.Empty:
                    thread.join(0.05)
            self.progress.clear()
        if errors:
            raise errors[0]

    def _prepare(self, entry: FileEntry, previous: StoredFile | None) -> _Prepared | _Touched | Skipped:
        path = entry.path
        try:
            with open(path, "rb") as handle:
                data = handle.read(self.max_bytes + 1)
        except OSError as exc:
            return Skipped(path, f"cannot read: {exc.strerror or exc}")
        if len(data) > self.max_bytes:
            return Skipped(path, size_cap_reason(self.max_bytes))
        sha = hashlib.sha256(data).hexdigest()
        if previous is not None and previous.sha256 == sha:
            return _Touched(entry)
        if looks_binary(data):
            return Skipped(path, "binary file")
        try:
            decoded = decode(data)
        except UndecodableError as exc:
            return Skipped(path, f"cannot decode: {exc}")
        try:
            extracted = extract(decoded.text, entry.file_type)
            chunks = self.chunker.chunk(extracted)
        except Exception as exc:  # one malformed file must not stop the run
            return Skipped(path, f"cannot extract text: {type(exc).__name__}: {exc}")
        document = DocumentRecord(
            path=str(path), root=str(entry.root), size=entry.size, mtime_ns=entry.mtime_ns, sha256=sha,
            encoding=decoded.encoding, file_type=entry.file_type, title=extracted.title,
        )
        terms = [term_counts(keyword_text(document.title, c.heading, c.text)) for c in chunks]
        return _Prepared(entry, document, chunks, terms, is_new=previous is None)

    def _embed_and_store(self, prepared: list[_Prepared], stats: IndexStats) -> None:
        texts = [embedding_text(p.document, c) for p in prepared for c in p.chunks]
        vectors = self.embedder.embed_passages(texts)
        items, offset = [], 0
        for p in prepared:
            n = len(p.chunks)
            records = [
                ChunkRecord(chunk_id(p.document.path, c), c.ordinal, c.heading, c.start_line, c.end_line,
                            c.start_char, c.end_char, c.text, dict(terms))
                for c, terms in zip(p.chunks, p.terms)
            ]
            items.append((p.document, records, vectors[offset : offset + n]))
            offset += n
        self.store.write_documents(items)
        stats.chunks += len(texts)
        for p in prepared:
            if p.is_new:
                stats.added += 1
            else:
                stats.changed += 1
