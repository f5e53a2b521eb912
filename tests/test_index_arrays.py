"""The index's arrays (oboyu.index.arrays): made beside a real DuckDB file once a generation, read
back exactly, and ranked from by ResidentIndex with the same results as exact float32 search, on
vectors made to crowd together (near-copies, as real collections hold) so that the int8 scan's
bound has many rows to rule out."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from oboyu.index.arrays import homes
from oboyu.index.arrays_cache import arrays_of
from oboyu.index.records import ChunkRecord, DocumentRecord
from oboyu.index.store import Store
from oboyu.search import SqlRanker
from oboyu.search.int8_scan import CodeScan, candidates
from oboyu.search.resident import ResidentIndex

DIM = 48


def crowded_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    """Unit vectors in a few tight clusters, with exact copies among them."""
    centres = rng.standard_normal((6, DIM))
    vectors = centres[rng.integers(0, 6, count)] + 0.04 * rng.standard_normal((count, DIM))
    vectors[1::50] = vectors[::50][: len(vectors[1::50])]  # copies: ties broken by chunk id
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def fill(store: Store, vectors: np.ndarray, words: list[str], rng: np.random.Generator) -> None:
    items = []
    for start in range(0, len(vectors), 4):  # files of four passages, the first one the file's lead
        path = f"/corpus/ノート {start // 4}.md"
        records = []
        for i, row in enumerate(range(start, min(start + 4, len(vectors)))):
            picked = {str(w): int(rng.integers(1, 5)) for w in rng.choice(words, size=min(3, len(words)), replace=False)}
            text = f"第{row}節 " + " ".join(picked)
            records.append(ChunkRecord(f"c{row:05d}", i, f"見出し {i}" if i else "", i + 1, i + 2, 0, len(text), text, picked,
                                       page_start=i or None, page_end=i or None))
        doc = DocumentRecord(path, "/corpus", 1, 1, path, "utf-8", "markdown", f"題 {start}")
        items.append((doc, records, vectors[start:start + len(records)]))
    store.write_documents(items)


@contextlib.contextmanager
def crowded_index(path: Path, seed: int = 11) -> Iterator[tuple[Store, np.ndarray]]:
    """An index of 2,000 crowded vectors in files of four passages, with words."""
    rng = np.random.default_rng(seed)
    vectors = crowded_vectors(rng, 2_000)
    with Store(path) as store:
        store.set_model("test-model", DIM)
        fill(store, vectors, [f"語{i}" for i in range(40)], rng)
        yield store, vectors


@pytest.fixture
def crowded(tmp_path: Path) -> Iterator[tuple[Store, np.ndarray]]:
    with crowded_index(tmp_path / "index.duckdb") as made:
        yield made


def exact_top(vectors: np.ndarray, query: np.ndarray, n: int, rows: np.ndarray | None = None) -> list[str]:
    rows = np.arange(len(vectors)) if rows is None else rows
    scores = vectors[rows] @ query
    order = sorted(range(len(rows)), key=lambda i: (-float(scores[i]), f"c{rows[i]:05d}"))
    return [f"c{rows[i]:05d}" for i in order[:n]]


def same_but_near_ties(mine: list[tuple[str, float]], theirs: list[tuple[str, float]], within: float = 1e-6) -> bool:
    """The same ranking, but where DuckDB's float sums and NumPy's differ in the last bits and two
    passages within `within` of each other change places."""
    if not np.allclose([s for _, s in mine], [s for _, s in theirs], atol=within):
        return False
    theirs_by_id = dict(theirs)
    for rank, (cid, score) in enumerate(mine):
        if cid != theirs[rank][0] and abs(score - theirs[rank][1]) > within:
            return False
        if cid in theirs_by_id and abs(theirs_by_id[cid] - score) > within:
            return False
    return True


@pytest.mark.parametrize(("mapped_up_to", "madvise"), [(0, True), (0, False), (2**40, True)],
                         ids=["rows through a map let go", "rows read one by one", "rows through the map"])
def test_the_int8_scan_finds_exactly_the_float32_best(crowded: tuple[Store, np.ndarray], mapped_up_to: int, madvise: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("oboyu.index.arrays.MAPPED_VECTORS_UP_TO", mapped_up_to)
    monkeypatch.setattr("oboyu.index.arrays.PAGES_LET_GO", madvise)  # False: as on Windows and macOS
    store, vectors = crowded
    resident = ResidentIndex().refresh(store)
    rng = np.random.default_rng(3)
    leads = np.arange(0, len(vectors), 4)
    for _ in range(25):
        query = vectors[rng.integers(len(vectors))] + 0.02 * rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        for n in (1, 10, 100):
            got = resident.vector_scores(query, n)
            assert [cid for cid, _ in got] == exact_top(vectors, query, n)
            assert [cid for cid, _ in resident.vector_scores(query, n, leads_only=True)] == exact_top(vectors, query, n, leads)
        assert same_but_near_ties(resident.vector_scores(query, 30), SqlRanker(store).vector_scores(query, 30))
        cosines = vectors @ query
        assert np.allclose(resident.cosine_spread(query), (cosines.mean(), cosines.std(), len(vectors)), atol=1e-5)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_rows_read_from_a_large_index_do_not_stay_resident(crowded: tuple[Store, np.ndarray],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAPPED_VECTORS_UP_TO a long-lived process reads each query's candidates through a map
    whose pages it lets go: at a million passages, kept, they grew it by 1.5 GB."""
    monkeypatch.setattr("oboyu.index.arrays.MAPPED_VECTORS_UP_TO", 0)
    store, vectors = crowded
    arrays = arrays_of(store)
    every_row = arrays.vector_rows(np.arange(len(vectors)))
    assert np.array_equal(every_row, vectors)
    start = arrays._released_vectors[1].__array_interface__["data"][0]
    assert _resident_kb_of_mapping_at(start) == 0


