"""The approximate neighbour graphs kept with a large index's arrays (oboyu.index.arrays_ann),
with the line lowered so that a test-sized index crosses it: made with the arrays, asked by
ResidentIndex for candidates that are then scored exactly, kept in step by an update (rows gone
removed, new rows added under keys of their own), and never needed for a right answer (a graph
that cannot be read leaves the exact scan to answer)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_index_arrays import DIM, crowded_index, crowded_vectors, exact_top, fill

from oboyu.index.arrays import open_arrays
from oboyu.index.arrays_ann import GRAPHS, KEYS, Neighbours
from oboyu.index.arrays_cache import arrays_of
from oboyu.index.records import ChunkRecord, DocumentRecord
from oboyu.index.store import Store
from oboyu.search.resident import ResidentIndex


@pytest.fixture
def past_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, np.ndarray]]:
    monkeypatch.setenv("OBOYU_ANN_FROM_ROWS", "500")
    with crowded_index(tmp_path / "index.duckdb", seed=21) as made:
        yield made


def queries(vectors: np.ndarray, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    picked = vectors[rng.integers(len(vectors), size=count)] + 0.02 * rng.standard_normal((count, DIM)).astype(np.float32)
    return list(picked / np.linalg.norm(picked, axis=1, keepdims=True))


def recall(got: list[tuple[str, float]], expected: list[str]) -> float:
    return len({cid for cid, _ in got} & set(expected)) / len(expected)


def test_past_the_line_the_graph_finds_the_exact_best(past_the_line: tuple[Store, np.ndarray]) -> None:
    store, vectors = past_the_line
    resident = ResidentIndex().refresh(store)
    neighbours = resident._neighbours
    assert neighbours is not None and all((resident._index.folder / name).exists() for name in GRAPHS.values())
    assert len(neighbours.graphs["all"]) == len(vectors) and len(neighbours.graphs["leads"]) == len(vectors[::4])
    leads = np.arange(0, len(vectors), 4)
    found, found_leads = [], []
    for query in queries(vectors, np.random.default_rng(4), 25):
        got = resident.vector_scores(query, 10)
        assert all(abs(score - float(vectors[int(cid[1:])] @ query)) < 1e-5 for cid, score in got)  # scored exactly
        found.append(recall(got, exact_top(vectors, query, 10)))
        found_leads.append(recall(resident.vector_scores(query, 10, leads_only=True), exact_top(vectors, query, 10, leads)))
    # crowded clusters with exact copies among them: the hardest case for a graph, and still found
    assert np.mean(found) >= 0.95 and np.mean(found_leads) >= 0.95, (np.mean(found), np.mean(found_leads))


def test_a_larger_graph_is_searched_wider(past_the_line: tuple[Store, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    """At 10 million made rows the usual width found 0.944 of the top ten, twice as wide 0.977."""
    from oboyu.index import arrays_ann

    store, vectors = past_the_line
    resident = ResidentIndex().refresh(store)
    graph = resident._neighbours.graphs["all"]
    resident.vector_scores(vectors[0], 10)
    assert graph.expansion_search == arrays_ann.EXPANSION_SEARCH
    monkeypatch.setattr(arrays_ann, "WIDER_FROM_ROWS", len(vectors) - 1)  # this graph counts as large
    got = resident.vector_scores(vectors[0], 10)
    assert graph.expansion_search == arrays_ann.EXPANSION_SEARCH_WIDER > arrays_ann.EXPANSION_SEARCH
    assert got[0][1] > 0.999  # and still finds the row itself


def test_under_the_line_no_graph_is_made(tmp_path: Path) -> None:
    with Store(tmp_path / "index.duckdb") as store:
        store.set_model("test-model", DIM)
        rng = np.random.default_rng(2)
        fill(store, crowded_vectors(rng, 40), ["語"], rng)
        arrays = arrays_of(store)
        assert Neighbours.of(arrays.folder) is None and not (arrays.folder / KEYS).exists()


def test_an_update_keeps_the_graph_in_step(past_the_line: tuple[Store, np.ndarray]) -> None:
    """Files removed and added, and vectors given to rows that had none: the updated graph holds
    exactly the embedded rows, each under its own key, carried keys unchanged."""
    store, vectors = past_the_line
    old = arrays_of(store)
    old_keys = dict(zip(old.ids.tolist(), np.load(old.folder / KEYS).tolist()))
    rng = np.random.default_rng(9)
    store.delete_paths(["/corpus/ノート 3.md", "/corpus/ノート 40.md"])
    new = crowded_vectors(rng, 6)
    doc = DocumentRecord("/corpus/新しい.md", "/corpus", 1, 1, "new", "utf-8", "markdown", None)
    records = [ChunkRecord(f"n{i}", i, "", 1, 1, 0, 2, "新", {"新": 1}) for i in range(6)]
    store.write_documents([(doc, records, np.vstack([new[:4], np.full((2, DIM), np.nan, np.float32)]))])
    assert arrays_of(store).folder != old.folder
    store.add_vectors(["n4"], new[4:5])  # the meaning pass gives a waiting row its vector
    arrays = arrays_of(store)
    neighbours = Neighbours.of(arrays.folder)
    assert neighbours is not None
    keys = np.load(arrays.folder / KEYS)
    embedded = np.asarray(arrays.embedded)
    assert len(neighbours.graphs["all"]) == int(embedded.sum()) == len(vectors) - 8 + 5
    assert (keys[~embedded] == 0).all() and len(set(keys[embedded].tolist())) == int(embedded.sum())
    carried = [cid for cid in arrays.ids.tolist() if old_keys.get(cid)]
    assert carried and all(keys[row] == old_keys[cid] for cid, row in arrays.rows_of(carried).items())
    gone = [old_keys[f"c{row:05d}"] for row in (12, 13, 14, 15, 160, 161, 162, 163)]
    assert not neighbours.graphs["all"].contains(np.array(gone, np.uint64)).any()
    rows = np.flatnonzero(embedded)
    assert (np.asarray(neighbours.key_rows)[np.searchsorted(neighbours.sorted_keys, keys[rows])] == rows).all()
    resident = ResidentIndex().refresh(store)
    for i in (0, 3, 4):  # a new passage's own vector finds it first
        assert resident.vector_scores(new[i], 1)[0][0] == f"n{i}"
    assert resident.vector_scores(new[0], 1, leads_only=True)[0][0] == "n0"


def test_a_graph_that_cannot_be_read_leaves_the_exact_scan_to_answer(past_the_line: tuple[Store, np.ndarray]) -> None:
    store, vectors = past_the_line
    folder = arrays_of(store).folder
    (folder / GRAPHS["all"]).write_bytes(b"not a graph")
    arrays = open_arrays(folder)
    assert arrays is not None and Neighbours.of(folder) is None
    resident = ResidentIndex()
    resident._open(arrays)
    for query in queries(vectors, np.random.default_rng(5), 5):
        assert [cid for cid, _ in resident.vector_scores(query, 10)] == exact_top(vectors, query, 10)


def test_a_graph_that_cannot_be_made_leaves_the_arrays_whole(past_the_line: tuple[Store, np.ndarray],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk or too little memory while the graph is saved costs the graph, not the arrays:
    they are made without it and the exact scan answers."""
    store, vectors = past_the_line

    def no_room(self, path: str) -> None:
        Path(path).write_bytes(b"half")  # a partial file, as a full disk leaves
        raise RuntimeError("No space left on device")

    monkeypatch.setattr("usearch.index.Index.save", no_room)
    folder = arrays_of(store).folder
    assert not any((folder / name).exists() for name in (*GRAPHS.values(), KEYS))
    resident = ResidentIndex().refresh(store)
    assert resident._neighbours is None
    for query in queries(vectors, np.random.default_rng(6), 3):
        assert [cid for cid, _ in resident.vector_scores(query, 10)] == exact_top(vectors, query, 10)
