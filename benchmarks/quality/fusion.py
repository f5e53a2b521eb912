"""Hybrid fusion learned with cross-validation: the weights of its legs, the keyword ceiling, how
far the words of files' first passages count, and the confidence's share in the order, fitted by
coordinate ascent on macro nDCG@10 over development collections, and judged out of fold: each
collection ranked with the fusion fitted on all the others (leave one collection out).

Each answerable question is asked once: every leg's candidates, their files, contents and
confidences are kept, and any fusion's top ten is then worked out from them as `search()` does
(checked against `search()` with the shipped fusion: the right answers' ranks must agree). The
confidence is the shipped table's (fitted on personal, debian-reference and manpages-ja).

    python -m benchmarks.quality.fusion [--db-dir DIR] [--json NAME]

Prints every collection's nDCG@10 and MRR@10 for vector, the shipped fusion, the out-of-fold one,
and a learned re-order out of fold (a logistic model over what is known of the shipped fusion's 20
best files: each leg's scaled score, the fusion, the confidence and its evidence, the rank and the
query's length, ordering them instead of fusion plus a share of the confidence); their macro
means; and the fusion fitted on every collection.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np

from benchmarks.collections import Collection, ask, collections, index_of
from benchmarks.harness import log, parser, table, write_json
from benchmarks.quality.ranking import collection_metrics, mode_metrics
from oboyu.documents.keywords import words
from oboyu.index.store import Store
from oboyu.modes import Mode
from oboyu.search.confidence import Evidence, gather, model_for, reference_for
from oboyu.search.evaluate import ranking_metrics
from oboyu.search.fusion import scaled
from oboyu.search.query import HYBRID, ORDER_DEPTH, Fusion, best_bm25, rank_chunks
from oboyu.search.resident import ResidentIndex

LEGS = ("vector", "keyword", "lead", "lead_words")
CEILINGS = (0.0, 0.25, 0.5, 0.75, 1.0)  # keyword ceilings tried: each leg's scaling is kept for each
STEPS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # multiples of a parameter's value tried in a pass
PASSES = 2
EVIDENCE = tuple(f.name for f in fields(Evidence))


@dataclass
class Asked:
    """One question's candidates: every chunk of any leg, in chunk id order."""

    relevant: int  # right files
    right: np.ndarray  # [chunks] whether its file is a right answer
    file: np.ndarray  # [chunks] its file, as a number
    content: np.ndarray  # [chunks] its file's content, as a number (copies share one)
    confidence: np.ndarray  # [chunks]
    evidence: np.ndarray  # [chunks, EVIDENCE] what the confidence is computed from
    scaled: dict[tuple[str, float], np.ndarray]  # (leg, ceiling) -> [chunks] the leg's scaled score
    query_words: int


def scaled_leg(ranking, ids: dict[str, int], ceiling: float, by_file: dict[str, str] | None, files: np.ndarray,
               file_code: dict[str, int]) -> np.ndarray:
    """A leg's scores scaled as fusion scales them (`fusion.scaled`), spread over the candidates:
    a passage leg's to its chunk, a file leg's to every chunk of its file."""
    out = np.zeros(len(ids))
    for cid, value in scaled(ranking, ceiling):
        if by_file is None:
            out[ids[cid]] = value
        elif cid in by_file:
            out[files == file_code[by_file[cid]]] = value
    return out