def _resident_kb_of_mapping_at(address: int) -> int:
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for number, line in enumerate(lines):
        span = line.split()[0]
        if "-" in span and all(c in "0123456789abcdef-" for c in span):
            low, high = (int(x, 16) for x in span.split("-"))
            if low <= address < high:
                return next(int(x.split()[1]) for x in lines[number + 1:] if x.startswith("Rss:"))
    raise AssertionError(f"no mapping holds {address:#x}")


def test_the_bound_holds_for_every_row(crowded: tuple[Store, np.ndarray]) -> None:
    store, vectors = crowded
    arrays = arrays_of(store)
    arrays.scan_model = arrays.scan_model[:50]  # a damaged scan.onnx: the graph is made anew
    scan = CodeScan(arrays)
    rng = np.random.default_rng(4)
    for _ in range(20):
        anywhere = rng.standard_normal(DIM).astype(np.float32)
        near = vectors[rng.integers(len(vectors))] + 0.05 * anywhere
        for query in (anywhere / np.linalg.norm(anywhere), near / np.linalg.norm(near)):
            score, bound = scan.approximate(query)
            assert np.all(np.abs(vectors @ query - score) <= bound)
        kept = candidates(score, bound, None, 10)
        assert len(kept) < len(vectors) / 4  # near a passage, as queries are: most rows ruled out
        assert set(np.argsort(-(vectors @ query))[:10]) <= set(kept.tolist())


def test_display_fields_and_postings_read_back_as_the_tables_hold_them(crowded: tuple[Store, np.ndarray]) -> None:
    store, _ = crowded
    resident = ResidentIndex().refresh(store)
    ids = ["c00000", "c00001", "c01999", "absent"]
    assert resident.chunks_by_id(ids) == SqlRanker(store).chunks_by_id(ids)
    assert resident.files_of_chunks(ids) == SqlRanker(store).files_of_chunks(ids)
    terms = ["語1", "語7", "語39", "ない語"]
    assert resident.term_rarity(terms) == pytest.approx(SqlRanker(store).term_rarity(terms))
    assert resident.terms_in(ids[:3], terms) == SqlRanker(store).terms_in(ids[:3], terms)
    assert same_but_near_ties(resident.keyword_scores(terms, 50), SqlRanker(store).keyword_scores(terms, 50), 1e-5)


