"""Fit the confidence model (`oboyu/search/confidence.py`) on the development sets and write
`oboyu/search/calibration.json`, which the package ships: per mode, logistic weights over the
evidence of each result, the threshold of a good match and the lower line under which a result
beside one is left out; plus a reliability diagram (predicted
confidence against observed precision), printed and drawn as benchmarks/results/calibration.svg.
A build step, run from the repository's root whenever the default model changes:

    python -m scripts.calibrate [--sets personal debian-reference manpages-ja] [--small-folders 30] [--hide-only] [--write]
    python -m scripts.calibrate --match-line-only [--db-dir DIR] [--write]   # the match lines alone
    python -m scripts.calibrate --check    # is the shipped table as this script writes it? (fits nothing)

Each set is indexed once into --db-dir (the same files `oboyu eval --db` makes; reused when
present), and so are --small-folders folders of 6 documents drawn from the personal set (a
person's small folder: each asked the personal questions it can answer and 10 absent ones; half
the documents with a copy and a revision of themselves beside them, as people keep them).
Asking a folder the questions about the set's documents it does not hold was tried as a harder
kind of absent question: the evidence cannot tell those from the questions it can answer (the
documents are alike), so the threshold fell to nothing.
Every query, and the `absent.jsonl` questions, is run in each mode; each of the top 10 results is
one example, relevant or not (an absent question's results are all not). A query gets "no good
match" when all its results are under the threshold, as `oboyu query` decides; the threshold is
the highest value that leaves at most 1% of each group's present queries so; the script reports
the share of absent questions it catches. In a query with a good match, a result is left out
only under the hide line: the highest that leaves out at most 1% of each group's right answers
(among the top 10 of such queries), the groups here being also every collection in eval/
(benchmarks/collections.py, indexed into --db-dir as transfer-NAME.duckdb). `--hide-only` keeps
the table's weights and thresholds and fits the hide lines alone: a refit of the weights on
another CPU class moves every figure a little. Last, in vector and hybrid mode, the match line:
where a query's best result is not SURE, it has a good match only when its first result's token
match (`token_match`) reaches the line, the highest that leaves at most 1% of each
development collection's answerable questions (all eleven) under it; `--match-line-only` fits it
alone. Refit whenever the default model changes.
"""

from __future__ import annotations

import functools
import json
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.collections import Collection, ask, collections, index_of
from benchmarks.harness import ROOT, add_dev_sets, dev_absent, dev_docs, dev_queries, eval_index, parser, write_text
from oboyu.index.store import Store
from oboyu.models.loading import load_default_embedder
from oboyu.models.manifest import split_engine
from oboyu.modes import Mode
from oboyu.progress import ProgressLine
from oboyu.search import confidence
from oboyu.search.confidence import FEATURES, Evidence, Model
from oboyu.search.evaluate import Query, doc_file_name, doc_id_of, index_corpus
from oboyu.search.query import search
from oboyu.search.resident import ResidentIndex

TABLE = ROOT / "oboyu" / "search" / "calibration.json"
DIGITS = 5  # the table's numbers are rounded to this many decimals
# hiding a right answer costs a person more than showing a weak one (the app shows those dimmed):
# at most 1% of the present queries of any group may get "no good match" (the issue allows 5%)
MAX_PRESENT_FLAGGED = 0.01


@dataclass
class QuerySet:
    """One index and the questions asked of it."""

    name: str  # the group it counts in, for the threshold and the report
    store: Store
    present: list[Query]
    absent: list[Query]


@dataclass
class Example:
    set: str
    folder: int  # which index of the group
    query: str
    absent: bool
    rank: int
    evidence: Evidence
    relevant: bool


def open_set(name: str, db_dir: Path, embedder) -> Store:
    return Store(eval_index(name, db_dir, embedder), read_only=True)


