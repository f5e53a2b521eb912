"""Making an index's array folder (`oboyu.index.arrays`) from its DuckDB file, in full (an older
generation's folder is brought up to date instead where it can be: `arrays_update`).

Every table is read in slices of rows (or of terms, for the postings) and written into .npy files
with plain writes (a memory map would keep each page written in this process's resident memory),
with DuckDB's cache held to BUILD_MEMORY, so that making the arrays of a million passages never
holds them all in memory. It reads inside one transaction, one point in time, while an indexer in another process
waits. The caller (`arrays_cache`) writes it under a temporary name and renames it when complete.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
from numpy.lib import format as npy

from oboyu.errors import OboyuError
from oboyu.index.arrays import CODE_LIMIT, encoded, read_rows, write_meta
from oboyu.index.arrays_ann import make_graphs
from oboyu.index.store import Store

SLICE = 65_536  # rows a read
BUILD_MEMORY = "512MB"  # DuckDB's memory limit while it reads every table once
TERM_SLICES = 16  # the postings are read in this many runs of terms
# rows encoded or summed at once in float64: a slice's worth at once (65,536 rows) made ~1 GB of
# temporaries, which set the peak of the whole build (1.86 GB at a million passages)
ENCODE_ROWS = 8_192


def scan_model(dim: int) -> bytes:
    """The int8 scan's graph: a uint8 query (1, dim) times the int8 codes (dim, rows), exact in
    int32. No zero point: with one, the kernel sums every code column again each run (26 against
    11 ms at a million rows); each row's code sum, kept with the arrays, takes it out instead."""
    from onnx import TensorProto, helper

    node = helper.make_node("MatMulInteger", ["query", "codes"], ["product"])
    graph = helper.make_graph(
        [node], "int8_scan",
        [helper.make_tensor_value_info("query", TensorProto.UINT8, [1, dim]),
         helper.make_tensor_value_info("codes", TensorProto.INT8, [dim, None])],
        [helper.make_tensor_value_info("product", TensorProto.INT32, [1, None])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # onnxruntime 1.20, the oldest this package allows, reads it
    return model.SerializeToString()


@contextlib.contextmanager
def reading_once(store: Store) -> Iterator[duckdb.DuckDBPyConnection]:
    """The store's connection inside one transaction (one point in time: an indexer commits every
    few seconds), with DuckDB's memory held to BUILD_MEMORY while it reads every table once."""
    con = store.con
    limit = (con.execute("SELECT current_setting('memory_limit')").fetchone() or ("",))[0]
    con.execute(f"SET memory_limit = '{BUILD_MEMORY}'")
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    finally:
        con.execute("ROLLBACK")
        con.execute(f"SET memory_limit = '{limit}'" if limit else "RESET memory_limit")


def build_arrays(store: Store, folder: Path) -> str:
    """Write every array into `folder`; returns the generation they are of."""
    with reading_once(store) as con:
        generation = store.get_meta("generation") or ""
        con.execute("CREATE OR REPLACE TEMP TABLE chunk_rows AS SELECT id AS chunk_id, "
                    "(row_number() OVER (ORDER BY id) - 1)::INTEGER AS row FROM chunks")
        ids = con.execute("SELECT chunk_id FROM chunk_rows ORDER BY row").fetchnumpy()["chunk_id"]
        ids = ids.astype(str) if len(ids) else np.array([], dtype="U1")
        rows = len(ids)
        np.save(folder / "ids.npy", ids)
        documents = write_documents(con, folder)
        _chunks(con, folder, ids, documents)
        dim = int(store.get_meta("dimensions") or 0)
        _vectors(con, folder, ids, dim)
        _postings(con, folder)
        (folder / "scan.onnx").write_bytes(scan_model(max(dim, 1)))
        model_id = store.model_id()
        con.execute("DROP TABLE chunk_rows")
    make_graphs(folder)  # past the line only; outside DuckDB's transaction: an indexer need not wait for it
    write_meta(folder, generation, model_id, dim, rows, schema_version(store))
    return generation


def schema_version(store: Store) -> int:
    return int(store.get_meta("schema_version") or 0)


def write_documents(con: duckdb.DuckDBPyConnection, folder: Path) -> list[list]:
    """documents.json: [path, title, file_type, sha256, root, id] a document, by id."""
    documents = [list(doc) for doc in con.execute("SELECT path, title, file_type, sha256, root, id FROM documents ORDER BY id").fetchall()]
    (folder / "documents.json").write_text(json.dumps(documents), encoding="utf-8")
    return documents


def encode_rows(vectors: np.ndarray, centre: np.ndarray, embedded: np.ndarray) -> dict[str, np.ndarray]:
    """The int8 codes of these rows' residuals from `centre` (zero where not embedded), each
    row's scale, code sum, residual norm and code error; ENCODE_ROWS at a time."""
    parts = [_encoded(vectors[start:start + ENCODE_ROWS], centre, embedded[start:start + ENCODE_ROWS])
             for start in range(0, len(vectors), ENCODE_ROWS)] or [_encoded(vectors, centre, embedded)]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _encoded(vectors: np.ndarray, centre: np.ndarray, embedded: np.ndarray) -> dict[str, np.ndarray]:
    residual = vectors.astype(np.float64) - centre
    residual[~embedded] = 0.0
    step = np.abs(residual).max(axis=1) / CODE_LIMIT
    step[step == 0] = 1.0
    code = np.clip(np.rint(residual / step[:, None]), -CODE_LIMIT, CODE_LIMIT)
    return {"codes": code.astype(np.int8), "code_scale": step.astype(np.float32), "code_sum": code.sum(axis=1).astype(np.int32),
            "residual_norm": np.linalg.norm(residual, axis=1).astype(np.float32),
            "code_error": np.linalg.norm(residual - code * step[:, None], axis=1).astype(np.float32)}


class NpyFile:
    """An .npy file of a known shape, written in pieces at given element offsets."""

    def __init__(self, path: Path, dtype: type, shape: tuple[int, ...]):
        self.dtype = np.dtype(dtype)
        self.handle = open(path, "wb")  # noqa: SIM115 - closed on leaving the with block
        npy.write_array_header_1_0(self.handle, {"descr": npy.dtype_to_descr(self.dtype), "fortran_order": False,
                                                 "shape": shape})
        self.start = self.handle.tell()
        self.handle.truncate(self.start + self.dtype.itemsize * int(np.prod(shape)))

    def write_at(self, element: int, values: np.ndarray) -> None:
        self.handle.seek(self.start + element * self.dtype.itemsize)
        self.handle.write(np.ascontiguousarray(values, self.dtype).tobytes())

    def __enter__(self) -> NpyFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.handle.close()


def _slices(con, ids: np.ndarray, sql: str) -> Iterator[tuple[int, np.ndarray, dict]]:
    """`sql` (its WHERE clause left to add) run a slice of chunk ids at a time: (first row, the
    rows found, the columns). Filtering the table by id lets DuckDB skip the other slices' columns."""
    for start in range(0, len(ids), SLICE):
        end = min(start + SLICE, len(ids))
        where = "chunk_id >= ?" + (" AND chunk_id < ?" if end < len(ids) else "")
        found = con.execute(f"{sql} WHERE {where}", [ids[start], *([ids[end]] if end < len(ids) else [])]).fetchnumpy()
        keys = next(iter(found.values()))
        rows = start + np.searchsorted(ids[start:end], keys.astype(str) if len(keys) else np.array([], "U1"))
        yield start, rows, found


def _chunks(con, folder: Path, ids: np.ndarray, documents: list) -> None:
    """Display fields, keyword lengths and which rows lead their file (`documents`: the rows
    `write_documents` wrote)."""
    rows = len(ids)
    number = {doc[5]: i for i, doc in enumerate(documents)}
    document, places, leads = np.zeros(rows, np.int32), np.zeros((rows, 4), np.int32), np.zeros(rows, np.bool_)
    heading_at, text_at = np.zeros(rows + 1, np.int64), np.zeros(rows + 1, np.int64)
    sql = ("SELECT chunk_id, document_id, ordinal, start_line, end_line, page_start, page_end, heading, text "
           "FROM (SELECT id AS chunk_id, * FROM chunks)")
    with open(folder / "headings.bin", "wb") as headings, open(folder / "texts.bin", "wb") as texts:
        for start, found_rows, found in _slices(con, ids, sql):
            order = np.argsort(found_rows)
            if not np.array_equal(found_rows[order], np.arange(start, start + len(order))):
                raise OboyuError("the index changed while its search arrays were made; try again")
            document[found_rows] = [number[doc] for doc in found["document_id"].tolist()]
            places[found_rows, 0] = ints(found["start_line"], 0)
            places[found_rows, 1] = ints(found["end_line"], 0)
            places[found_rows, 2] = ints(found["page_start"], -1)
            places[found_rows, 3] = ints(found["page_end"], -1)
            leads[found_rows] = ints(found["ordinal"], -1) == 0
            for name, blob, at in (("heading", headings, heading_at), ("text", texts, text_at)):
                pieces = [encoded(value or "") for value in found[name][order].tolist()]
                blob.write(b"".join(pieces))
                at[start + 1:start + 1 + len(pieces)] = at[start] + np.cumsum([len(p) for p in pieces])
    for name in ("headings", "texts"):  # raw bytes as .npy: the header, then the bytes
        raw_to_npy(folder / f"{name}.bin", folder / f"{name}.npy")
    np.save(folder / "heading_at.npy", heading_at)
    np.save(folder / "text_at.npy", text_at)
    lengths = np.zeros(rows, np.float32)
    found = con.execute("SELECT r.row, k.length::FLOAT AS length FROM kw_lengths k JOIN chunk_rows r USING (chunk_id)").fetchnumpy()
    lengths[found["row"].astype(np.int64)] = found["length"]
    np.save(folder / "lengths.npy", lengths)
    for name, array in (("document", document), ("places", places), ("leads", leads)):
        np.save(folder / f"{name}.npy", array)


def ints(column: np.ndarray, missing: int) -> np.ndarray:
    """A fetched integer column (masked where NULL) with NULL as `missing`."""
    return np.ma.filled(np.ma.asarray(column).astype(np.int64), missing)


def raw_to_npy(raw: Path, target: Path) -> None:
    """A file of bytes as a uint8 .npy: the header, then the bytes."""
    with open(raw, "rb") as source, NpyFile(target, np.uint8, (raw.stat().st_size,)) as out:
        shutil.copyfileobj(source, out.handle, 1 << 24)
    raw.unlink()


def _vectors(con, folder: Path, ids: np.ndarray, dim: int) -> None:
    """The float32 vectors, their mean and second moment, then the int8 codes of their residuals."""
    rows, width = len(ids), max(dim, 1)
    embedded = np.zeros(rows, np.bool_)
    total, square, count = np.zeros(width), np.zeros((width, width)), 0
    with NpyFile(folder / "vectors.npy", np.float32, (rows, width)) as vectors:
        for start, at, found in _slices(con, ids, "SELECT chunk_id, vector FROM embeddings") if dim else []:
            block = np.zeros((min(SLICE, rows - start), width), np.float32)
            if len(at):
                block[at - start] = np.stack(list(found["vector"]))
                embedded[at] = True
                for first in range(0, len(at), ENCODE_ROWS):
                    wide = block[at[first:first + ENCODE_ROWS] - start].astype(np.float64)
                    total += wide.sum(axis=0)
                    square += wide.T @ wide
                count += len(at)
            vectors.write_at(start * width, block)
    np.save(folder / "embedded.npy", embedded)
    mean = total / count if count else total
    np.save(folder / "mean.npy", mean)
    np.save(folder / "centre.npy", mean)  # the codes' centre: kept by later updates (arrays_update)
    np.save(folder / "moment.npy", square / count if count else square)
    encoded_rows: dict[str, np.ndarray] = {name: np.zeros(rows, dtype) for name, dtype in
                                          (("code_scale", np.float32), ("code_sum", np.int32),
                                           ("residual_norm", np.float32), ("code_error", np.float32))}
    stored = np.load(folder / "vectors.npy", mmap_mode="r")
    with NpyFile(folder / "codes.npy", np.int8, (width, rows)) as codes:
        for start in range(0, rows, SLICE):
            end = min(start + SLICE, rows)
            block = read_rows(stored, start, end)  # read, not mapped: see NpyFile
            made = encode_rows(block, mean, embedded[start:end])
            for d, line in enumerate(made.pop("codes").T):
                codes.write_at(d * rows + start, line)
            for name, values in made.items():
                encoded_rows[name][start:end] = values
    del stored
    for name, array in encoded_rows.items():
        np.save(folder / f"{name}.npy", array)


def _postings(con, folder: Path) -> None:
    """Each term's postings, contiguous: terms numbered in DuckDB's order, read a run of terms at a
    time; and the terms' order by their bytes, which a query's binary search follows."""
    con.execute("CREATE OR REPLACE TEMP TABLE term_numbers AS SELECT term, (row_number() OVER (ORDER BY term) - 1)::INTEGER "
                "AS t FROM (SELECT DISTINCT term FROM kw_postings)")
    words = [encoded(t) for t in con.execute("SELECT term FROM term_numbers ORDER BY t").fetchnumpy()["term"].tolist()]
    (total,) = con.execute("SELECT count(*) FROM kw_postings JOIN chunk_rows USING (chunk_id)").fetchone()
    with NpyFile(folder / "posting_row.npy", np.int32, (total,)) as posting_row, \
            NpyFile(folder / "posting_tf.npy", np.float32, (total,)) as posting_tf:
        counts = _posting_runs(con, len(words), total, posting_row, posting_tf)
    write_terms(folder, words, counts)
    con.execute("DROP TABLE term_numbers")


def write_terms(folder: Path, words: list[bytes], counts: np.ndarray) -> None:
    """The terms (UTF-8, by number), their order by their bytes, and where each term's postings
    (counts[t] of them) start."""
    for name, sizes in (("term_at", [len(w) for w in words]), ("posting_at", counts)):
        at = np.zeros(len(words) + 1, np.int64)
        at[1:] = np.cumsum(sizes)
        np.save(folder / f"{name}.npy", at)
    np.save(folder / "terms.npy", np.frombuffer(b"".join(words), np.uint8))
    np.save(folder / "term_order.npy", np.array(sorted(range(len(words)), key=words.__getitem__), np.int32))


def _posting_runs(con, terms: int, total: int, posting_row: NpyFile, posting_tf: NpyFile) -> np.ndarray:
    """Write every posting, a run of terms at a time, in term order; each term's count."""
    counts = np.zeros(terms, np.int64)
    step = max(1, -(-terms // TERM_SLICES))
    at = 0
    for first in range(0, terms, step):
        last = min(first + step, terms)
        found = con.execute("SELECT n.t, r.row, p.tf::FLOAT AS tf FROM kw_postings p JOIN chunk_rows r USING (chunk_id) "
                            "JOIN term_numbers n USING (term) WHERE n.t >= ? AND n.t < ?", [first, last]).fetchnumpy()
        order = np.lexsort((found["row"], found["t"]))
        posting_row.write_at(at, found["row"][order])
        posting_tf.write_at(at, found["tf"][order])
        counts[first:last] = np.bincount(found["t"] - first, minlength=last - first)
        at += len(order)
    if at != total:
        raise OboyuError("the index changed while its search arrays were made; try again")
    return counts