def asked(collection: Collection, db: Path, embedder) -> list[Asked]:
    with Store(db, read_only=True) as store:
        root = store.roots()[0].path
        index = ResidentIndex().refresh(store)
    judge = model_for(index.model_id(), Mode.HYBRID)
    doc_of = {collection.file_name(doc_id): doc_id for doc_id in collection.docs}
    out = []
    for query in collection.answerable:
        terms = words(query.text)
        vector = embedder.embed_queries([query.text])[0]
        legs = rank_chunks(index, embedder, query.text, terms, 100, None, Mode.HYBRID, vector)
        rarity = index.term_rarity(terms)
        full_match = best_bm25(rarity)
        cids = sorted({cid for ranking in legs.values() for cid, _ in ranking})
        files = index.files_of_chunks(cids)
        cids = [cid for cid in cids if cid in files]
        hits = index.chunks_by_id(cids)
        same_file = {cid: hits[cid].content or files[cid] for cid in cids}
        in_pool = {cid for cid, _ in legs["vector"]}
        exact = index.cosines([cid for cid in cids if cid not in in_pool], vector)
        evidence = gather(index.terms_in(cids, terms), terms, rarity, same_file, legs["vector"], legs["keyword"],
                          index.cosine_spread(vector), reference_for(index.model_id()), full_match, exact)
        ids = {cid: i for i, cid in enumerate(cids)}
        file_code = {path: i for i, path in enumerate(sorted(set(files.values())))}
        file_of = np.array([file_code[files[cid]] for cid in cids])
        content_code = {key: i for i, key in enumerate(sorted(set(same_file.values())))}
        scaled = {}
        for leg in LEGS:
            for ceiling in CEILINGS if leg in ("keyword", "lead_words") else (0.0,):
                by_file = files if leg in ("lead", "lead_words") else None
                scaled[leg, ceiling] = scaled_leg(legs[leg], ids, ceiling * full_match, by_file, file_of, file_code)
        right = [doc_of.get(str(Path(files[cid]).relative_to(root))) in query.relevant for cid in cids]
        out.append(Asked(len(query.relevant), np.array(right), file_of,
                         np.array([content_code[same_file[cid]] for cid in cids]),
                         np.array([judge.probability(evidence[cid]) for cid in cids]),
                         np.array([[getattr(evidence[cid], name) for name in EVIDENCE] for cid in cids]), scaled,
                         len(set(terms))))
    return out


def candidates(a: Asked, fusion: Fusion, depth: int = ORDER_DEPTH) -> tuple[np.ndarray, np.ndarray]:
    """The fusion's `depth` best files (each by its best chunk, copies folded into the first),
    best first, and every chunk's fused score."""
    weights = fusion.weights(a.query_words)
    fused = np.zeros(len(a.right))
    for leg in LEGS:  # in the order fusion adds them: the same sums to the last bit
        fused = fused + weights[leg] * a.scaled[leg, fusion.keyword_ceiling if leg in ("keyword", "lead_words") else 0.0]
    order = np.argsort(-fused, kind="stable")  # ties in chunk id order, as fusion sorts them
    _, first = np.unique(a.file[order], return_index=True)
    best = order[np.sort(first)][: 2 * depth]  # the best chunk of each file, best files first
    _, distinct = np.unique(a.content[best], return_index=True)
    return best[np.sort(distinct)][:depth], fused


def top_ten(a: Asked, fusion: Fusion) -> list[bool]:
    """Whether each of the fusion's ten best files is right, as `search()` orders them."""
    chosen, fused = candidates(a, fusion)
    ordered = chosen[np.argsort(-(fused[chosen] + fusion.confidence_share * a.confidence[chosen]), kind="stable")]
    return a.right[ordered].tolist()


# the learned re-order: a logistic model over what is known of each of the shipped fusion's
# REORDER_DEPTH best files, which orders them instead of fusion plus a share of the confidence
REORDER_DEPTH = 20


def reorder_features(a: Asked) -> tuple[np.ndarray, np.ndarray]:
    """[files, features] of the shipped fusion's best files, and whether each is right."""
    chosen, fused = candidates(a, HYBRID, REORDER_DEPTH)
    legs = [a.scaled[leg, HYBRID.keyword_ceiling if leg in ("keyword", "lead_words") else 0.0][chosen] for leg in LEGS]
    x = np.column_stack([fused[chosen], a.confidence[chosen], *legs, a.evidence[chosen],
                         1 / np.arange(1, len(chosen) + 1), np.full(len(chosen), np.log1p(a.query_words))])
    return x, a.right[chosen]


