"""One file made ready for the index: read, hashed, extracted, chunked and given its keyword
terms. The same function runs in the indexer's reader thread and on a cluster's workers
(oboyu.index.cluster), so both give the same rows."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oboyu.documents.chunking import Chunk, Chunker
from oboyu.documents.crawl import FileEntry, Skipped, size_cap_reason
from oboyu.documents.decoding import read_regular_file
from oboyu.documents.extract import extract_file
from oboyu.documents.extracted import Unextractable
from oboyu.documents.keywords import term_counts
from oboyu.index.chunk_cache import ChunkCache
from oboyu.index.records import DocumentRecord, StoredFile, keyword_text
from oboyu.models.embedding import Embedder
from oboyu.paths import stored_path, time_stamp


@dataclass
class Prepared:
    entry: FileEntry
    document: DocumentRecord
    chunks: list[Chunk]
    pages: list[tuple[int | None, int | None]]
    terms: list[Counter[str]]  # keyword index terms of each chunk
    is_new: bool
    content_changed: bool  # False for a file rebuilt by --full whose content is as indexed
    vectors: np.ndarray | None = None  # each chunk's vector from the embedding cache; NaN rows: still to make


@dataclass
class Touched:
    """A file whose stat changed but whose content did not."""

    entry: FileEntry


@dataclass
class Unindexable:
    """A file whose content cannot be indexed (encrypted, corrupt, no text): skipped, and
    remembered so that later updates pass it over until it changes."""

    entry: FileEntry
    reason: str

    @property
    def path(self) -> Path:
        return self.entry.path


@dataclass
class NotReadableHere:
    """A worker could not read the file as the indexer listed it (not mounted there, not allowed,
    another file at that path): the indexer reads it and sends its bytes."""

    entry: FileEntry
    previous: StoredFile | None


@dataclass
class Vanished:
    """A file the walk listed that was gone when it was read (deleted or moved during the run):
    not a problem to report, but a file removed; the next walk finds it where it went. A trial
    deleted 1,000 files while indexing and got 1,000 "cannot read" problems."""

    path: Path


Outcome = Prepared | Touched | Unindexable | Skipped | Vanished
Content = tuple[bytes, os.stat_result]  # a file's bytes and the stat of what was read


def read_file(entry: FileEntry, max_bytes: int) -> Content | Skipped | Vanished:
    try:
        return read_regular_file(entry.path, max_bytes)
    except FileNotFoundError:
        return Vanished(entry.path)
    except OSError as exc:
        return Skipped(entry.path, f"cannot read: {exc.strerror or exc}")


def prepare_file(entry: FileEntry, previous: StoredFile | None, embedder: Embedder, chunker: Chunker,
                 max_bytes: int, full: bool = False, bulk: bool = False, content: Content | None = None,
                 on_worker: bool = False, chunkings: ChunkCache | None = None) -> Outcome | NotReadableHere:
    """`entry` read (or its `content`, read by the indexer) and made into rows; `previous` is
    what the index holds for it. `bulk`: tokenize with the fast tokenizer (a large run);
    `chunkings`: where texts were cut before.
    `on_worker`: a file this machine cannot read, or finds with another size or time than the
    crawl saw, comes back as NotReadableHere."""
    if content is None:
        try:
            content = read_regular_file(entry.path, max_bytes)
        except OSError as exc:
            if on_worker:  # not there, not allowed, or failing on this machine: the indexer decides
                return NotReadableHere(entry, previous)
            if isinstance(exc, FileNotFoundError):
                return Vanished(entry.path)
            return Skipped(entry.path, f"cannot read: {exc.strerror or exc}")
        if on_worker and (content[1].st_size, time_stamp(content[1].st_mtime_ns)) != (entry.size, entry.mtime_ns):
            # another file at that path on this machine (a folder of the same name), another clock
            # on a network drive, or the file changed since the crawl: the indexer reads it itself
            return NotReadableHere(entry, previous)
    # the stat of what was read: a file changed while being read looks changed next run
    data, before = content
    path = entry.path
    if len(data) > max_bytes:
        return Skipped(path, size_cap_reason(max_bytes))
    entry = FileEntry(entry.path, entry.root, before.st_size, time_stamp(before.st_mtime_ns), entry.file_type)
    sha = hashlib.sha256(data).hexdigest()
    if previous is not None and previous.sha256 == sha and not full:
        return Touched(entry)
    try:
        extracted, encoding = extract_file(data, entry.file_type, path.name)
        chunks = chunkings.get(extracted) if chunkings is not None else None
        if chunks is None:
            if bulk:  # only to cut text anew: a checkout that changed no content loads nothing
                embedder.use_bulk_tokenizer()
            chunks = chunker.chunk(extracted)
            if chunkings is not None:
                chunkings.put(extracted, chunks)
    except Unextractable as exc:
        return Unindexable(entry, str(exc))
    except BaseException as exc:  # one malformed file must not stop the run (a reader's bug: tried again next time)
        # BaseException: a Rust library's panic (pyo3's PanicException) is not an Exception
        if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError)):
            raise
        return Skipped(path, f"cannot extract text: {type(exc).__name__}: {exc}")
    document = DocumentRecord(
        path=stored_path(path), root=str(entry.root), size=entry.size, mtime_ns=entry.mtime_ns, sha256=sha,
        encoding=encoding, file_type=entry.file_type, title=extracted.title,
    )
    pages = [extracted.parts_between(c.start_char, c.end_char) for c in chunks]
    try:
        terms = [term_counts(keyword_text(document.title, c.heading, c.text)) for c in chunks]
    except Exception as exc:  # the keyword tokenizer's bug on one file's text: that file waits, the run goes on
        return Skipped(path, f"cannot read its words: {type(exc).__name__}: {exc}")
    return Prepared(entry, document, chunks, pages, terms, is_new=previous is None,
                    content_changed=previous is None or previous.sha256 != sha)
