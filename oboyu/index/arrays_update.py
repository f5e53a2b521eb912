"""An index's arrays brought to a new generation from an older one's (`oboyu.index.arrays`):
the rows of files no write touched are copied from the old folder, and only the changed files'
rows are read from DuckDB, so that an `oboyu index` that changed a few files of a million
passages does not read the whole index again.

A row is carried when its chunk id, its document's id and whether it has its vector are all
unchanged: the store writes a changed file as a new document (a new id), a renamed one under new
chunk ids, and the meaning pass adds vectors to existing rows; a migration (another schema
version) or another model makes the arrays anew. The codes of new rows are differences from the
old folder's centre, which the error bound allows of any centre; the mean and second moment are
updated by subtracting the rows gone and adding the rows new. Old terms keep their numbers, new
ones are numbered after them, and a term no row holds any more stays with no postings (a full
build, when most rows change, drops them).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np

from oboyu.errors import OboyuError
from oboyu.index.arrays import IndexArrays, encoded, read_rows, write_meta
from oboyu.index.arrays_ann import make_graphs
from oboyu.index.arrays_build import (
    SLICE,
    NpyFile,
    encode_rows,
    ints,
    raw_to_npy,
    reading_once,
    schema_version,
    write_documents,
    write_terms,
)
from oboyu.index.columns import objects, registered
from oboyu.index.store import Store

UPDATE_UP_TO = 0.5  # beyond this share of rows new, a full build reads less


def update_arrays(store: Store, old: IndexArrays, folder: Path) -> str | None:
    """Write the arrays of the store's generation into `folder` from `old` and what changed;
    returns the generation, or None where a full build is the way (which writes over it)."""
    dim = int(store.get_meta("dimensions") or 0)
    if store.model_id() != old.model_id or dim != old.dim or schema_version(store) != old.schema:
        return None
    with reading_once(store) as con:
        generation = store.get_meta("generation") or ""
        found = con.execute("SELECT c.id, c.document_id, c.ordinal, e.chunk_id IS NOT NULL AS embedded FROM chunks c "
                            "LEFT JOIN embeddings e ON e.chunk_id = c.id ORDER BY c.id").fetchnumpy()
        ids = found["id"].astype(str) if len(found["id"]) else np.array([], "U1")
        embedded = np.asarray(found["embedded"], dtype=bool)
        documents = write_documents(con, folder)
        old_row = _carried(old, ids, found["document_id"].astype(np.int64), embedded, documents)
        fresh = np.flatnonzero(old_row < 0)
        if len(fresh) > UPDATE_UP_TO * max(len(ids), 1):
            return None
        number = {doc[5]: i for i, doc in enumerate(documents)}
        np.save(folder / "ids.npy", ids)
        np.save(folder / "document.npy", np.array([number[d] for d in found["document_id"].tolist()], np.int32))
        np.save(folder / "leads.npy", ints(found["ordinal"], -1) == 0)
        np.save(folder / "embedded.npy", embedded)
        if len(fresh):
            with registered(con, objects(ids[fresh].tolist())) as (name,):
                new = Fresh(con, name, ids, fresh, dim)
        else:
            new = Fresh(con, None, ids, fresh, dim)
        _rows(old, folder, old_row, new)
        _vectors(old, folder, old_row, embedded, new)
        _postings(old, folder, old_row, new)
        (folder / "scan.onnx").write_bytes(old.scan_model)
    make_graphs(folder, old.folder, old_row)
    write_meta(folder, generation, old.model_id, dim, len(ids), old.schema)
    return generation


def _carried(old: IndexArrays, ids: np.ndarray, documents: np.ndarray, embedded: np.ndarray,
             now: list[list]) -> np.ndarray:
    """Each row's row in `old` when carried, else -1. Its document must be the same row of the
    documents table, word for word (path, title, type, hash, root, id): a title is indexed with
    every passage of its file."""
    if not old.rows or not len(ids):
        return np.full(len(ids), -1, np.int64)
    at = np.minimum(np.searchsorted(old.ids, ids), old.rows - 1)
    current = {doc[5]: doc for doc in now}
    old_documents = np.array([doc[5] if current.get(doc[5]) == doc else -1 for doc in old.documents], np.int64)
    same = (old.ids[at] == ids) & (old_documents[np.asarray(old.document)[at]] == documents)
    same &= np.asarray(old.embedded)[at] == embedded
    return np.where(same, at, -1)


class Fresh:
    """What DuckDB holds of the rows not carried (a registered table of their chunk ids)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, name: str | None, ids: np.ndarray, fresh: np.ndarray, dim: int):
        self.rows = fresh
        if name is None:  # every row carried: an empty table of each
            name = "(SELECT NULL::VARCHAR AS column0 WHERE false)"
        chunks = con.execute(f"SELECT id, start_line, end_line, page_start, page_end, heading, text FROM chunks "
                             f"WHERE id IN (SELECT column0 FROM {name}) ORDER BY id").fetchnumpy()
        if len(chunks["id"]) != len(fresh) or (len(fresh) and not np.array_equal(chunks["id"].astype(str), ids[fresh])):
            raise OboyuError("the index changed while its search arrays were made; try again")
        self.places = np.stack([ints(chunks["start_line"], 0), ints(chunks["end_line"], 0), ints(chunks["page_start"], -1),
                                ints(chunks["page_end"], -1)], axis=1) if len(fresh) else np.zeros((0, 4), np.int64)
        self.headings = [encoded(h or "") for h in chunks["heading"].tolist()]
        self.texts = [encoded(t or "") for t in chunks["text"].tolist()]
        lengths = dict(con.execute(f"SELECT chunk_id, length FROM kw_lengths WHERE chunk_id IN (SELECT column0 FROM {name})").fetchall())
        self.lengths = np.array([lengths.get(cid, 0) for cid in ids[fresh].tolist()], np.float32)
        self.vectors = np.zeros((len(fresh), max(dim, 1)), np.float32)
        if dim:
            got = con.execute(f"SELECT chunk_id, vector FROM embeddings WHERE chunk_id IN (SELECT column0 FROM {name})").fetchnumpy()
            if len(got["chunk_id"]):
                self.vectors[np.searchsorted(ids[fresh], got["chunk_id"].astype(str))] = np.stack(list(got["vector"]))
        self.postings = con.execute(f"SELECT term, chunk_id, tf::FLOAT AS tf FROM kw_postings "
                                    f"WHERE chunk_id IN (SELECT column0 FROM {name})").fetchnumpy()
        self.posting_rows = fresh[np.searchsorted(ids[fresh], self.postings["chunk_id"].astype(str))] \
            if len(self.postings["chunk_id"]) else np.zeros(0, np.int64)


