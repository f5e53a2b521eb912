"""Does the default output hold at archive size? Each everyday folder asked alone, and again with
the documents of every development collection but the everyday folders beside it (the dev sets
and the five Debian documentation sets: about 2,470 more files and 16,000 more passages, under
`archive/NAME/`; not the other people's folders, which may answer a question off-topic here), as
a person's folder keeps a few hundred notes among manuals, exports and old papers. The same
questions, the shipped model and lines (hybrid by default); for each folder and size: the share
of answerable questions whose right note is in the top 10 (`--all`) and among the results shown
by default, MRR@10, the share told "no good match", and the share of near-topic and off-topic
questions caught.

The indexes (transfer-everyday-X.duckdb, as quality.transfer builds them, and
transfer-at-size-everyday-X.duckdb) are kept in --db-dir and reused; each large one took 6 to 9
minutes to build on two cores of the Xeon with AMX (the whole run, 25 minutes).

    python -m benchmarks.quality.at_size [--db-dir DIR] [--mode hybrid] [--json]
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from benchmarks.collections import Collection, collections, index_of
from benchmarks.harness import parser, table, write_json
from benchmarks.quality.transfer import Asked, asked, judged
from oboyu.modes import Mode
from oboyu.search.confidence import model_for
from oboyu.search.evaluate import Query, ranking_metrics

ARCHIVE = "archive"  # the folder the other collections' documents go in


def at_size(folder: Collection, others: list[Collection]) -> Collection:
    """The folder with every other collection's documents beside it; its questions unchanged."""
    docs = {folder.file_name(doc_id): text for doc_id, text in folder.docs.items()}
    for other in others:
        docs.update({f"{ARCHIVE}/{other.name}/{other.file_name(doc_id)}": text for doc_id, text in other.docs.items()})
    # the questions name the folder's notes by id: their file names, as the index lists them
    renamed = {doc_id: folder.file_name(doc_id) for doc_id in folder.docs}

    def named(queries: list[Query]) -> list[Query]:
        return [replace(q, relevant=frozenset(renamed[d] for d in q.relevant)) for q in queries]

    return Collection(f"at-size-{folder.name}", docs, named(folder.answerable), named(folder.near),
                      named(folder.off), file_name=lambda path: path)


def mrr(questions: list[Asked]) -> float:
    answerable = [a for a in questions if a.kind == "answerable"]
    return sum(ranking_metrics(a.right, 1).mrr_at_10 for a in answerable) / len(answerable)


def main() -> None:
    cli = parser(__doc__)
    cli.add_argument("--db-dir", type=Path, default=Path(tempfile.gettempdir()), help="where the indexes are kept")
    cli.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.HYBRID.value)
    cli.add_argument("--json", action="store_true", help="also write results/at-size-MODE.json")
    args = cli.parse_args()
    from oboyu.models.loading import load_default_embedder

    embedder = load_default_embedder()
    mode = Mode(args.mode)
    every = collections()
    model = model_for(embedder.info.model_id, mode)
    rows, figures = [], {}
    for folder in (c for c in every if c.name.startswith("everyday-")):
        others = [c for c in every if not c.name.startswith("everyday-")]
        for label, collection in (("alone", folder), ("archive", at_size(folder, others))):
            db = index_of(collection, args.db_dir, embedder)
            questions = asked(collection, db, embedder, mode)
            got = judged(model, questions) | {"documents": len(collection.docs), "mrr_at_10": mrr(questions)}
            figures.setdefault(folder.name, {})[label] = got
            rows.append([folder.name, label, f"{len(collection.docs):,}"] + [
                "-" if got[key] is None else f"{100 * got[key]:.1f}"
                for key in ("found_all", "found_shown", "answerable_flagged", "near_caught", "off_caught")]
                + [f"{got['mrr_at_10']:.3f}"])
    print(f"mode {mode}; shares in %; the shipped model and lines")
    print(table(["folder", "size", "files", "right in top 10", "right shown", "told no good match", "near-topic caught",
                 "off-topic caught", "MRR@10"], rows, "llrrrrrrr"))
    if args.json:
        print(f"wrote {write_json(f'at-size-{mode}.json', figures)}")


if __name__ == "__main__":
    main()