def test_one_folder_a_generation_made_again_when_stale_or_damaged(crowded: tuple[Store, np.ndarray]) -> None:
    store, vectors = crowded
    base = homes(store.path)[0]
    first = arrays_of(store)
    assert [p.name for p in base.iterdir()] == [first.generation]
    assert arrays_of(store).folder == first.folder  # opened, not made again
    fill(store, vectors[:4], ["新語"], np.random.default_rng(1))  # a write: a new generation
    second = arrays_of(store)
    assert second.generation != first.generation
    assert [p.name for p in base.iterdir()] == [second.generation]  # the old one removed
    assert second.postings("新語") is not None
    (second.folder / "meta.json").unlink()  # a folder whose writing stopped
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (base / f".building-{dead.stdout.strip()}-0000").mkdir()  # left by a killed build
    mine = base / f".building-{os.getpid()}-1111"
    mine.mkdir()  # a build still under way in a live process: kept
    again = arrays_of(store)
    assert (again.folder / "meta.json").exists()
    assert sorted(p.name for p in base.iterdir()) == sorted([again.generation, mine.name])


def test_a_second_process_making_the_same_generation_leaves_the_first_one_s(crowded: tuple[Store, np.ndarray]) -> None:
    """Two processes opened a new index at once (the app and `oboyu serve`, a trial): the second to
    finish removed the first's folder to put its own there, and the first, opening it meanwhile,
    stopped with "cannot be read; remove that folder"."""
    from oboyu.index import arrays_cache

    store, _ = crowded
    first = arrays_of(store)
    inode = (first.folder / "vectors.npy").stat().st_ino
    assert arrays_cache._make(store, homes(store.path)[0]) == first.generation  # as the slower process makes it
    assert (first.folder / "vectors.npy").stat().st_ino == inode  # the first's files stay where they are
    assert [p.name for p in homes(store.path)[0].iterdir()] == [first.generation]  # its own building folder gone


def test_an_index_being_embedded_ranks_only_its_vectors(tmp_path: Path) -> None:
    """Rows whose vector the meaning pass has not made yet (NaN in the store) are left out of
    the vector legs and of the cosine spread."""
    rng = np.random.default_rng(2)
    vectors = crowded_vectors(rng, 40)
    waiting = vectors.copy()
    waiting[::3] = np.nan
    with Store(tmp_path / "index.duckdb") as store:
        store.set_model("test-model", DIM)
        fill(store, waiting, ["語"], rng)
        resident = ResidentIndex().refresh(store)
        embedded = np.flatnonzero(~np.isnan(waiting[:, 0]))
        query = vectors[1]
        assert [cid for cid, _ in resident.vector_scores(query, 10)] == exact_top(vectors, query, 10, embedded)
        assert resident.cosine_spread(query)[2] == len(embedded)
        assert np.isclose(resident.cosine_spread(query)[0], float((vectors[embedded] @ query).mean()), atol=1e-5)


