"""The development data kept in the repository (eval/) is what its recipes write, and whole: every
question's note exists, ids are unique, and only the Debian packages the project may develop on
are there (the other Japanese documentation packages are held out for judging)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

EVAL = Path(__file__).resolve().parents[1] / "eval"
DEVELOPMENT_PACKAGES = {"maint-guide-ja", "debian-policy-ja", "debian-edu-doc-ja", "aptitude-doc-ja", "kicad-doc-ja"}


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_the_everyday_notes_are_what_their_recipe_builds() -> None:
    done = subprocess.run([sys.executable, str(EVAL / "everyday" / "build.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_everyday_questions_point_at_notes_of_their_own_folder() -> None:
    docs = {d["id"]: d for d in read_jsonl(EVAL / "everyday" / "docs.jsonl.gz")}
    answerable = read_jsonl(EVAL / "everyday" / "queries.jsonl")
    near = read_jsonl(EVAL / "everyday" / "near.jsonl")
    off = read_jsonl(EVAL / "everyday" / "off.jsonl")
    assert len(docs) >= 150 and len(answerable) >= 150 and len(near) >= 100 and len(off) >= 100
    ids = [q["id"] for q in answerable + near + off]
    assert len(ids) == len(set(ids))
    for q in answerable:
        assert docs[q["relevant_doc_id"]]["folder"] == q["folder"], q
    for q in near:
        assert q["topic_doc_ids"] and all(docs[d]["folder"] == q["folder"] for d in q["topic_doc_ids"]), q


def test_the_english_questions_render_japanese_ones_of_their_folder() -> None:
    originals = {q["id"]: q for name in ("queries", "off") for q in read_jsonl(EVAL / "everyday" / f"{name}.jsonl")}
    english = read_jsonl(EVAL / "everyday" / "english.jsonl")
    assert len({q["id"] for q in english}) == len(english) and not {q["id"] for q in english} & originals.keys()
    for q in english:
        original = originals[q["translates"]]
        assert q["folder"] == original["folder"] and q["query"].isascii(), q
        assert q.get("relevant_doc_id") == original.get("relevant_doc_id"), q
        assert q["kind"] == ("answerable" if "relevant_doc_id" in original else "off"), q


def test_the_english_notes_are_english_and_new_to_their_folder() -> None:
    from oboyu.text import written_in

    notes = read_jsonl(EVAL / "everyday" / "english_notes.jsonl")
    with gzip.open(EVAL / "everyday" / "docs.jsonl.gz", "rt", encoding="utf-8") as handle:
        ids = {json.loads(line)["id"] for line in handle}
    assert len(notes) == 5 and len({n["id"] for n in notes}) == 5 and not {n["id"] for n in notes} & ids
    assert all(n["folder"] == "a" and n["id"].startswith("a/") and written_in(n["text"]) == "latin" for n in notes)


def test_the_debian_collections_are_known_item_sets_of_the_development_packages_only() -> None:
    folders = {p.name for p in (EVAL / "debian-docs").iterdir() if p.is_dir()}
    assert folders == DEVELOPMENT_PACKAGES
    for name in sorted(folders):
        docs = {d["id"]: d for d in read_jsonl(EVAL / "debian-docs" / name / "docs.jsonl.gz")}
        queries = read_jsonl(EVAL / "debian-docs" / name / "queries.jsonl")
        assert queries and all(docs[q["relevant_doc_id"]]["text"].strip() for q in queries), name
        assert len({q["id"] for q in queries}) == len(queries), name
        assert len({q["query"] for q in queries}) == len(queries), f"{name}: a query with two answers"