def _slices(rows: int) -> list[tuple[int, int]]:
    return [(start, min(start + SLICE, rows)) for start in range(0, rows, SLICE)]


def _gather(old_rows: np.ndarray, read) -> np.ndarray:
    """Old rows (increasing, >= 0) by one read of the span they lie in."""
    low, high = int(old_rows.min()), int(old_rows.max()) + 1
    return read(low, high)[old_rows - low]


def _rows(old: IndexArrays, folder: Path, old_row: np.ndarray, new: Fresh) -> None:
    """Places, keyword lengths, headings and texts: carried rows copied, fresh ones written."""
    rows = len(old_row)
    places, lengths = np.zeros((rows, 4), np.int32), np.zeros(rows, np.float32)
    fresh_at = {int(row): i for i, row in enumerate(new.rows.tolist())}
    for name, old_blob, old_at, fresh_values in (("headings", old.headings, old.heading_at, new.headings),
                                                  ("texts", old.texts, old.text_at, new.texts)):
        at = np.zeros(rows + 1, np.int64)
        with open(folder / f"{name}.bin", "wb") as blob:
            for start, end in _slices(rows):
                carried = old_row[start:end]
                kept = carried >= 0
                pieces: list[bytes] = [b""] * (end - start)
                if kept.any():
                    spans = np.asarray(old_at)
                    low, high = int(carried[kept].min()), int(carried[kept].max()) + 1
                    chunk = read_rows(old_blob, int(spans[low]), int(spans[high])).tobytes()
                    for i in np.flatnonzero(kept).tolist():
                        row = int(carried[i])
                        pieces[i] = chunk[spans[row] - spans[low]:spans[row + 1] - spans[low]]
                for i in np.flatnonzero(~kept).tolist():
                    pieces[i] = fresh_values[fresh_at[start + i]]
                blob.write(b"".join(pieces))
                at[start + 1:end + 1] = at[start] + np.cumsum([len(p) for p in pieces])
        raw_to_npy(folder / f"{name}.bin", folder / f"{name}.npy")
        np.save(folder / f"{name[:-1]}_at.npy", at)
    kept = old_row >= 0
    if kept.any():
        places[kept] = np.asarray(old.places)[old_row[kept]]
        lengths[kept] = np.asarray(old.lengths)[old_row[kept]]
    places[new.rows] = new.places
    lengths[new.rows] = new.lengths
    np.save(folder / "places.npy", places)
    np.save(folder / "lengths.npy", lengths)


