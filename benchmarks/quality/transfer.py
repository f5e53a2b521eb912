"""Does the confidence hold on collections it was not fitted on? Out-of-fold figures for the
weak-match line and "no good match", on every development collection.

Collections: the three sets in ../shared/eval/dev (personal, debian-reference, manpages-ja), the
five Debian documentation sets in eval/debian-docs (known-item: section heading -> section) and
the three everyday folders in eval/everyday (a person's notes, with answerable, near-topic and
off-topic questions). Each is indexed once into --db-dir (transfer-NAME.duckdb, reused).

For each collection it reports, in one mode, two models side by side:
  shipped      the table in oboyu/search/calibration.json (fitted on the dev sets: in-sample
               there, out-of-sample on every other collection)
  out-of-fold  the same fit (scripts/calibrate.py's logistic model and threshold rule) made on
               every other collection, judged on this one (leave one collection out)
  two lines    with a second, lower line: a query whose best result reaches the threshold shows
               every result above the lower line, the highest under which at most 1% of each
               fitting collection's right answers (top 10) fall (for the shipped model: fitted on
               the three dev sets, so out-of-sample on the other eight)
and for each: the share of answerable queries whose right file is among the top 10 (`--all`)
and among the results shown by default (not weak), the share told "no good match", and the
share of near-topic and off-topic questions told "no good match" (caught).

    python -m benchmarks.quality.transfer [--mode hybrid] [--db-dir DIR] [--json]
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.harness import DEV, ROOT, parser, table, write_json
from oboyu.index.store import Store
from oboyu.modes import Mode
from oboyu.progress import ProgressLine
from oboyu.search.confidence import FEATURES, Evidence, Model, model_for
from oboyu.search.evaluate import Query, doc_file_name, index_corpus, read_jsonl
from oboyu.search.query import search
from oboyu.search.resident import ResidentIndex
from scripts.calibrate import MAX_PRESENT_FLAGGED, fit_logistic

EVAL = ROOT / "eval"
DEV_SETS = ("personal", "debian-reference", "manpages-ja")  # what the shipped table was fitted on
TOP = 10


@dataclass
class Collection:
    name: str
    docs: dict[str, str]  # id -> text
    answerable: list[Query]
    near: list[Query] = field(default_factory=list)
    off: list[Query] = field(default_factory=list)
    file_name: Callable[[str], str] = doc_file_name  # a document's file, relative to the folder


@dataclass
class Asked:
    """One question's top results: whether each is right, and its evidence."""

    collection: str
    kind: str  # answerable | near | off
    right: list[bool]
    evidence: list[Evidence]


def _queries(path: Path) -> list[Query]:
    return [Query(str(r.get("id")), r["query"], frozenset({r["relevant_doc_id"]} if r.get("relevant_doc_id") else ()))
            for r in read_jsonl(path)] if path.exists() else []


def collections() -> list[Collection]:
    out = []
    for name in DEV_SETS:
        docs = {str(d["id"]): d["text"] for d in read_jsonl(DEV / name / "docs.jsonl.gz")}
        out.append(Collection(name, docs, _queries(DEV / name / "queries.jsonl"), off=_queries(DEV / name / "absent.jsonl")))
    for folder in sorted(p for p in (EVAL / "debian-docs").iterdir() if p.is_dir()):
        docs = {str(d["id"]): d["text"] for d in read_jsonl(folder / "docs.jsonl.gz")}
        out.append(Collection(folder.name, docs, _queries(folder / "queries.jsonl")))
    with gzip.open(EVAL / "everyday" / "docs.jsonl.gz", "rt", encoding="utf-8") as handle:
        notes = [json.loads(line) for line in handle]
    for person in sorted({n["folder"] for n in notes}):
        def mine(path: Path, person: str = person) -> list[Query]:
            return [q for q, row in zip(_queries(path), read_jsonl(path)) if row["folder"] == person]

        docs = {n["id"]: n["text"] for n in notes if n["folder"] == person}
        out.append(Collection(f"everyday-{person}", docs, mine(EVAL / "everyday" / "queries.jsonl"),
                              mine(EVAL / "everyday" / "near.jsonl"), mine(EVAL / "everyday" / "off.jsonl"),
                              file_name=lambda doc_id: doc_id))  # the notes keep their folders and names
    return out


def index_of(collection: Collection, db_dir: Path, embedder) -> Path:
    db = db_dir / f"transfer-{collection.name}.duckdb"
    if not db.exists():
        with tempfile.TemporaryDirectory() as folder, Store(db) as store:
            for doc_id, text in collection.docs.items():
                path = Path(folder) / "docs" / collection.file_name(doc_id)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            index_corpus(store, embedder, Path(folder) / "docs", ProgressLine())
    return db


def asked(collection: Collection, db: Path, embedder, mode: Mode) -> list[Asked]:
    with Store(db, read_only=True) as store:
        root = store.roots()[0].path
        resident = ResidentIndex().refresh(store)
    ids = {collection.file_name(doc_id): doc_id for doc_id in collection.docs}
    out = []
    for kind, queries in (("answerable", collection.answerable), ("near", collection.near), ("off", collection.off)):
        for query in queries:
            results = search(resident, embedder, query.text, TOP, mode=mode)
            right = [ids.get(str(Path(r.path).relative_to(root))) in query.relevant for r in results]
            out.append(Asked(collection.name, kind, right, [Evidence(**r.evidence) for r in results]))
    return out


