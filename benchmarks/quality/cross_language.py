"""English questions about Japanese notes: the same questions asked in both languages of one
everyday folder, side by side.

eval/everyday/english.jsonl holds English versions of folder a's first 20 answerable questions and
of its 35 off-topic ones (each names the question it `translates`). Each is asked with its
Japanese original of folder a's index (benchmarks/collections.py: transfer-everyday-a.duckdb in
--db-dir, built when absent), and again of the folder with five English notes that answer none of
them (eval/everyday/english_notes.jsonl: a bilingual person's folder, where English questions are
drawn to English notes), top 10, in each mode; reported per folder and language: MRR@10, the right
note first, the right note among the results shown by default (not weak), answerable questions
told "no good match", off-topic ones caught.

    python -m benchmarks.quality.cross_language [--db-dir DIR] [--modes hybrid vector]
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from benchmarks.collections import EVAL, ask, collections, index_of
from benchmarks.harness import parser, table
from oboyu.modes import Mode
from oboyu.search.evaluate import Query, read_jsonl

ENGLISH = EVAL / "everyday" / "english.jsonl"
ENGLISH_NOTES = EVAL / "everyday" / "english_notes.jsonl"


def main() -> None:
    cli = parser(__doc__)
    cli.add_argument("--db-dir", type=Path, default=Path(tempfile.gettempdir()), help="where the indexes are kept")
    cli.add_argument("--modes", nargs="+", default=[Mode.HYBRID.value, Mode.VECTOR.value], choices=[m.value for m in Mode])
    args = cli.parse_args()
    from oboyu.models.loading import load_default_embedder

    embedder = load_default_embedder()
    folder = next(c for c in collections(dev=False) if c.name == "everyday-a")
    english = read_jsonl(ENGLISH)
    originals = {q.id: q for q in folder.answerable + folder.off}
    by_language = {
        "Japanese": ([originals[row["translates"]] for row in english if row["kind"] == "answerable"],
                     [originals[row["translates"]] for row in english if row["kind"] == "off"]),
        "English": ([Query(row["id"], row["query"], frozenset({row["relevant_doc_id"]})) for row in english if row["kind"] == "answerable"],
                    [Query(row["id"], row["query"], frozenset()) for row in english if row["kind"] == "off"]),
    }
    with_notes = replace(folder, name=f"{folder.name}-english-notes",
                         docs=folder.docs | {row["id"]: row["text"] for row in read_jsonl(ENGLISH_NOTES)})
    rows = []
    for collection, label in ((folder, "the folder"), (with_notes, "+ 5 English notes")):
        db = index_of(collection, args.db_dir, embedder)
        for mode in map(Mode, args.modes):
            for language, (answerable, off) in by_language.items():
                collection.answerable, collection.off, collection.near = answerable, off, []
                asked = list(ask(collection, db, embedder, mode))
                ranks = [next((i for i, (_, right) in enumerate(found, 1) if right), None)
                         for kind, _, found in asked if kind == "answerable"]
                shown = sum(any(right and not r.weak for r, right in found) for kind, _, found in asked if kind == "answerable")
                flagged = {kind: sum(all(r.weak for r, _ in found) for k, _, found in asked if k == kind)
                           for kind in ("answerable", "off")}
                rows.append([label, mode.value, language, len(answerable), f"{sum(1 / r for r in ranks if r) / len(ranks):.3f}",
                             f"{sum(r == 1 for r in ranks)}", f"{shown}", f"{flagged['answerable']}",
                             f"{flagged['off']} of {len(off)}"])
    print(table(["folder", "mode", "language", "answerable", "MRR@10", "right first", "right shown", "told no good match",
                 "off-topic caught"], rows, "lllrrrrrr"))


if __name__ == "__main__":
    main()