def small_folders(db_dir: Path, embedder, count: int, size: int = 6, seed: int = 5) -> list[QuerySet]:
    """Folders of a few documents drawn from the personal set, as a person's small folder is:
    each asked the personal questions whose document it holds, and the absent questions. Like a
    person's, half the documents come with other versions of themselves (an exact copy, `… のコピー`,
    and a revision with a paragraph gone, `…_v2`), which answer the same questions: a right answer
    need not stand out from every other file."""
    rng = random.Random(seed)
    docs = {str(d["id"]): d["text"] for d in dev_docs("personal")}
    questions = dev_queries("personal")
    absent = dev_absent("personal")
    out = []
    for i in range(count):
        chosen = rng.sample(sorted(docs), size)
        versions = {doc_id: _versions(docs[doc_id], rng) for doc_id in chosen if rng.random() < 0.5}
        db = db_dir / f"calibrate-versions-{seed}-{i}.duckdb"
        if not db.exists():
            with tempfile.TemporaryDirectory() as folder, Store(db) as store:
                for doc_id in chosen:
                    (Path(folder) / doc_file_name(doc_id)).write_text(docs[doc_id], encoding="utf-8")
                    for suffix, text in versions.get(doc_id, {}).items():
                        (Path(folder) / doc_file_name(doc_id + suffix)).write_text(text, encoding="utf-8")
                index_corpus(store, embedder, Path(folder), ProgressLine())
        store = Store(db, read_only=True)
        present = [Query(q.id, q.text, q.relevant | {d + suffix for d in q.relevant for suffix in versions.get(d, {})})
                   for q in questions if q.relevant & set(chosen)]
        out.append(QuerySet("small folders", store, present, rng.sample(absent, min(10, len(absent)))))
    return out


def _versions(text: str, rng: random.Random) -> dict[str, str]:
    """An exact copy of a document and a revision of it with one paragraph gone (or one added)."""
    paragraphs = text.split("\n\n")
    if len(paragraphs) >= 3:
        gone = rng.randrange(1, len(paragraphs))
        revised = "\n\n".join(p for k, p in enumerate(paragraphs) if k != gone)
    else:
        revised = text + "\n\n（改訂版）"
    return {" のコピー": text, "_v2": revised}


def examples_of(group: QuerySet, folder: int, embedder, mode: str) -> list[Example]:
    resident = ResidentIndex().refresh(group.store)
    out = []
    for query, absent in [*((q, False) for q in group.present), *((q, True) for q in group.absent)]:
        for result in search(resident, embedder, query.text, 10, mode=mode):
            out.append(Example(group.name, folder, query.text, absent, result.rank, Evidence.of(result.evidence),
                               not absent and doc_id_of(result.path) in query.relevant))
    return out


def typical_spread(groups: list[QuerySet], embedder) -> dict[str, float]:
    """The mean and standard deviation of a query's cosines to a collection's passages, averaged
    over every query of every large set (each set weighing the same): how alike an arbitrary
    passage looks."""
    means, spreads = [], []
    for group in groups:
        resident = ResidentIndex().refresh(group.store)
        questions = [q.text for q in [*group.present, *group.absent]]
        found = [resident.cosine_spread(vector) for vector in embedder.embed_queries(questions)]
        means.append(float(np.mean([m for m, _, _ in found])))
        spreads.append(float(np.mean([s for _, s, _ in found])))
    return {"mean": round(float(np.mean(means)), DIGITS), "std": round(float(np.mean(spreads)), DIGITS)}


def fit_logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = 1e-2, rounds: int = 100) -> tuple[np.ndarray, float]:
    """Weights and bias by Newton's method (IRLS) over weighted examples, a little L2 for stability."""
    design = np.c_[x, np.ones(len(x))]
    w = np.zeros(design.shape[1])
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-np.clip(design @ w, -40, 40)))
        hessian = design.T @ (design * (weight * p * (1 - p))[:, None]) + l2 * np.eye(len(w))
        step = np.linalg.solve(hessian, design.T @ (weight * (p - y)) + l2 * w)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def best_confidences(examples: list[Example], model: Model) -> dict[tuple[str, int, str, bool], float]:
    """(group, set number, query, absent) -> the highest confidence among its results: the query
    gets "no good match" when it is under the threshold."""
    best: dict[tuple[str, int, str, bool], float] = {}
    for e in examples:
        key = (e.set, e.folder, e.query, e.absent)
        best[key] = max(best.get(key, 0.0), model.probability(e.evidence))
    return best


def choose_threshold(best: dict[tuple[str, int, str, bool], float]) -> float:
    """The highest threshold leaving at most 1% of each group's present queries without a result."""
    limits = []
    for name in sorted({key[0] for key in best}):
        present = sorted(v for (s, _, _, absent), v in best.items() if s == name and not absent)
        if present:
            limits.append(present[int(MAX_PRESENT_FLAGGED * len(present))])
    return min(limits) if limits else 0.5


