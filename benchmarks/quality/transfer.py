"""Does the confidence hold on collections it was not fitted on? Out-of-fold figures for the
weak-match line and "no good match", on every development collection.

Collections: every development collection (benchmarks/collections.py), each indexed once into
--db-dir (transfer-NAME.duckdb, reused).

For each collection it reports, in one mode:
  shipped                 the table in oboyu/search/calibration.json with one line: every result
                          under the threshold left out (as before the hide line)
  shipped, two lines      its weights and threshold (fitted on the dev sets: in-sample there,
                          out-of-sample on the other eight) with the hide line refitted on every
                          other collection, as scripts/calibrate.py fits it: the highest under
                          which at most 1% of each collection's right answers (top 10, beside a
                          good match) fall; a result beside a good match is left out only under it
  out-of-fold             the weights and threshold too refitted on every other collection
                          (calibrate.py's logistic model and threshold rule), one line
  out-of-fold, two lines  the same with its hide line
and for each: the share of answerable queries whose right file is among the top 10 (`--all`)
and among the results shown by default (not weak), the share told "no good match", and the
share of near-topic and off-topic questions told "no good match" (caught).

    python -m benchmarks.quality.transfer [--mode hybrid] [--db-dir DIR] [--json]
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from benchmarks.collections import Collection, ask, collections, index_of
from benchmarks.harness import parser, table, write_json
from oboyu.modes import Mode
from oboyu.search.confidence import FEATURES, Evidence, Model, model_for
from scripts.calibrate import MAX_PRESENT_FLAGGED, choose_hide, fit_logistic


@dataclass
class Asked:
    """One question's top results: whether each is right, and its evidence."""

    collection: str
    kind: str  # answerable | near | off
    right: list[bool]
    evidence: list[Evidence]


def asked(collection: Collection, db: Path, embedder, mode: Mode) -> list[Asked]:
    return [Asked(collection.name, kind, [right for _, right in found], [Evidence(**r.evidence) for r, _ in found])
            for kind, _, found in ask(collection, db, embedder, mode)]


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
    draft = Model(FEATURES[mode], tuple(float(w) for w in weights), bias, 0.0, 0.0)
    limits = []
    for name in names:
        best = sorted(_best(draft, a) for a in examples if a.collection == name and a.kind == "answerable")
        if best:
            limits.append(best[int(MAX_PRESENT_FLAGGED * len(best))])
    threshold = min(limits) if limits else 0.0
    one_line = Model(draft.features, draft.weights, draft.bias, threshold, threshold)
    return replace(one_line, hide=hide_line(examples, one_line))


def hide_line(examples: list[Asked], model: Model) -> float:
    """calibrate.py's hide line for these questions: the highest that leaves out at most 1% of
    each collection's right answers among the top 10 of its queries with a good match."""
    right: dict[str, list[float]] = {}
    for a in examples:
        if a.kind == "answerable" and _best(model, a) >= model.threshold:
            right.setdefault(a.collection, []).extend(model.probability(e) for e, r in zip(a.evidence, a.right) if r)
    return choose_hide(right, model.threshold)


def _best(model: Model, question: Asked) -> float:
    return max((model.probability(e) for e in question.evidence), default=0.0)


def judged(model: Model, questions: list[Asked]) -> dict[str, float | None]:
    """The figures of one collection under one model (shares, 0-1; None where there is no such
    question), a result shown as the search shows it (`Model.weak`)."""
    def share(kind: str, test: Callable[[Asked], bool]) -> float | None:
        chosen = [a for a in questions if a.kind == kind]
        return sum(map(test, chosen)) / len(chosen) if chosen else None

    def shown(a: Asked) -> bool:
        good = _best(model, a) >= model.threshold
        return any(r and not model.weak(model.probability(e), good) for e, r in zip(a.evidence, a.right))

    def flagged(a: Asked) -> bool:
        return _best(model, a) < model.threshold

    return {"found_all": share("answerable", lambda a: any(a.right)), "found_shown": share("answerable", shown),
            "answerable_flagged": share("answerable", flagged), "near_caught": share("near", flagged),
            "off_caught": share("off", flagged)}


def one_line(model: Model) -> Model:
    """The model as it was before the hide line: every result under the threshold left out."""
    return replace(model, hide=model.threshold)


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
    rows, figures = [], {}
    for name, own in questions.items():
        others = [a for other, qs in questions.items() if other != name for a in qs]
        out_of_fold = fit(others, mode)
        shipped_hide = hide_line(others, shipped)
        figures[name] = {"shipped": judged(one_line(shipped), own),
                         "shipped_two_lines": judged(replace(shipped, hide=shipped_hide), own),
                         "out_of_fold": judged(one_line(out_of_fold), own), "out_of_fold_two_lines": judged(out_of_fold, own),
                         "threshold_out_of_fold": out_of_fold.threshold, "hide_out_of_fold": out_of_fold.hide,
                         "threshold_shipped": shipped.threshold, "hide_shipped_out_of_fold": shipped_hide,
                         "hide_shipped": shipped.hide}
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