def test_a_folder_that_cannot_hold_them_sends_them_to_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where nothing can be written beside the index file (here a file is in the way; a
    read-only folder fails the same way), the arrays go to the user's cache folder."""
    monkeypatch.setenv("OBOYU_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(6)
    with Store(tmp_path / "index.duckdb") as store:
        store.set_model("test-model", DIM)
        fill(store, crowded_vectors(rng, 8), ["語"], rng)
        beside, cached = homes(store.path)
        beside.write_text("in the way")
        arrays = arrays_of(store)
        assert arrays.folder.parent == cached and cached.is_relative_to(tmp_path / "cache")
        assert arrays_of(store).folder == arrays.folder
        assert ResidentIndex().refresh(store).keyword_scores(["語"], 3)


KILLED_BUILD = """
import sys, time
from pathlib import Path
from oboyu.index import arrays_build, arrays_cache
from oboyu.index.store import Store
def stalled(*args):
    print("building", flush=True)
    time.sleep(600)  # killed here, its vectors written and its postings not
arrays_build._postings = stalled
with Store(Path(sys.argv[1]), read_only=True) as store:
    arrays_cache.arrays_of(store)
"""


def test_a_build_killed_half_way_leaves_the_index_whole(crowded: tuple[Store, np.ndarray], tmp_path: Path) -> None:
    store, vectors = crowded
    db = store.path
    store.close()
    process = subprocess.Popen([sys.executable, "-c", KILLED_BUILD, str(db)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "building"
    process.kill()
    process.wait()
    base = homes(db)[0]
    (left,) = base.iterdir()
    assert left.name.startswith(".building-") and (left / "vectors.npy").exists()
    with Store(db, read_only=True) as reopened:
        resident = ResidentIndex().refresh(reopened)
        assert [p.name for p in base.iterdir()] == [resident.generation]  # the half-made folder removed
        query = vectors[7]
        assert [cid for cid, _ in resident.vector_scores(query, 5)] == exact_top(vectors, query, 5)


def test_oboyu_index_makes_them_and_a_one_shot_query_ranks_from_them(oboyu_env: dict[str, str], tmp_path: Path) -> None:
    """A plain `oboyu query` after `oboyu index` ranks from the arrays (the same answer as from
    the tables); a filtered one, and one on an index changed since, from the tables."""
    import json
    import shutil

    from conftest import EXAMPLE_NOTES, run_oboyu

    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLE_NOTES, notes)
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    db = Path(oboyu_env["OBOYU_DB"])
    (folder,) = homes(db)[0].iterdir()
    asked = ("query", "--json", "--all", "-k", "5", "--", "カレーの作り方")

    def answer() -> list[tuple[str, int, float]]:
        done = run_oboyu(oboyu_env, *asked)
        assert done.returncode == 0, done.stderr
        return [(r["path"], r["rank"], r["score"]) for r in json.loads(done.stdout)]

    from_arrays = answer()
    status = json.loads(run_oboyu(oboyu_env, "status", "--json").stdout)["search_arrays"]
    assert status["current"] and status["path"] == str(folder) and status["bytes"] > 0
    (folder / "vectors.npy").unlink()
    assert json.loads(run_oboyu(oboyu_env, "status", "--json").stdout)["search_arrays"] is None  # damaged: none  # no longer arrays: this query goes to the tables
    from_tables = answer()
    assert [p for p, _, _ in from_arrays] == [p for p, _, _ in from_tables]
    assert np.allclose([c for _, _, c in from_arrays], [c for _, _, c in from_tables], atol=2e-4)
    shutil.rmtree(folder)
    assert "arrays: none yet" in run_oboyu(oboyu_env, "status").stdout
    assert run_oboyu(oboyu_env, "index").returncode == 0  # nothing changed: the arrays made again all the same
    assert (homes(db)[0] / folder.name / "meta.json").exists()


def test_arrays_brought_up_to_date_equal_arrays_made_anew(crowded: tuple[Store, np.ndarray], tmp_path: Path) -> None:
    """After files added, rewritten (a new title over the same passages too), removed, renamed and
    given their vectors, the arrays updated from the last generation's hold what a full build of
    the same index holds, and rank the same."""
    from oboyu.index.arrays import open_arrays
    from oboyu.index.arrays_build import build_arrays
    from oboyu.index.arrays_update import update_arrays
    from oboyu.index.records import Move

    store, vectors = crowded
    rng = np.random.default_rng(8)
    doc = DocumentRecord("/corpus/消える.md", "/corpus", 1, 1, "gone", "utf-8", "markdown", None)
    store.write_documents([(doc, [ChunkRecord("y0", 0, "", 1, 1, 0, 2, "消える", {"消える語": 1})], vectors[:1])])
    old = arrays_of(store)
    fill(store, crowded_vectors(rng, 12), ["新語", "語3"], rng)  # rewrites ノート 0-2: new documents, new passages
    doc = DocumentRecord("/corpus/ノート 5.md", "/corpus", 2, 2, "other", "utf-8", "markdown", "新しい題")
    same = [ChunkRecord(f"c{row:05d}", row - 20, "", 1, 2, 0, 3, f"第{row}節", {"語1": 1}) for row in range(20, 24)]
    store.write_documents([(doc, same, vectors[20:24])])  # the same chunk ids under a new title and terms
    store.delete_paths(["/corpus/ノート 9.md", "/corpus/消える.md"])  # 消える語: a term no passage holds any more
    store.move_documents([Move("/corpus/ノート 11.md", "/corpus/移動/ノート 11.md", "/corpus", 1, 1)])
    waiting = crowded_vectors(rng, 4)
    doc = DocumentRecord("/corpus/後から.md", "/corpus", 1, 1, "later", "utf-8", "markdown", None)
    later = [ChunkRecord(f"z{i}", i, "", 1, 1, 0, 2, "後で", {"後": 1}) for i in range(4)]
    store.write_documents([(doc, later, np.full((4, DIM), np.nan, np.float32))])
    store.add_vectors(["z0", "z2"], waiting[[0, 2]])  # the meaning pass: vectors for rows that had none
    (tmp_path / "updated").mkdir()
    (tmp_path / "anew").mkdir()
    assert update_arrays(store, old, tmp_path / "updated") == build_arrays(store, tmp_path / "anew")
    updated, anew = open_arrays(tmp_path / "updated"), open_arrays(tmp_path / "anew")
    assert updated is not None and anew is not None
    assert list(updated.ids) == list(anew.ids) and updated.documents == anew.documents
    for name in ("document", "places", "leads", "lengths", "embedded", "vectors"):
        assert np.array_equal(getattr(updated, name), getattr(anew, name)), name
    assert [updated.hit(r) for r in range(updated.rows)] == [anew.hit(r) for r in range(anew.rows)]
    assert np.allclose(updated.mean, anew.mean, atol=1e-9) and np.allclose(updated.moment, anew.moment, atol=1e-9)
    assert not np.allclose(updated.centre, anew.centre)  # the codes kept the old centre
    words = {anew.terms[anew.term_at[t]:anew.term_at[t + 1]].tobytes().decode() for t in range(len(anew.term_at) - 1)}
    for word in words | {"語39", "ない語"}:
        mine, theirs = updated.postings(word), anew.postings(word)
        assert (mine is None) == (theirs is None) or len(mine[0]) == 0, word
        if theirs is not None:
            assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1]), word
    resident_updated, resident_anew = ResidentIndex(), ResidentIndex()
    resident_updated._open(updated)
    resident_anew._open(anew)
    everything = np.vstack([updated.vectors[r] for r in range(updated.rows)])
    for row in rng.integers(0, updated.rows, 10).tolist():
        query = everything[row] + 0.02 * rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        score, bound = CodeScan(updated).approximate(query)
        assert np.all(np.abs(everything @ query - score)[updated.embedded] <= bound[updated.embedded])
        assert resident_updated.vector_scores(query, 20) == resident_anew.vector_scores(query, 20)
        assert resident_updated.vector_scores(query, 5, leads_only=True) == resident_anew.vector_scores(query, 5, leads_only=True)
        assert np.allclose(resident_updated.cosine_spread(query), resident_anew.cosine_spread(query), atol=1e-7)
    gone = [w for w in (old.terms[old.term_at[t]:old.term_at[t + 1]].tobytes().decode() for t in range(len(old.term_at) - 1))
            if w not in words]
    assert gone and all(len(updated.postings(w)[0]) == 0 for w in gone)  # kept with no postings
    some = [str(cid) for cid in updated.ids[:50]]
    for terms in (["語1"], ["新語", "語3", "後"], ["語7", "語39"], gone):
        assert resident_updated.keyword_scores(terms, 30) == resident_anew.keyword_scores(terms, 30)
        assert resident_updated.term_rarity(terms) == resident_anew.term_rarity(terms)
        assert resident_updated.terms_in(some, terms) == resident_anew.terms_in(some, terms)