def choose_hide(right: dict[str, list[float]], threshold: float) -> float:
    """The line under which a result beside a good match is left out: the highest leaving out at
    most 1% of each group's right answers (group -> the confidences of the right answers among
    the top 10 of its queries that have a good match), and never above the threshold."""
    limits = [sorted(values)[int(MAX_PRESENT_FLAGGED * len(values))] for values in right.values() if values]
    return min([*limits, threshold])


def right_beside_good_match(examples: list[Example], model: Model) -> dict[str, list[float]]:
    """Group -> the confidence of every right answer in a query whose best result reaches the
    threshold (the answers that the hide line alone decides on)."""
    best = best_confidences(examples, model)
    right: dict[str, list[float]] = {}
    for e in examples:
        if e.relevant and best[(e.set, e.folder, e.query, e.absent)] >= model.threshold:
            right.setdefault(e.set, []).append(model.probability(e.evidence))
    return right


def reliability(examples: list[Example], model: Model, bins: int = 10) -> list[tuple[float, float, float, int]]:
    """(low, high, observed precision, examples) per confidence bin."""
    predicted = np.array([model.probability(e.evidence) for e in examples])
    truth = np.array([e.relevant for e in examples], dtype=float)
    rows = []
    for i in range(bins):
        low, high = i / bins, (i + 1) / bins
        inside = (predicted >= low) & ((predicted < high) | (i == bins - 1))
        if inside.any():
            rows.append((low, high, float(truth[inside].mean()), int(inside.sum())))
    return rows


def svg_diagram(curves: dict[str, list[tuple[float, float, float, int]]]) -> str:
    size, pad = 320, 40
    colours = {"hybrid": "#d62728", "vector": "#1f77b4", "keyword": "#2ca02c"}

    def xy(px: float, py: float) -> str:
        return f"{pad + px * size:.1f},{pad + (1 - py) * size:.1f}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size + 2 * pad + 110}" height="{size + 2 * pad}" font-family="sans-serif" font-size="11">',
             f'<rect x="{pad}" y="{pad}" width="{size}" height="{size}" fill="none" stroke="#999"/>',
             f'<polyline points="{xy(0, 0)} {xy(1, 1)}" stroke="#bbb" stroke-dasharray="4"/>',
             f'<text x="{pad + size / 2 - 60}" y="{size + pad + 28}">predicted confidence</text>',
             f'<text x="8" y="{pad - 10}">observed precision</text>']
    for i, (mode, rows) in enumerate(curves.items()):
        points = " ".join(xy((low + high) / 2, precision) for low, high, precision, _ in rows)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colours.get(mode, "#000")}" stroke-width="2"/>')
        parts.append(f'<text x="{size + pad + 10}" y="{pad + 15 + 16 * i}" fill="{colours.get(mode, "#000")}">{mode}</text>')
    return "\n".join([*parts, "</svg>\n"])


def choose_match_line(matches: dict[str, list[float]]) -> float:
    """The line under which a query's token match says it has no good match (`Model.match_line`):
    the highest leaving at most 1% of each collection's answerable queries so (collection -> each
    answerable query's token match of its first result; inf where its best result is SURE)."""
    return min(sorted(values)[int(MAX_PRESENT_FLAGGED * len(values))] for values in matches.values() if values)


def table_entry(mode: str, weights, bias: float, threshold: float, hide: float, match_line: float | None = None) -> dict:
    """One mode's entry in the table, as confidence.model_for reads it."""
    entry = {"features": list(FEATURES[mode]), "weights": [round(float(w), DIGITS) for w in weights],
             "bias": round(float(bias), DIGITS), "threshold": round(float(threshold), DIGITS),
             "hide": round(float(hide), DIGITS)}
    return entry | ({"match_line": round(float(match_line), DIGITS)} if match_line is not None else {})


def with_fit(table: dict, model_key: str, entries: dict[str, dict], reference: dict[str, float], about: str) -> dict:
    """The table with a model's fit in it (entries: mode -> table_entry; reference: its typical
    cosine spread). The keyword entry also judges models without a fit of their own (`words_only`)."""
    table = json.loads(json.dumps(table))
    table["about"] = about
    table.setdefault("reference", {})[model_key] = reference
    table.setdefault("models", {})[model_key] = entries
    table["words_only"] = entries["keyword"]
    return table


def table_text(table: dict) -> str:
    """The table as the file holds it."""
    return json.dumps(table, indent=1) + "\n"


