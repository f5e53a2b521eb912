"""The index as arrays on disk, for the long-lived processes (the app, MCP, `query --stdin`,
`oboyu serve`) and plain one-shot queries: one folder a generation beside the index file
(`NAME.duckdb.arrays/GENERATION/`; kept by `arrays_cache`, made by `arrays_build`, brought up to
date by `arrays_update`), memory-mapped. Opening a large index then reads only the pages a query
touches and holds no Python object per passage; the DuckDB file stays the one source of truth (a
missing, stale or damaged folder is made again).

Rows are chunks in chunk-id order. The vectors are kept twice: as float32, for exact scores, and
as int8 codes of each vector's difference from a centre (the mean vector when made; a scale a
row), transposed, which a query scans first; each row's residual norm and code error bound how
far the codes' score can be from the exact one, so rescoring the rows the bound cannot rule out
gives the float32 ranking.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import sys
import weakref
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from oboyu.index.records import SearchHit
from oboyu.paths import cache_dir

FORMAT = 2  # bumped when the files change: an older folder is made again
META = "meta.json"
CODE_LIMIT = 127  # codes lie in [-127, 127]
QUERY_LIMIT = 63  # a query's codes lie in [-63, 63], sent to the scan as 1..127 (ZERO_POINT added)
ZERO_POINT = 64
# madvise(MADV_DONTNEED) frees a map's pages on Linux; macOS's advice may keep them, Windows has none
PAGES_LET_GO = sys.platform.startswith("linux")
MAPPED_VECTORS_UP_TO = 128 * 2**20  # bytes (about 87,000 vectors of 384): kept mapped, read at once


@dataclass
class IndexArrays:
    folder: Path
    generation: str
    model_id: str | None
    dim: int
    schema: int  # the index's schema version when made: a migration rewrites rows in place
    ids: np.ndarray  # str (rows,): chunk ids, sorted
    document: np.ndarray  # int32: each row's document (an index into `documents`)
    documents: list[list]  # [path, title, file_type, sha256, root, id] a document, by id
    places: np.ndarray  # int32 (rows, 4): start_line, end_line, page_start, page_end (-1: none)
    heading_at: np.ndarray  # int64 (rows + 1): offsets into `headings`
    headings: np.ndarray  # uint8: UTF-8
    text_at: np.ndarray  # int64 (rows + 1): offsets into `texts`
    texts: np.ndarray  # uint8: UTF-8
    embedded: np.ndarray  # bool: the row has its vector (the rest wait for the meaning pass)
    leads: np.ndarray  # bool: the row is its file's first chunk
    lengths: np.ndarray  # float32: keyword terms per chunk
    vectors: np.memmap  # float32 (rows, dim); zeros where not embedded
    codes: np.ndarray  # int8 (dim, rows): round((vector - centre) / code_scale)
    code_scale: np.ndarray  # float32 (rows,)
    code_sum: np.ndarray  # int32 (rows,): the sum of the row's codes
    residual_norm: np.ndarray  # float32: |vector - centre|
    code_error: np.ndarray  # float32: |vector - centre - code_scale * codes|
    centre: np.ndarray  # float64 (dim,): what the codes are differences from (the mean when made)
    mean: np.ndarray  # float64 (dim,): mean of the embedded vectors
    moment: np.ndarray  # float64 (dim, dim): mean of v v^T over the embedded vectors
    term_order: np.ndarray  # int32: term numbers in the order of their UTF-8 bytes
    term_at: np.ndarray  # int64 (terms + 1): offsets into `terms`
    terms: np.ndarray  # uint8: UTF-8 of every term, by term number
    posting_at: np.ndarray  # int64 (terms + 1): each term's postings
    posting_row: np.ndarray  # int32
    posting_tf: np.ndarray  # float32
    # the vectors' file, held open from the start: another process may remove this generation's
    # folder once it has made a newer one, and an open file outlives that (the maps do too)
    vector_file: int = -1
    scan_model: bytes = b""  # the int8 scan's ONNX graph (search/int8_scan.py)
    _found: dict[str, int | None] = field(default_factory=dict, repr=False)

    @property
    def rows(self) -> int:
        return len(self.ids)

    @cached_property
    def roots(self) -> dict[str, str]:
        """Path of each indexed file -> its root."""
        return {doc[0]: doc[4] for doc in self.documents}

    def term_number(self, term: str) -> int | None:
        """The term's number (None when no chunk holds it): a binary search over the sorted bytes."""
        if term not in self._found:
            key, order = encoded(term), self.term_order
            low, high = 0, len(order)
            while low < high:
                middle = (low + high) // 2
                if self._term(int(order[middle])) < key:
                    low = middle + 1
                else:
                    high = middle
            found = int(order[low]) if low < len(order) and self._term(int(order[low])) == key else None
            if len(self._found) > 100_000:  # a long-lived process meets many words: keep the cache small
                self._found.clear()
            self._found[term] = found
        return self._found[term]

    def _term(self, number: int) -> bytes:
        return self.terms[self.term_at[number]:self.term_at[number + 1]].tobytes()

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, term frequencies) of the chunks that hold the term."""
        number = self.term_number(term)
        if number is None:
            return None
        start, end = int(self.posting_at[number]), int(self.posting_at[number + 1])
        return self.posting_row[start:end], self.posting_tf[start:end]

    def document_frequency(self, term: str) -> int:
        number = self.term_number(term)
        return 0 if number is None else int(self.posting_at[number + 1] - self.posting_at[number])

    def rows_of(self, ids: list[str]) -> dict[str, int]:
        """The rows of those of these chunks the index holds."""
        if not self.rows or not ids:
            return {}
        found = np.searchsorted(self.ids, ids).tolist()
        return {cid: row for cid, row in zip(ids, found) if row < self.rows and self.ids[row] == cid}

    def hit(self, row: int) -> SearchHit:
        path, title, file_type, sha256, *_ = self.documents[int(self.document[row])]
        start_line, end_line, page_start, page_end = (int(x) for x in self.places[row])
        return SearchHit(
            str(self.ids[row]), path, title, _slice(self.headings, self.heading_at, row), start_line, end_line,
            _slice(self.texts, self.text_at, row), None if page_start < 0 else page_start,
            None if page_end < 0 else page_end, file_type or "", sha256 or "",
        )

    def vector_rows(self, rows: np.ndarray) -> np.ndarray:
        """The float32 vectors of these rows: through the memory map where all the vectors take
        little memory; else through a map of their file whose pages are let go at once, so that
        rows read once a query do not stay in the process's resident memory."""
        if self.vectors.nbytes <= MAPPED_VECTORS_UP_TO:
            return np.asarray(self.vectors[rows])
        if (released := self._released_vectors) is not None:
            mapping, vectors = released
            out = vectors[rows]  # a copy (fancy indexing)
            mapping.madvise(mmap.MADV_DONTNEED)  # a file's pages: dropped from this process, kept in the page cache
            return out
        width = self.vectors.shape[1] * 4  # elsewhere: read row by row, 7x slower (2,400 rows: 4.7 ms)
        out = np.empty((len(rows), self.vectors.shape[1]), np.float32)
        for i, row in enumerate(rows.tolist()):
            out[i] = np.frombuffer(_read_at(self.vector_file, width, self.vectors.offset + row * width), np.float32)
        return out

    @cached_property
    def _released_vectors(self) -> tuple[mmap.mmap, np.ndarray] | None:
        """A map of the vectors' file of its own, for `vector_rows` to let go of its pages."""
        if not PAGES_LET_GO:
            return None
        mapping = mmap.mmap(self.vector_file, 0, access=mmap.ACCESS_READ)
        vectors = np.frombuffer(mapping, np.float32, self.vectors.size, self.vectors.offset).reshape(self.vectors.shape)
        return mapping, vectors

    def path_of(self, row: int) -> str:
        return self.documents[int(self.document[row])][0]