def fit_reorder(questions: dict[str, list[Asked]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Standardising means and deviations, weights and bias; each collection weighs the same."""
    from scripts.calibrate import fit_logistic

    xs, ys, ws = [], [], []
    for asked_ in questions.values():
        for a in asked_:
            x, y = reorder_features(a)
            xs.append(x)
            ys.append(y.astype(float))
            ws.append(np.full(len(y), 1 / (len(asked_) * len(y))))
    x = np.vstack(xs)
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    weights, bias = fit_logistic((x - mean) / std, np.concatenate(ys), np.concatenate(ws), l2=1e-3)
    return mean, std, weights, bias


def reordered_metrics(questions: list[Asked], model) -> dict[str, float]:
    mean, std, weights, bias = model
    per_query = []
    for a in questions:
        x, right = reorder_features(a)
        order = np.argsort(-(((x - mean) / std) @ weights + bias), kind="stable")
        per_query.append(ranking_metrics(right[order][:ORDER_DEPTH].tolist(), a.relevant))
    return collection_metrics(per_query)


def ndcg(questions: dict[str, list[Asked]], fusion: Fusion) -> float:
    """Macro mean nDCG@10 over the collections."""
    return statistics.fmean(
        statistics.fmean(ranking_metrics(top_ten(a, fusion), a.relevant).ndcg_at_10 for a in asked_)
        for asked_ in questions.values())


def fit(questions: dict[str, list[Asked]], start: Fusion = HYBRID) -> Fusion:
    """Coordinate ascent from `start`: each parameter in turn set to the multiple of its value in
    `start` (the keyword ceiling: the value among CEILINGS) that gives the best macro nDCG@10."""
    best, score = start, ndcg(questions, start)
    for _ in range(PASSES):
        moved = False
        for name in (f.name for f in fields(Fusion)):
            base = getattr(start, name)
            tried = CEILINGS if name == "keyword_ceiling" else sorted({type(base)(base * step) for step in STEPS})
            for candidate in tried:
                fusion = replace(best, **{name: candidate})  # type: ignore[arg-type]
                if fusion != best and (s := ndcg(questions, fusion)) > score + 1e-6:
                    best, score, moved = fusion, s, True
        if not moved:
            break
    return best


def metrics(questions: list[Asked], fusion: Fusion) -> dict[str, float]:
    return collection_metrics([ranking_metrics(top_ten(a, fusion), a.relevant) for a in questions])


def agrees_with_search(collection: Collection, db: Path, embedder, questions: list[Asked]) -> float:
    """The share of questions whose right answers `search()` ranks where `top_ten` does."""
    found = [[right for _, right in hits] for _, _, hits in ask(collection, db, embedder, Mode.HYBRID, kinds=("answerable",))]
    return statistics.fmean(f == top_ten(a, HYBRID)[: len(f)] for f, a in zip(found, questions))


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--db-dir", type=Path, default=Path(tempfile.gettempdir()) / "oboyu-transfer")
    p.add_argument("--json", metavar="NAME", help="also write benchmarks/results/NAME.json")
    args = p.parse_args()
    from oboyu.models.loading import load_default_embedder

    args.db_dir.mkdir(parents=True, exist_ok=True)
    embedder = load_default_embedder()
    every = collections()
    dbs = {c.name: index_of(c, args.db_dir, embedder) for c in every}
    questions = {c.name: asked(c, dbs[c.name], embedder) for c in every}
    for c in every:
        share = agrees_with_search(c, dbs[c.name], embedder, questions[c.name])
        log(f"{c.name}: {len(questions[c.name])} questions, {share:.1%} ranked as search() ranks them")
    figures = {}
    for c in every:
        others = {name: q for name, q in questions.items() if name != c.name}
        held_out = fit(others)
        figures[c.name] = {"vector": collection_metrics(mode_metrics(c, dbs[c.name], embedder, Mode.VECTOR)), "shipped": metrics(questions[c.name], HYBRID),
                           "out_of_fold": metrics(questions[c.name], held_out), "fitted_without": asdict(held_out),
                           "reordered_out_of_fold": reordered_metrics(questions[c.name], fit_reorder(others))}
        log(f"{c.name}: nDCG@10 shipped {figures[c.name]['shipped']['ndcg_at_10']:.4f}, "
            f"out of fold {figures[c.name]['out_of_fold']['ndcg_at_10']:.4f}")
    on_all = fit(questions)
    kinds = ("vector", "shipped", "out_of_fold", "reordered_out_of_fold")
    macro = {k: {m: round(statistics.fmean(f[k][m] for f in figures.values()), 4) for m in ("ndcg_at_10", "mrr_at_10")}
             for k in kinds}
    rows = [[name, *(f"{f[k]['ndcg_at_10']:.3f} / {f[k]['mrr_at_10']:.3f}" for k in kinds),
             "yes" if f["out_of_fold"]["mrr_at_10"] >= f["vector"]["mrr_at_10"] else "no"] for name, f in figures.items()]
    rows.append(["macro mean", *(f"{macro[k]['ndcg_at_10']:.3f} / {macro[k]['mrr_at_10']:.3f}" for k in kinds), ""])
    print(table(["collection", *(f"{k} nDCG@10 / MRR@10" for k in kinds), "out of fold ≥ vector (MRR)"], rows))
    print(f"fitted on every collection: {on_all}")
    if args.json:
        write_json(f"{args.json}.json", {"collections": figures, "macro": macro, "fitted_on_all": asdict(on_all)})


if __name__ == "__main__":
    main()