def test_a_new_index_in_the_old_ones_place_carries_nothing_it_should_not(tmp_path: Path) -> None:
    """An index removed and made again at the same path restarts the document numbers: the same
    passage under the same number but another title (whose words every passage of the file is
    indexed with) is read anew, not carried from the old index's arrays."""
    from oboyu.index.arrays import open_arrays
    from oboyu.index.arrays_build import build_arrays

    rng = np.random.default_rng(12)
    vectors = crowded_vectors(rng, 8)
    db = tmp_path / "index.duckdb"

    def make(title: str, terms: dict[str, int]) -> None:
        with Store(db) as store:
            store.set_model("test-model", DIM)
            doc = DocumentRecord("/corpus/a.md", "/corpus", 1, 1, "same", "utf-8", "markdown", title)
            chunks = [ChunkRecord(f"c{i}", i, "", 1, 1, 0, 2, "本文", terms) for i in range(8)]
            store.write_documents([(doc, chunks, vectors)])
            arrays_of(store)

    make("古い題", {"古い題": 1, "本文": 1})
    db.unlink()
    make("新しい題", {"新しい題": 1, "本文": 1})
    with Store(db, read_only=True) as store:
        updated = arrays_of(store)
        (tmp_path / "anew").mkdir()
        build_arrays(store, tmp_path / "anew")
    anew = open_arrays(tmp_path / "anew")
    assert anew is not None and updated.documents == anew.documents
    assert updated.document_frequency("古い題") == 0 and updated.document_frequency("新しい題") == 8