def read_rows(array: np.ndarray, start: int, end: int) -> np.ndarray:
    """Rows start..end of a memory-mapped .npy, read from its file rather than through the map
    (pages read once stay out of the process's resident memory)."""
    width = int(np.prod(array.shape[1:]))
    if end <= start:
        return np.zeros((0, *array.shape[1:]), array.dtype)
    offset = array.offset + start * width * array.dtype.itemsize  # type: ignore[attr-defined]
    with open(array.filename, "rb") as handle:  # type: ignore[attr-defined]
        return np.fromfile(handle, array.dtype, (end - start) * width, offset=offset).reshape(-1, *array.shape[1:])


def _read_at(fd: int, size: int, offset: int) -> bytes:
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)  # Windows: one search at a time reads (LiveIndex's lock)
    return os.read(fd, size)


def encoded(term: str) -> bytes:
    return term.encode("utf-8", "surrogatepass")


def _slice(blob: np.ndarray, at: np.ndarray, row: int) -> str:
    return blob[at[row]:at[row + 1]].tobytes().decode("utf-8", "surrogatepass")


# --- the files ------------------------------------------------------------------------------------

ARRAY_FILES = (
    "ids", "document", "places", "heading_at", "headings", "text_at", "texts", "embedded", "leads", "lengths",
    "vectors", "codes", "code_scale", "code_sum", "residual_norm", "code_error", "centre", "mean", "moment", "term_order", "term_at",
    "terms", "posting_at", "posting_row", "posting_tf",
)


def homes(db_path: Path) -> list[Path]:
    """Where an index's array folders may be: beside its file, else (a read-only folder) in the
    user's cache folder, under a name drawn from the index's full path."""
    key = hashlib.blake2b(str(db_path.resolve()).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return [db_path.with_name(db_path.name + ".arrays"), cache_dir() / "arrays" / key]


def open_arrays(folder: Path) -> IndexArrays | None:
    """The arrays in `folder`, memory-mapped; None when the folder is missing or not of this
    format (an older oboyu's, or left half-written)."""
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            return None
        loaded = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in ARRAY_FILES}
        documents = json.loads((folder / "documents.json").read_text(encoding="utf-8"))
        scan_model = (folder / "scan.onnx").read_bytes()
    except (OSError, ValueError):
        return None
    if any(len(loaded[name]) != meta["rows"] for name in ("ids", "document", "places", "embedded", "leads", "lengths")):
        return None  # damaged: made again
    arrays = IndexArrays(folder, meta["generation"], meta["model_id"], meta["dim"], meta["schema"], documents=documents,
                         scan_model=scan_model, **loaded)
    arrays.vector_file = os.open(folder / "vectors.npy", os.O_RDONLY | getattr(os, "O_BINARY", 0))
    weakref.finalize(arrays, os.close, arrays.vector_file)
    return arrays


def write_meta(folder: Path, generation: str, model_id: str | None, dim: int, rows: int, schema: int) -> None:
    """Written last: a folder without it is one whose writing stopped."""
    meta = {"format": FORMAT, "generation": generation, "model_id": model_id, "dim": dim, "rows": rows, "schema": schema}
    path = folder / META
    path.write_text(json.dumps(meta), encoding="utf-8")
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())