def check(path: Path = TABLE) -> list[str]:
    """What keeps the table at `path` from being what this script writes: each fitted model's
    entries rebuilt from their own numbers, for every mode the search offers, must give the file
    back byte for byte. Fits nothing."""
    text = path.read_text(encoding="utf-8")
    table = json.loads(text)
    problems, rebuilt = [], table
    if not table.get("models"):
        problems.append("no fitted model")
    for key, fitted in table.get("models", {}).items():
        missing = [mode for mode in Mode if mode not in fitted]
        if missing or key not in table.get("reference", {}):
            problems.append(f"{key}: {'no reference spread' if not missing else 'no entry for ' + ', '.join(missing)}")
            continue
        fields = ("weights", "bias", "threshold", "hide")
        lacking = [f"{mode} {name}" for mode in Mode for name in fields if name not in fitted[mode]]
        if lacking:
            problems.append(f"{key}: no {', '.join(lacking)}")
            continue
        entries = {mode: table_entry(mode, *(fitted[mode][name] for name in fields), fitted[mode].get("match_line"))
                   for mode in Mode}
        rebuilt = with_fit(rebuilt, key, entries, table["reference"][key], table.get("about", ""))
    if not problems and table_text(rebuilt) != text:
        problems.append(f"{path} is not as {Path(__file__).name} writes it (features, rounding, words_only or layout differ)")
    return problems


def collection_examples(collection: Collection, db: Path, embedder, mode: Mode) -> list[Example]:
    """A repository collection's answerable questions, each of its top 10 results one example."""
    return [Example(collection.name, 0, query.text, False, result.rank, Evidence.of(result.evidence), right)
            for _, query, found in ask(collection, db, embedder, mode, ("answerable",)) for result, right in found]


def fit_match_lines(table: dict, model_key: str, db_dir: Path, embedder) -> dict[str, float]:
    """Mode -> its match line, fitted on every development collection (the dev sets, eval/'s
    eight), each question asked as `oboyu query` asks it with the table's weights; its first
    result's token match read. Keyword mode has none: it has no vectors to match tokens with."""
    from benchmarks.quality.transfer import asked, match_line

    unmatched = json.loads(json.dumps(table))
    for entry in unmatched["models"][model_key].values():
        entry.pop("match_line", None)  # the search below must not order by the old line
    confidence._table = functools.cache(lambda: unmatched)
    lines = {}
    for mode in (Mode.HYBRID, Mode.VECTOR):
        questions = [a for c in collections() for a in asked(c, index_of(c, db_dir, embedder), embedder, mode)
                     if not a.across]  # untold results across languages: no line is fitted on them (languages.across_languages)
        line = match_line(questions, confidence.model_for(embedder.info.model_id, mode))
        if line is not None:
            lines[mode.value] = line
    return lines


def with_match_lines(table: dict, model_key: str, lines: dict[str, float]) -> dict:
    table = json.loads(json.dumps(table))
    for mode, line in lines.items():
        table["models"][model_key][mode]["match_line"] = round(float(line), DIGITS)
    return table