def test_with_nowhere_to_write_them_long_lived_searches_use_the_index_file(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Both places taken (files in the way; a full disk fails the same way): the app, MCP,
    `--stdin` and `serve` answer from the index file, as a one-shot query does, and say why once."""
    from oboyu.errors import ArraysUnwritableError
    from oboyu.modes import Mode
    from oboyu.search.live import LiveIndex

    monkeypatch.setenv("OBOYU_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(7)
    with Store(tmp_path / "index.duckdb") as store:
        store.set_model("test-model", DIM)
        fill(store, crowded_vectors(rng, 8), ["語"], rng)
        for place in homes(store.path):
            place.parent.mkdir(parents=True, exist_ok=True)
            place.write_text("in the way")
        with pytest.raises(ArraysUnwritableError, match="cache"):  # both places named
            arrays_of(store)
    live = LiveIndex(tmp_path / "index.duckdb")
    answer = live.search("語", Mode.KEYWORD, k=3)
    assert answer.results and live.unwritable is not None
    assert live.coverage() == (8, 8)
    assert set(live.file_roots()) == {f"/corpus/ノート {i}.md" for i in range(2)}
    for place in homes(tmp_path / "index.duckdb"):
        place.unlink()  # room again: tried when the index next changes, not at every query
    live.search("語", Mode.KEYWORD, k=3)
    assert live.resident.arrays is None
    with Store(tmp_path / "index.duckdb") as store:
        fill(store, crowded_vectors(rng, 4), ["語"], rng)
    again = live.search("語", Mode.KEYWORD, k=3)
    assert live.unwritable is None and live.resident.arrays is not None and again.results


def test_encoding_in_pieces_equals_encoding_at_once() -> None:
    """encode_rows bounds its float64 temporaries by working ENCODE_ROWS rows at a time."""
    from oboyu.index.arrays_build import ENCODE_ROWS, _encoded, encode_rows

    rng = np.random.default_rng(3)
    rows = 2 * ENCODE_ROWS + 5
    vectors = rng.normal(size=(rows, 16)).astype(np.float32)
    embedded = rng.random(rows) > 0.1
    centre = vectors.mean(axis=0)
    pieces, whole = encode_rows(vectors, centre, embedded), _encoded(vectors, centre, embedded)
    assert pieces.keys() == whole.keys()
    for name in whole:
        assert np.array_equal(pieces[name], whole[name]), name
    assert len(encode_rows(vectors[:0], centre, embedded[:0])["codes"]) == 0
