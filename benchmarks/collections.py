"""Every development collection, as the relevance benchmarks and the calibration build ask them:
the three sets in ../shared/eval/dev (personal, debian-reference, manpages-ja), the five Debian
documentation sets in eval/debian-docs (known-item: section heading -> section) and the three
everyday folders in eval/everyday (a person's notes, with answerable, near-topic and off-topic
questions). Each is indexed once into a folder of indexes (transfer-NAME.duckdb, reused)."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.harness import DEV, ROOT
from oboyu.index.store import Store
from oboyu.modes import Mode
from oboyu.progress import ProgressLine
from oboyu.search.evaluate import Query, doc_file_name, index_corpus, read_jsonl
from oboyu.search.query import Result, search
from oboyu.search.resident import ResidentIndex

EVAL = ROOT / "eval"
TOP = 10  # results asked for each question
DEV_SETS = ("personal", "debian-reference", "manpages-ja")  # what the shipped weights were fitted on


@dataclass
class Collection:
    name: str
    docs: dict[str, str]  # id -> text
    answerable: list[Query]
    near: list[Query] = field(default_factory=list)
    off: list[Query] = field(default_factory=list)
    file_name: Callable[[str], str] = doc_file_name  # a document's file, relative to the folder


def _query(row: dict) -> Query:
    return Query(str(row.get("id")), row["query"], frozenset({row["relevant_doc_id"]} if row.get("relevant_doc_id") else ()))


def _queries(path: Path) -> list[Query]:
    return [_query(row) for row in read_jsonl(path)] if path.exists() else []


def collections(dev: bool = True) -> list[Collection]:
    """Every collection, dev sets first (left out with dev=False: they are not read then)."""
    out = []
    for name in DEV_SETS if dev else ():
        docs = {str(d["id"]): d["text"] for d in read_jsonl(DEV / name / "docs.jsonl.gz")}
        out.append(Collection(name, docs, _queries(DEV / name / "queries.jsonl"), off=_queries(DEV / name / "absent.jsonl")))
    for folder in sorted(p for p in (EVAL / "debian-docs").iterdir() if p.is_dir()):
        docs = {str(d["id"]): d["text"] for d in read_jsonl(folder / "docs.jsonl.gz")}
        out.append(Collection(folder.name, docs, _queries(folder / "queries.jsonl")))
    with gzip.open(EVAL / "everyday" / "docs.jsonl.gz", "rt", encoding="utf-8") as handle:
        notes = [json.loads(line) for line in handle]
    # each kind of question read once, with the folder of each (whose person asks it)
    rows = {kind: read_jsonl(EVAL / "everyday" / f"{kind}.jsonl") for kind in ("queries", "near", "off")}
    asked = {kind: [(_query(row), row) for row in kind_rows] for kind, kind_rows in rows.items()}
    for person in sorted({n["folder"] for n in notes}):
        mine = {kind: [q for q, row in pairs if row["folder"] == person] for kind, pairs in asked.items()}
        docs = {n["id"]: n["text"] for n in notes if n["folder"] == person}
        out.append(Collection(f"everyday-{person}", docs, mine["queries"], mine["near"], mine["off"],
                              file_name=lambda doc_id: doc_id))  # the notes keep their folders and names
    return out


def index_of(collection: Collection, db_dir: Path, embedder) -> Path:
    """The collection's index in `db_dir`, built when absent."""
    db = db_dir / f"transfer-{collection.name}.duckdb"
    if not db.exists():
        with tempfile.TemporaryDirectory() as folder, Store(db) as store:
            for doc_id, text in collection.docs.items():
                path = Path(folder) / "docs" / collection.file_name(doc_id)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            index_corpus(store, embedder, Path(folder) / "docs", ProgressLine())
    return db


def ask(collection: Collection, db: Path, embedder, mode: Mode,
        kinds: tuple[str, ...] = ("answerable", "near", "off")) -> Iterator[tuple[str, Query, list[tuple[Result, bool]]]]:
    """Each question of these kinds asked of the collection's index (held in memory): its kind,
    the question and its top TOP results, each with whether it is a right answer."""
    with Store(db, read_only=True) as store:
        root = store.roots()[0].path
        resident = ResidentIndex().refresh(store)
    ids = {collection.file_name(doc_id): doc_id for doc_id in collection.docs}
    for kind in kinds:
        for query in getattr(collection, kind):
            results = search(resident, embedder, query.text, TOP, mode=mode)
            yield kind, query, [(r, ids.get(str(Path(r.path).relative_to(root))) in query.relevant) for r in results]