def fit(examples: list[Asked], mode: Mode) -> Model:
    """calibrate.py's fit: logistic over every top result, each collection weighing the same; the
    threshold ("no good match" under it) the highest that leaves at most 1% of each collection's
    answerable queries with no result above it."""
    names = sorted({a.collection for a in examples})
    rows = [(a.collection, e, r) for a in examples for e, r in zip(a.evidence, a.right)]
    counts = {n: sum(c == n for c, _, _ in rows) for n in names}
    x = np.array([[getattr(e, f) for f in FEATURES[mode]] for _, e, _ in rows])
    y = np.array([r for _, _, r in rows], dtype=float)
    weights, bias = fit_logistic(x, y, np.array([len(rows) / (len(names) * counts[c]) for c, _, _ in rows]))
    draft = Model(FEATURES[mode], tuple(float(w) for w in weights), bias, 0.0)
    limits = []
    for name in names:
        best = sorted(_best(draft, a) for a in examples if a.collection == name and a.kind == "answerable")
        if best:
            limits.append(best[int(MAX_PRESENT_FLAGGED * len(best))])
    return Model(draft.features, draft.weights, draft.bias, min(limits) if limits else 0.0)


def hide_line(examples: list[Asked], model: Model) -> float:
    """The line under which a result is left out of a query that has a good match: the highest
    that leaves out at most 1% of each collection's right answers among the top 10."""
    limits = []
    for name in sorted({a.collection for a in examples}):
        right = sorted(model.probability(e) for a in examples if a.collection == name and a.kind == "answerable"
                       for e, r in zip(a.evidence, a.right) if r)
        if right:
            limits.append(right[int(MAX_PRESENT_FLAGGED * len(right))])
    return min([*limits, model.threshold])


def _best(model: Model, question: Asked) -> float:
    return max((model.probability(e) for e in question.evidence), default=0.0)


def judged(model: Model, questions: list[Asked], hide: float | None = None) -> dict[str, float | None]:
    """The figures of one collection under one model (shares, 0-1; None where there is no such
    question). A result is shown when it reaches the threshold, or (with `hide`) reaches `hide` in
    a query whose best result reaches the threshold."""
    def share(kind: str, test: Callable[[Asked], bool]) -> float | None:
        chosen = [a for a in questions if a.kind == kind]
        return sum(map(test, chosen)) / len(chosen) if chosen else None

    def shown(a: Asked) -> bool:
        line = model.threshold if hide is None or _best(model, a) < model.threshold else hide
        return any(r and model.probability(e) >= line for e, r in zip(a.evidence, a.right))

    def flagged(a: Asked) -> bool:
        return _best(model, a) < model.threshold

    return {"found_all": share("answerable", lambda a: any(a.right)), "found_shown": share("answerable", shown),
            "answerable_flagged": share("answerable", flagged), "near_caught": share("near", flagged),
            "off_caught": share("off", flagged)}


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def main() -> None:
    cli = parser(__doc__)
    cli.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.HYBRID.value)
    cli.add_argument("--db-dir", type=Path, default=Path(tempfile.gettempdir()), help="where the indexes are kept")
    cli.add_argument("--json", action="store_true", help="also write results/transfer-MODE.json")
    args = cli.parse_args()
    from oboyu.models.loading import load_default_embedder

    embedder = load_default_embedder()
    mode = Mode(args.mode)
    every = collections()
    questions = {c.name: asked(c, index_of(c, args.db_dir, embedder), embedder, mode) for c in every}
    shipped = model_for(embedder.info.model_id, mode)
    # the lower line for the shipped model, fitted on the sets the shipped table was fitted on
    shipped_hide = hide_line([a for name in DEV_SETS for a in questions[name]], shipped)
    rows, figures = [], {}
    for name, own in questions.items():
        others = [a for other, qs in questions.items() if other != name for a in qs]
        out_of_fold = fit(others, mode)
        hide = hide_line(others, out_of_fold)
        figures[name] = {"shipped": judged(shipped, own), "shipped_two_lines": judged(shipped, own, shipped_hide),
                         "out_of_fold": judged(out_of_fold, own),
                         "out_of_fold_two_lines": judged(out_of_fold, own, hide),
                         "threshold_out_of_fold": out_of_fold.threshold, "hide_out_of_fold": hide,
                         "threshold_shipped": shipped.threshold, "hide_shipped": shipped_hide}
        for label, got in (("shipped", figures[name]["shipped"]), ("shipped, two lines", figures[name]["shipped_two_lines"]),
                           ("out-of-fold", figures[name]["out_of_fold"]),
                           ("out-of-fold, two lines", figures[name]["out_of_fold_two_lines"])):
            rows.append([name, label, sum(a.kind == "answerable" for a in own), percent(got["found_all"]),
                         percent(got["found_shown"]), percent(got["answerable_flagged"]), percent(got["near_caught"]),
                         percent(got["off_caught"])])
    print(f"mode {mode}; shares in %; out-of-fold: fitted on every other collection")
    print(table(["collection", "model", "answerable", "right in top 10", "right shown", "told no good match",
                 "near-topic caught", "off-topic caught"], rows, "llrrrrrr"))
    if args.json:
        print(f"wrote {write_json(f'transfer-{mode}.json', figures)}")


if __name__ == "__main__":
    main()
