"""Corpora the benchmarks make: notes cut from the development sets' documents, keyword-style
queries drawn from their titles, and real Office files (the tests' builders, tests/office_files.py,
imported from the repository's root as `tests.office_files`)."""

from __future__ import annotations

import random
from pathlib import Path

from benchmarks.harness import dev_docs
from tests import office_files  # noqa: F401  (re-exported: the extraction benchmarks write their files with it)


def paragraphs() -> list[str]:
    """The paragraphs (over 40 characters) of manpages-ja's and debian-reference's documents."""
    out = []
    for name in ("manpages-ja", "debian-reference"):
        for doc in dev_docs(name):
            out += [p.strip() for p in doc["text"].split("\n\n") if len(p.strip()) > 40]
    return out


def write_notes(folder: Path, files: int, note_chars: int) -> int:
    """`files` notes of consecutive paragraphs (cycling through them), at least `note_chars`
    characters each, in 100 folders; their total bytes."""
    source = paragraphs()
    at, total = 0, 0
    for i in range(files):
        body: list[str] = []
        while sum(map(len, body)) < note_chars:
            body.append(source[at % len(source)])
            at += 1
        path = folder / f"folder-{i % 100:02d}" / f"note-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f"# メモ {i}\n\n" + "\n\n".join(body) + "\n"
        path.write_text(text, encoding="utf-8")
        total += len(text.encode())
    return total


def keyword_queries(name: str, count: int, seed: int = 7) -> list[tuple[str, str]]:
    """Keyword-style queries as people type into a search box: 2 or 3 of the nouns (MeCab) of a
    document's title, sampled with a fixed seed; (query, the relevant document's id)."""
    from oboyu.documents.keywords import TAGGERS

    rng = random.Random(seed)
    out = []
    docs = [d for d in dev_docs(name) if d.get("title")]
    rng.shuffle(docs)
    for doc in docs:
        with TAGGERS.borrowed() as tagger:
            nouns = list(dict.fromkeys(t.surface for t in tagger(doc["title"])
                                       if t.feature_raw.startswith("名詞") and len(t.surface) > 1))
        if len(nouns) < 2:
            continue
        out.append((" ".join(rng.sample(nouns, min(len(nouns), rng.choice((2, 3))))), str(doc["id"])))
        if len(out) == count:
            break
    return out