def main() -> None:
    cli = parser(__doc__)
    add_dev_sets(cli)
    cli.add_argument("--small-folders", type=int, default=30, help="folders of 6 personal documents to add")
    cli.add_argument("--hide-only", action="store_true",
                     help="keep the table's weights and thresholds for the default model; fit only the hide lines")
    cli.add_argument("--match-line-only", action="store_true",
                     help="keep the table; fit only the match lines (every development collection, in --db-dir)")
    cli.add_argument("--write", action="store_true", help=f"write {TABLE.relative_to(ROOT)} and the diagram")
    cli.add_argument("--check", nargs="?", const=TABLE, type=Path, metavar="TABLE",
                     help=f"check that TABLE (default {TABLE.relative_to(ROOT)}) is as this script writes it, then exit")
    args = cli.parse_args()
    if args.check:
        problems = check(args.check)
        print("\n".join(problems) or f"{args.check}: as written by {Path(__file__).name}")
        sys.exit(1 if problems else 0)
    embedder = load_default_embedder()
    if args.match_line_only:
        table = json.loads(TABLE.read_text(encoding="utf-8"))
        model_key = confidence._calibrated_as(embedder.info.model_id)
        lines = fit_match_lines(table, model_key, args.db_dir, embedder)
        print("match lines:", json.dumps(lines))
        if args.write:
            TABLE.write_text(table_text(with_match_lines(table, model_key, lines)), encoding="utf-8")
            print(f"wrote {TABLE}")
        return
    groups = [QuerySet(name, open_set(name, args.db_dir, embedder), dev_queries(name), dev_absent(name)) for name in args.sets]
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    # one table for a model whichever engine embeds it (confidence._calibrated_as)
    model_key = confidence._calibrated_as(embedder.info.model_id) if args.hide_only else split_engine(embedder.info.model_id)[0]
    if args.hide_only:
        about = table["about"]
        reference = table["reference"][model_key]
    else:
        about = f"fitted by scripts/calibrate.py on {', '.join(args.sets)} and {args.small_folders} small folders"
        reference = typical_spread(groups, embedder)
        table.setdefault("reference", {})[model_key] = reference
        table.setdefault("models", {}).pop(model_key, None)  # the search below must not read the old fit
        confidence._table = functools.cache(lambda: table)  # the evidence below reads this run's reference
    about = about.split("; hide lines")[0] + "; hide lines also on every collection in eval/"
    groups += small_folders(args.db_dir, embedder, args.small_folders)
    # the hide line is fitted on every development collection: it only decides what is shown
    # beside a good match, and fitted on the dev sets alone it hid 5 to 10 points of right answers
    # on the others (docs/relevance.md)
    wider = [(c, index_of(c, args.db_dir, embedder)) for c in collections(dev=False)]
    names = list(dict.fromkeys(g.name for g in groups))
    entries, curves, report = {}, {}, []
    for mode in Mode:
        examples = [e for i, group in enumerate(groups) for e in examples_of(group, i, embedder, mode)]
        if args.hide_only:
            kept = table["models"][model_key][mode]
            weights, bias = np.array(kept["weights"]), kept["bias"]
        else:
            x = np.array([[getattr(e.evidence, f) for f in FEATURES[mode]] for e in examples])
            y = np.array([e.relevant for e in examples], dtype=float)
            # each group weighs the same: the large sets' many examples must not decide small folders
            counts = {n: sum(e.set == n for e in examples) for n in names}
            weights, bias = fit_logistic(x, y, np.array([len(examples) / (len(names) * counts[e.set]) for e in examples]))
        draft = Model(FEATURES[mode], tuple(float(w) for w in weights), bias, 0.0, 0.0)
        best = best_confidences(examples, draft)
        threshold = table["models"][model_key][mode]["threshold"] if args.hide_only else choose_threshold(best)
        model = Model(FEATURES[mode], tuple(float(w) for w in weights), bias, threshold, threshold)
        shown = examples + [e for c, db in wider for e in collection_examples(c, db, embedder, mode)]
        hide = choose_hide(right_beside_good_match(shown, model), threshold)
        entries[mode] = table_entry(mode, weights, bias, threshold, hide)
        curves[mode] = reliability(examples, model)
        for name in names:
            # a query with no result at all (no keyword matches) gets "no good match" too
            present = [best.get((name, i, q.text, False), 0.0) for i, g in enumerate(groups) if g.name == name for q in g.present]
            absent = [best.get((name, i, q.text, True), 0.0) for i, g in enumerate(groups) if g.name == name for q in g.absent]
            caught = f"{sum(v < threshold for v in absent) / len(absent):.1%}" if absent else "-"
            wrong = f"{sum(v < threshold for v in present) / len(present):.1%}" if present else "-"
            report.append(f"| {mode} | {name} | {len(present)} | {wrong} | {len(absent)} | {caught} | {threshold:.3f} | {hide:.4f} |")
    fitted = with_fit(table, model_key, entries, reference, about)
    fitted = with_match_lines(fitted, model_key, fit_match_lines(fitted, model_key, args.db_dir, embedder))
    print("| mode | set | present | present with no good match | absent | absent with no good match | threshold | hide |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(report))
    print("\nreliability (predicted bin: observed precision, examples)")
    for mode, rows in curves.items():
        print(f"  {mode}: " + ", ".join(f"{low:.1f}-{high:.1f}: {p:.2f} ({n})" for low, high, p, n in rows))
    print("\n" + json.dumps(entries, indent=1))
    if args.write:
        TABLE.write_text(table_text(fitted), encoding="utf-8")
        if not args.hide_only:  # the diagram is of the weights
            print(f"wrote {write_text('calibration.svg', svg_diagram(curves))}")
        print(f"wrote {TABLE}")


if __name__ == "__main__":
    main()
