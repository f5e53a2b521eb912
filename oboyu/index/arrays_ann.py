"""An approximate nearest-neighbour index kept with a large index's search arrays
(`oboyu.index.arrays`): usearch's HNSW graph over the embedded rows, and a second over the
embedded first passages of files, in the generation's folder. Past ANN_FROM_ROWS embedded rows
a query's vector leg asks it for candidates and scores them exactly, instead of scanning every
row's int8 codes, whose cost grows with the rows (about 39 ms a million here: 389 ms at ten
million; docs/scale.md). Measured against faiss (`benchmarks.scale.ann`), whose IVF built
faster and found a little more on made vectors; usearch was kept because it adds and removes by
key and memory-maps a saved graph (IVF's centroids are trained once), and ships wheels for every
platform oboyu claims.

The graph holds the rows' float16 vectors and is searched by cosine. Measured and dropped:
int8 codes (their ties inside a tight cluster of near-copies lose the order: 0.44 of the top ten
found among 200 candidates, against 1.0 in float16), and rows stored as their difference from
a centre, by inner product (the graph no longer leads anywhere near: 0.41 even in float32).

Each row has a key (`ann_keys.npy`, 0 for a row without a vector) that stays with it across
generations: an update carries the old graph, removes the keys of rows gone and adds the new
rows under new keys, so a few changed files cost a few additions, not a rebuild. The files are
written before the folder's meta, as the arrays are: a run killed while writing leaves a folder
that is made again.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from oboyu.index.arrays import read_rows

log = logging.getLogger(__name__)

ANN_FROM_ROWS = 4_000_000  # embedded rows; OBOYU_ANN_FROM_ROWS lowers it (tests, benchmarks)
DTYPE = "f16"
CONNECTIVITY = 16
EXPANSION_ADD = 128
# how widely a query searches the graph, 200 candidates rescored (made rows, docs/scale.md): at 4M
# 2,048 gave recall@10 0.986 in 15 ms; at 10M 0.944 in 17 ms, 4,096 0.977 in 31 ms: wider past 5M
EXPANSION_SEARCH = 2048
WIDER_FROM_ROWS, EXPANSION_SEARCH_WIDER = 5_000_000, 4096
CANDIDATES = 200  # rows a query's graph search gives to exact scoring
SLICE = 65_536
GRAPHS = {"all": "ann.usearch", "leads": "ann-leads.usearch"}
KEYS, SORTED_KEYS, KEY_ROWS = "ann_keys.npy", "ann_sorted_keys.npy", "ann_key_rows.npy"


def ann_from_rows() -> int:
    return int(os.environ.get("OBOYU_ANN_FROM_ROWS") or ANN_FROM_ROWS)


def expansion_search(rows: int) -> int:
    """How widely a query searches a graph of `rows`."""
    return EXPANSION_SEARCH_WIDER if rows > WIDER_FROM_ROWS else EXPANSION_SEARCH


def _new_graph(dim: int):
    from usearch.index import Index  # imported by an index this large only

    return Index(ndim=dim, metric="cos", dtype=DTYPE, connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD)


def _restored(path: Path, view: bool):
    """A graph saved by `save`, memory-mapped when `view`; None when it cannot be read."""
    from usearch.index import Index

    try:
        return Index.restore(str(path), view=view)
    except (OSError, RuntimeError, ValueError):
        return None


def make_graphs(folder: Path, old_folder: Path | None = None, old_row: np.ndarray | None = None) -> None:
    """The graphs of the arrays written in `folder`: carried from `old_folder`'s where given
    (`old_row`: each row's row there, -1 for a new one), else made in full. They are a speed-up,
    never needed for a right answer: one that cannot be made (memory, disk) is left out, said in
    the log, and the exact scan answers."""
    try:
        if old_folder is not None and old_row is not None:
            update_ann(old_folder, folder, old_row)
        else:
            build_ann(folder)
    except (OSError, RuntimeError, ValueError, MemoryError) as error:
        for name in (*GRAPHS.values(), KEYS, SORTED_KEYS, KEY_ROWS):
            (folder / name).unlink(missing_ok=True)
        log.warning("the neighbour graphs were not made (%s); the exact scan answers", error)


def build_ann(folder: Path) -> None:
    """The graphs of the arrays written in `folder` (vectors, embedded, leads), in full."""
    embedded = np.load(folder / "embedded.npy")
    if int(embedded.sum()) < ann_from_rows():
        return
    vectors = np.load(folder / "vectors.npy", mmap_mode="r")
    keys = np.where(embedded, np.arange(1, len(embedded) + 1, dtype=np.uint64), np.uint64(0))
    leads = np.load(folder / "leads.npy")
    for name, wanted in (("all", embedded), ("leads", embedded & leads)):
        graph = _new_graph(vectors.shape[1])
        _add(graph, vectors, np.flatnonzero(wanted), keys)
        graph.save(str(folder / GRAPHS[name]))
    _write_keys(folder, keys)


def _add(graph, vectors: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> None:
    """These rows' vectors under their keys, read a slice at a time (never all in memory)."""
    for start in range(0, len(rows), SLICE):
        part = rows[start : start + SLICE]
        block = np.vstack([read_rows(vectors, int(a), int(b) + 1) for a, b in _runs(part)]) if len(part) else None
        if block is not None:
            graph.add(keys[part], block, threads=0)


def _runs(rows: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive runs of sorted rows, as (first, last): read as a few slices, not row by row."""
    if not len(rows):
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(rows) - 1]])
    return list(zip(rows[starts].tolist(), rows[ends].tolist()))


def _write_keys(folder: Path, keys: np.ndarray) -> None:
    order = np.argsort(keys, kind="stable")
    np.save(folder / KEYS, keys)
    np.save(folder / SORTED_KEYS, keys[order])  # a query's keys are found by binary search in it
    np.save(folder / KEY_ROWS, order.astype(np.int64))


def update_ann(old_folder: Path, folder: Path, old_row: np.ndarray) -> None:
    """The graphs of `folder` from `old_folder`'s: the keys of rows gone removed, the new rows
    (`old_row` -1, or carried but embedded only now) added under new keys. A full build where the
    old folder has none and the rows have grown past the line."""
    embedded = np.load(folder / "embedded.npy")
    if int(embedded.sum()) < ann_from_rows():
        return
    try:
        old_keys = np.load(old_folder / KEYS)
    except OSError:  # none under the line, or the old folder removed by a process that made a newer one
        build_ann(folder)
        return
    carried = old_row >= 0
    keys = np.zeros(len(old_row), np.uint64)
    keys[carried] = old_keys[old_row[carried]]
    keys[~embedded] = 0
    fresh = np.flatnonzero(embedded & (keys == 0))
    keys[fresh] = np.arange(int(old_keys.max(initial=0)) + 1, int(old_keys.max(initial=0)) + 1 + len(fresh), dtype=np.uint64)
    gone = np.setdiff1d(old_keys[old_keys > 0], keys[keys > 0], assume_unique=True)
    vectors = np.load(folder / "vectors.npy", mmap_mode="r")
    leads = np.load(folder / "leads.npy")
    for name, wanted in (("all", embedded), ("leads", embedded & leads)):
        graph = _restored(old_folder / GRAPHS[name], view=False)  # in memory: it changes
        if graph is None:  # damaged, or removed meanwhile: made in full
            build_ann(folder)
            return
        held = gone[graph.contains(gone)] if len(gone) else gone
        if len(held):
            graph.remove(held)
        _add(graph, vectors, np.intersect1d(fresh, np.flatnonzero(wanted)), keys)
        graph.save(str(folder / GRAPHS[name]))
        del graph  # one graph in memory at a time
    _write_keys(folder, keys)


class Neighbours:
    """The graphs of one generation, memory-mapped: a query's candidate rows."""

    FILES = (*GRAPHS.values(), KEYS, SORTED_KEYS, KEY_ROWS)

    def __init__(self, graphs: dict, folder: Path):
        self.graphs = graphs
        self.sorted_keys = np.load(folder / SORTED_KEYS, mmap_mode="r")
        self.key_rows = np.load(folder / KEY_ROWS, mmap_mode="r")

    @classmethod
    def of(cls, folder: Path) -> Neighbours | None:
        """The folder's graphs, or None when it has none (an index under the line) or they
        cannot be read (the exact scan answers then)."""
        if not all((folder / file).exists() for file in cls.FILES):
            return None
        graphs = {name: _restored(folder / file, view=True) for name, file in GRAPHS.items()}
        if any(graph is None for graph in graphs.values()):
            return None
        try:
            return cls(graphs, folder)
        except (OSError, ValueError):  # removed meanwhile by a process that made a newer one
            return None

    def rows(self, query: np.ndarray, count: int, leads_only: bool = False) -> np.ndarray:
        """The rows of the graph's `count` best candidates, ascending."""
        graph = self.graphs["leads" if leads_only else "all"]
        graph.expansion_search = max(expansion_search(len(graph)), count)
        found = np.asarray(graph.search(query.astype(np.float32), count, threads=1).keys, np.uint64)
        at = np.minimum(np.searchsorted(self.sorted_keys, found), len(self.sorted_keys) - 1)
        at = at[np.asarray(self.sorted_keys[at]) == found]  # a key this generation does not hold: none
        return np.sort(np.asarray(self.key_rows[at], np.int64))
