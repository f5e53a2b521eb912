"""Does the confidence hold on collections it was not fitted on? Out-of-fold figures for the
weak-match line and "no good match", on every development collection.

Collections: every development collection (benchmarks/collections.py), each indexed once into
--db-dir (transfer-NAME.duckdb, reused).

For each collection it reports, in one mode (every line below refitted on every *other*
collection, as scripts/calibrate.py fits it, so that no figure is of a line fitted on the
collection it judges):
  shipped, threshold      the shipped weights and threshold (fitted on the dev sets: in-sample
                          there, out-of-sample on the other eight) and the hide line: beside a
                          good match a result is left out only under it (the highest under which
                          at most 1% of each collection's right answers, top 10, fall); "no good
                          match" when no result reaches the threshold
  shipped                 the same, "no good match" told as `oboyu query` tells it: where the best
                          result is not SURE, by the first result's token match under the match
                          line (the highest leaving at most 1% of each collection's answerable
                          questions so)
  out-of-fold, threshold  the weights and threshold too refitted on every other collection
                          (calibrate.py's logistic model and threshold rule), with the hide line
  out-of-fold             the same with the match line
and for each: the share of answerable queries whose right file is among the top 10 (`--all`)
and among the results shown by default (not weak), the share told "no good match", and the
share of near-topic and off-topic questions told "no good match" (caught).

    python -m benchmarks.quality.transfer [--mode hybrid] [--db-dir DIR] [--json]
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from benchmarks.collections import Collection, ask, collections, index_of
from benchmarks.harness import parser, table, write_json
from oboyu.index.records import embedding_text
from oboyu.index.store import Store
from oboyu.models.token_match import token_match
from oboyu.modes import Mode
from oboyu.search.confidence import FEATURES, SURE, Evidence, Model, model_for
from scripts.calibrate import MAX_PRESENT_FLAGGED, choose_hide, choose_match_line, fit_logistic


@dataclass
class Asked:
    """One question's top results: whether each is right, and its evidence."""

    collection: str
    kind: str  # answerable | near | off
    right: list[bool]
    evidence: list[Evidence]
    match: float | None = None  # the token match of its first result (`token_match.token_match`)
    untold: list[bool] = field(default_factory=list)  # each result's `across_languages`: never weak

    @property
    def across(self) -> bool:
        """In English among Japanese results without its words (`languages.across_languages`)."""
        return any(self.untold)


def asked(collection: Collection, db: Path, embedder, mode: Mode) -> list[Asked]:
    questions = list(ask(collection, db, embedder, mode))
    with Store(db, read_only=True) as store:
        inputs = store.embedding_inputs(list({found[0][0].chunk_id for _, _, found in questions if found}))

    def match(query: str, found: list) -> float | None:
        return token_match(embedder, query, embedding_text(*inputs[found[0][0].chunk_id])) if found else None

    return [Asked(collection.name, kind, [right for _, right in found], [Evidence.of(r.evidence) for r, _ in found],
                  match(query.text, found), [r.across_languages for r, _ in found])
            for kind, query, found in questions]


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
    two_lines = replace(one_line, hide=hide_line(examples, one_line))
    return replace(two_lines, match_line=match_line(examples, two_lines))


def match_line(examples: list[Asked], model: Model) -> float | None:
    """calibrate.py's match line for these questions (None where no token match was measured)."""
    matches: dict[str, list[float]] = {}
    for a in examples:
        if a.kind == "answerable" and a.match is not None:
            matches.setdefault(a.collection, []).append(a.match if _best(model, a) < SURE else math.inf)
    return choose_match_line(matches) if matches else None


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


def no_good_match(model: Model, question: Asked) -> bool:
    """As `query.has_good_match` tells it."""
    return not question.across and not model.has_good_match(_best(model, question), question.match)


def judged(model: Model, questions: list[Asked]) -> dict[str, float | None]:
    """The figures of one collection under one model (shares, 0-1; None where there is no such
    question), a result shown as the search shows it (`Model.weak`)."""
    def share(kind: str, test: Callable[[Asked], bool]) -> float | None:
        chosen = [a for a in questions if a.kind == kind]
        return sum(map(test, chosen)) / len(chosen) if chosen else None

    def shown(a: Asked) -> bool:
        good = not no_good_match(model, a)
        return any(r and (untold or not model.weak(model.probability(e), good))
                   for e, r, untold in zip(a.evidence, a.right, a.untold or [False] * len(a.right)))

    def flagged(a: Asked) -> bool:
        return no_good_match(model, a)

    return {"found_all": share("answerable", lambda a: any(a.right)), "found_shown": share("answerable", shown),
            "answerable_flagged": share("answerable", flagged), "near_caught": share("near", flagged),
            "off_caught": share("off", flagged)}


LABELS = {"shipped_threshold": "shipped, threshold", "shipped": "shipped",
          "out_of_fold_threshold": "out-of-fold, threshold", "out_of_fold": "out-of-fold"}


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
        # a question across languages has untold results: no line is fitted on it
        others = [a for other, qs in questions.items() if other != name for a in qs if not a.across]
        out_of_fold = fit(others, mode)
        # the shipped weights and threshold (fitted on the dev sets) with its lines refitted on the others
        two_lines = replace(shipped, hide=hide_line(others, shipped), match_line=None)
        as_shipped = replace(two_lines, match_line=match_line(others, two_lines))
        variants = {"shipped_threshold": two_lines, "shipped": as_shipped,
                    "out_of_fold_threshold": replace(out_of_fold, match_line=None), "out_of_fold": out_of_fold}
        figures[name] = {key: judged(model, own) for key, model in variants.items()} | {
            "threshold_out_of_fold": out_of_fold.threshold, "hide_out_of_fold": out_of_fold.hide,
            "match_line_out_of_fold": out_of_fold.match_line, "threshold_shipped": shipped.threshold,
            "hide_shipped_out_of_fold": two_lines.hide, "match_line_shipped_out_of_fold": as_shipped.match_line,
            "hide_shipped": shipped.hide, "match_line_shipped": shipped.match_line,
            "across_languages": sum(a.across for a in own)}
        for key, label in LABELS.items():
            got = figures[name][key]
            rows.append([name, label, sum(a.kind == "answerable" for a in own), percent(got["found_all"]),
                         percent(got["found_shown"]), percent(got["answerable_flagged"]), percent(got["near_caught"]),
                         percent(got["off_caught"])])
    print(f"mode {mode}; shares in %; out-of-fold: fitted on every other collection")
    print("questions across languages (their Japanese results untold): " + ", ".join(f"{n} {f['across_languages']}" for n, f in figures.items()))
    print(table(["collection", "model", "answerable", "right in top 10", "right shown", "told no good match",
                 "near-topic caught", "off-topic caught"], rows, "llrrrrrr"))
    if args.json:
        print(f"wrote {write_json(f'transfer-{mode}.json', figures)}")


if __name__ == "__main__":
    main()