def _vectors(old: IndexArrays, folder: Path, old_row: np.ndarray, embedded: np.ndarray, new: Fresh) -> None:
    """Vectors and codes, carried or made from the old centre; the mean and second moment."""
    rows, width = len(old_row), old.vectors.shape[1]
    count = int(np.asarray(old.embedded).sum())
    total, square = old.mean * count, old.moment * count
    gone = np.asarray(old.embedded).copy()  # rows no longer there, or no longer the same
    gone[old_row[old_row >= 0]] = False
    for start, end in _slices(old.rows):
        if gone[start:end].any():
            part = read_rows(old.vectors, start, end)[gone[start:end]].astype(np.float64)
            total, square, count = total - part.sum(axis=0), square - part.T @ part, count - len(part)
    made = new.vectors[embedded[new.rows]].astype(np.float64)
    total, square, count = total + made.sum(axis=0), square + made.T @ made, count + len(made)
    np.save(folder / "centre.npy", np.asarray(old.centre))
    np.save(folder / "mean.npy", total / count if count else np.zeros(width))
    np.save(folder / "moment.npy", square / count if count else np.zeros((width, width)))
    fresh_code = encode_rows(new.vectors, np.asarray(old.centre), embedded[new.rows])
    fresh_at = np.full(rows, -1, np.int64)
    fresh_at[new.rows] = np.arange(len(new.rows))
    per_row = {name: np.zeros(rows, values.dtype) for name, values in fresh_code.items() if name != "codes"}
    with NpyFile(folder / "vectors.npy", np.float32, (rows, width)) as vectors, \
            NpyFile(folder / "codes.npy", np.int8, (width, rows)) as codes:
        for start, end in _slices(rows):
            carried, mine = old_row[start:end], fresh_at[start:end]
            kept = carried >= 0
            block = np.zeros((end - start, width), np.float32)
            code = np.zeros((width, end - start), np.int8)
            if kept.any():
                block[kept] = _gather(carried[kept], lambda lo, hi: read_rows(old.vectors, lo, hi))
                low, high = int(carried[kept].min()), int(carried[kept].max()) + 1
                with open(old.codes.filename, "rb") as handle:  # type: ignore[attr-defined]
                    for d in range(width):
                        handle.seek(old.codes.offset + d * old.rows + low)  # type: ignore[attr-defined]
                        line = np.fromfile(handle, np.int8, high - low)
                        code[d, kept] = line[carried[kept] - low]
                for name in per_row:
                    per_row[name][start:end][kept] = np.asarray(getattr(old, name))[carried[kept]]
            made = mine >= 0
            block[made] = new.vectors[mine[made]]
            code[:, made] = fresh_code["codes"][mine[made]].T
            for name in per_row:
                per_row[name][start:end][made] = fresh_code[name][mine[made]]
            vectors.write_at(start * width, block)
            for d in range(width):
                codes.write_at(d * rows + start, code[d])
    for name, values in per_row.items():
        np.save(folder / f"{name}.npy", values)


def _postings(old: IndexArrays, folder: Path, old_row: np.ndarray, new: Fresh) -> None:
    """Old terms' postings with their rows renumbered (and those of rows gone dropped), each
    term's fresh postings merged in; then the new terms' postings."""
    renumber = np.full(old.rows, -1, np.int64)
    renumber[old_row[old_row >= 0]] = np.flatnonzero(old_row >= 0)
    blob, spans = read_rows(old.terms, 0, len(old.terms)).tobytes(), np.asarray(old.term_at).tolist()
    words = [blob[spans[t]:spans[t + 1]] for t in range(len(spans) - 1)]
    known = len(words)
    number = {word: t for t, word in enumerate(words)}
    fresh_terms = np.array([number.setdefault(encoded(term), len(number)) for term in new.postings["term"].tolist()], np.int64)
    words += sorted(number, key=number.__getitem__)[known:]
    order = np.lexsort((new.posting_rows, fresh_terms))
    fresh_terms, fresh_rows, fresh_tf = fresh_terms[order], new.posting_rows[order], new.postings["tf"][order]
    counts = np.zeros(len(words), np.int64)
    old_at = np.asarray(old.posting_at)
    kept_postings = sum(int((renumber[read_rows(old.posting_row, start, min(start + 16 * SLICE, len(old.posting_row)))] >= 0).sum())
                        for start in range(0, len(old.posting_row), 16 * SLICE))
    total = kept_postings + len(fresh_terms)
    with NpyFile(folder / "posting_row.npy", np.int32, (total,)) as posting_row, \
            NpyFile(folder / "posting_tf.npy", np.float32, (total,)) as posting_tf:
        written = 0
        step = max(1, SLICE // 16)
        for first in range(0, len(words), step):
            last = min(first + step, len(words))
            term_parts, row_parts, tf_parts = [], [], []
            if first < known:
                stop = min(last, known)
                begin, end = int(old_at[first]), int(old_at[stop])
                rows = renumber[read_rows(old.posting_row, begin, end)]
                terms = np.repeat(np.arange(first, stop), np.diff(old_at[first:stop + 1]))
                keep = rows >= 0
                term_parts.append(terms[keep])
                row_parts.append(rows[keep])
                tf_parts.append(read_rows(old.posting_tf, begin, end)[keep])
            lo, hi = np.searchsorted(fresh_terms, [first, last])
            term_parts.append(fresh_terms[lo:hi])
            row_parts.append(fresh_rows[lo:hi])
            tf_parts.append(fresh_tf[lo:hi])
            terms, rows, tf = (np.concatenate(parts) for parts in (term_parts, row_parts, tf_parts))
            merged = np.lexsort((rows, terms))
            posting_row.write_at(written, rows[merged])
            posting_tf.write_at(written, tf[merged])
            counts[first:last] = np.bincount(terms - first, minlength=last - first)
            written += len(merged)
    if written != total:
        raise OboyuError("the index's search arrays did not add up; remove their folder to make them anew")
    write_terms(folder, words, counts)

