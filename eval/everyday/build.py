#!/usr/bin/env python3
"""Build the "everyday" evaluation set from its readable source under src/.

Source (edit these, then rerun this script):
  src/a/..., src/b/..., src/c/...   the notes, one file each; the document id is the
                                    path relative to src/ (e.g. "a/家計/ふるさと納税2023.md")
  src/questions/{a,b,c}.jsonl       the questions, one JSON object a line, with "kind":
      answerable: id, kind, query, relevant_doc_id
      near:       id, kind, query, topic_doc_ids, why
      off:        id, kind, query

Built artefacts (next to this script):
  docs.jsonl.gz   {"id", "folder", "topic", "text"}  (sorted by id, gzip mtime=0)
  queries.jsonl   {"id", "folder", "query", "relevant_doc_id", "verbatim_in_doc"}
  near.jsonl      {"id", "folder", "query", "topic_doc_ids", "why"}
  off.jsonl       {"id", "folder", "query"}
  README.md       only the block between the "counts" markers is rewritten

Usage:
  python3 build.py                 validate and write the artefacts
  python3 build.py --check         validate; exit 1 if any artefact differs from what would be written
  python3 build.py --materialize DIR
                                   also write every note as a file DIR/<id> (for `oboyu index DIR`)

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
FOLDERS = ("a", "b", "c")
NOTE_SUFFIXES = (".md", ".txt")

# Topic tag by directory prefix (longest prefix wins).
TOPIC_BY_DIR = {
    "a/仕事/議事録": "meeting",
    "a/仕事/手順": "work_manual",
    "a/出張": "travel",
    "a/旅行": "travel",
    "a/家計": "money",
    "a/健康": "health",
    "a/子ども": "kids_school",
    "a/家": "home",
    "a/PC": "pc",
    "a/車": "vehicle",
    "a/行事": "events",
    "a/買い物": "shopping",
    "b/研究": "study",
    "b/勉強": "study",
    "b/就活": "job_hunting",
    "b/ゼミ": "meeting",
    "b/バイト": "work_manual",
    "b/料理": "recipe",
    "b/お金": "money",
    "b/健康": "health",
    "b/住まい": "home",
    "b/趣味": "hobby",
    "b/旅行": "travel",
    "b/買い物": "shopping",
    "b/自転車": "vehicle",
    "b/PC": "pc",
    "c/店/手順": "work_manual",
    "c/店/打合せ": "meeting",
    "c/レシピ": "recipe",
    "c/お金": "money",
    "c/健康": "health",
    "c/介護": "care",
    "c/家": "home",
    "c/猫": "pet",
    "c/行事": "events",
    "c/車": "vehicle",
    "c/買い物": "shopping",
    "c/趣味": "hobby",
    "c/メモ": "memo",
}

# Minima from the issue.
MIN_DOCS_PER_FOLDER = 50
MIN_DOCS_TOTAL = 150
MIN_TOPICS_PER_FOLDER = 8
MIN_TOPICS_TOTAL = 10
MIN_PER_FOLDER = {"answerable": 50, "near": 33, "off": 33}
MIN_TOTAL = {"answerable": 150, "near": 100, "off": 100}
# "A minority (~25%) may share exact words": fail above this share per folder.
MAX_VERBATIM_SHARE = 0.30
VERBATIM_RUN = 6

COUNTS_START = "<!-- counts:start (written by build.py) -->"
COUNTS_END = "<!-- counts:end -->"


class BuildError(Exception):
    pass


def topic_of(doc_id: str) -> str | None:
    best = None
    for prefix, tag in TOPIC_BY_DIR.items():
        if doc_id.startswith(prefix + "/") and (best is None or len(prefix) > len(best[0])):
            best = (prefix, tag)
    return best[1] if best else None


def load_docs(errors: list[str]) -> list[dict]:
    docs = []
    for folder in FOLDERS:
        base = SRC / folder
        if not base.is_dir():
            errors.append(f"missing folder {base}")
            continue
        for path in sorted(base.rglob("*")):
            if not path.is_file():
                continue
            rel = path.relative_to(SRC).as_posix()
            if path.suffix not in NOTE_SUFFIXES:
                errors.append(f"{rel}: unexpected file type (only {NOTE_SUFFIXES})")
                continue
            text = path.read_text(encoding="utf-8").rstrip()
            if not text.strip():
                errors.append(f"{rel}: empty text")
            topic = topic_of(rel)
            if topic is None:
                errors.append(f"{rel}: no topic for its folder; add it to TOPIC_BY_DIR")
            docs.append({"id": rel, "folder": folder, "topic": topic, "text": text})
    docs.sort(key=lambda d: d["id"])
    return docs


def norm_query(q: str) -> str:
    q = unicodedata.normalize("NFKC", q).strip().lower()
    return q.rstrip("?？。 ")


def longest_shared_run(query: str, text: str) -> int:
    """Length of the longest substring of `query` that occurs verbatim in `text`."""
    best = 0
    n = len(query)
    for i in range(n):
        # grow from the current best so the loop stays short
        j = i + best + 1
        while j <= n and query[i:j] in text:
            best = j - i
            j += 1
    return best


def load_questions(docs_by_id: dict[str, dict], errors: list[str]):
    answerable, near, off = [], [], []
    seen_ids: set[str] = set()
    seen_queries: dict[str, str] = {}
    for folder in FOLDERS:
        path = SRC / "questions" / f"{folder}.jsonl"
        if not path.is_file():
            errors.append(f"missing {path.relative_to(HERE)}")
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path.relative_to(HERE)}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: bad JSON ({exc})")
                continue
            qid, kind, query = row.get("id"), row.get("kind"), row.get("query")
            if not qid or not isinstance(query, str) or not query.strip():
                errors.append(f"{where}: needs id and a non-empty query")
                continue
            if not qid.startswith(folder + "-"):
                errors.append(f"{where}: id {qid} should start with '{folder}-'")
            if qid in seen_ids:
                errors.append(f"{where}: duplicate id {qid}")
            seen_ids.add(qid)
            nq = norm_query(query)
            if nq in seen_queries:
                errors.append(f"{where}: query duplicates {seen_queries[nq]}: {query}")
            seen_queries[nq] = qid

            def check_doc(doc_id, field, where=where, folder=folder):
                doc = docs_by_id.get(doc_id)
                if doc is None:
                    errors.append(f"{where}: {field} {doc_id!r} is not a note")
                elif doc["folder"] != folder:
                    errors.append(f"{where}: {field} {doc_id!r} is in another folder")
                return doc

            if kind == "answerable":
                doc = check_doc(row.get("relevant_doc_id"), "relevant_doc_id")
                run = longest_shared_run(query, doc["text"]) if doc else 0
                answerable.append({
                    "id": qid, "folder": folder, "query": query,
                    "relevant_doc_id": row.get("relevant_doc_id"),
                    "verbatim_in_doc": run >= VERBATIM_RUN or query in (doc["text"] if doc else ""),
                })
            elif kind == "near":
                ids = row.get("topic_doc_ids")
                if not isinstance(ids, list) or not ids:
                    errors.append(f"{where}: near question needs topic_doc_ids")
                    ids = []
                for d in ids:
                    check_doc(d, "topic_doc_ids")
                if len(set(ids)) != len(ids):
                    errors.append(f"{where}: repeated topic_doc_ids")
                why = row.get("why")
                if not isinstance(why, str) or not why.strip():
                    errors.append(f"{where}: near question needs why")
                near.append({"id": qid, "folder": folder, "query": query,
                             "topic_doc_ids": ids, "why": why})
            elif kind == "off":
                off.append({"id": qid, "folder": folder, "query": query})
            else:
                errors.append(f"{where}: unknown kind {kind!r}")
    for rows in (answerable, near, off):
        rows.sort(key=lambda r: r["id"])
    return answerable, near, off


def jsonl_bytes(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def stats(docs, answerable, near, off):
    per = {}
    for f in FOLDERS:
        fd = [d for d in docs if d["folder"] == f]
        topics = Counter(d["topic"] for d in fd)
        ans = [q for q in answerable if q["folder"] == f]
        per[f] = {
            "docs": len(fd),
            "chars": sum(len(d["text"]) for d in fd),
            "lines_min": min((d["text"].count("\n") + 1 for d in fd), default=0),
            "lines_max": max((d["text"].count("\n") + 1 for d in fd), default=0),
            "topics": dict(sorted(topics.items())),
            "answerable": len(ans),
            "verbatim": sum(q["verbatim_in_doc"] for q in ans),
            "near": sum(q["folder"] == f for q in near),
            "off": sum(q["folder"] == f for q in off),
        }
    return per


def validate_counts(per, docs, answerable, near, off, errors):
    for f, s in per.items():
        if s["docs"] < MIN_DOCS_PER_FOLDER:
            errors.append(f"folder {f}: {s['docs']} notes < {MIN_DOCS_PER_FOLDER}")
        topics = [t for t in s["topics"] if t != "memo"]
        if len(topics) < MIN_TOPICS_PER_FOLDER:
            errors.append(f"folder {f}: {len(topics)} topics < {MIN_TOPICS_PER_FOLDER}")
        for kind, minimum in MIN_PER_FOLDER.items():
            if s[kind] < minimum:
                errors.append(f"folder {f}: {s[kind]} {kind} questions < {minimum}")
        if s["answerable"] and s["verbatim"] / s["answerable"] > MAX_VERBATIM_SHARE:
            errors.append(f"folder {f}: {s['verbatim']}/{s['answerable']} answerable questions "
                          f"are verbatim (> {MAX_VERBATIM_SHARE:.0%})")
    if len(docs) < MIN_DOCS_TOTAL:
        errors.append(f"{len(docs)} notes < {MIN_DOCS_TOTAL}")
    all_topics = {d["topic"] for d in docs} - {"memo", None}
    if len(all_topics) < MIN_TOPICS_TOTAL:
        errors.append(f"{len(all_topics)} topics < {MIN_TOPICS_TOTAL}")
    for kind, rows in (("answerable", answerable), ("near", near), ("off", off)):
        if len(rows) < MIN_TOTAL[kind]:
            errors.append(f"{len(rows)} {kind} questions < {MIN_TOTAL[kind]}")


def warnings_for(docs, near, off):
    """Soft checks: unanswerable questions that share a long run with a note of their folder."""
    by_folder = defaultdict(list)
    for d in docs:
        by_folder[d["folder"]].append(d)
    out = []
    for q in near + off:
        for d in by_folder[q["folder"]]:
            run = longest_shared_run(q["query"], d["text"])
            if run >= 8:
                out.append(f"{q['id']} ({q['query']}) shares {run} chars with {d['id']}")
    return out


def counts_markdown(per, docs, answerable, near, off) -> str:
    lines = [COUNTS_START, ""]
    lines.append("| folder | notes | characters | lines per note | answerable (verbatim) | near-topic | off-topic |")
    lines.append("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for f, s in per.items():
        lines.append(f"| `{f}` | {s['docs']} | {s['chars']:,} | {s['lines_min']}–{s['lines_max']} | "
                     f"{s['answerable']} ({s['verbatim']}) | {s['near']} | {s['off']} |")
    tv = sum(s["verbatim"] for s in per.values())
    lines.append(f"| all | {len(docs)} | {sum(s['chars'] for s in per.values()):,} | | "
                 f"{len(answerable)} ({tv}) | {len(near)} | {len(off)} |")
    lines.append("")
    lines.append("Notes per topic tag:")
    lines.append("")
    all_topics = sorted({t for s in per.values() for t in s["topics"]})
    lines.append("| topic | " + " | ".join(f"`{f}`" for f in per) + " |")
    lines.append("| --- | " + " | ".join("---:" for _ in per) + " |")
    for t in all_topics:
        lines.append(f"| {t} | " + " | ".join(str(per[f]["topics"].get(t, "")) for f in per) + " |")
    lines.append("")
    lines.append(COUNTS_END)
    return "\n".join(lines)


def readme_bytes(block: str) -> bytes | None:
    path = HERE / "README.md"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    a, b = text.find(COUNTS_START), text.find(COUNTS_END)
    if a < 0 or b < 0:
        return None
    return (text[:a] + block + text[b + len(COUNTS_END):]).encode("utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if the artefacts are not up to date")
    ap.add_argument("--materialize", metavar="DIR", help="write the notes as files under DIR")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    errors: list[str] = []
    docs = load_docs(errors)
    docs_by_id = {d["id"]: d for d in docs}
    answerable, near, off = load_questions(docs_by_id, errors)
    per = stats(docs, answerable, near, off)
    validate_counts(per, docs, answerable, near, off, errors)
    if errors:
        for e in errors:
            print("ERROR:", e, file=sys.stderr)
        return 2

    outputs = {
        "docs.jsonl.gz": gzip_bytes(jsonl_bytes(docs)),
        "queries.jsonl": jsonl_bytes(answerable),
        "near.jsonl": jsonl_bytes(near),
        "off.jsonl": jsonl_bytes(off),
    }
    readme = readme_bytes(counts_markdown(per, docs, answerable, near, off))
    if readme is not None:
        outputs["README.md"] = readme

    if not args.quiet:
        for f, s in per.items():
            print(f"folder {f}: {s['docs']} notes, {s['chars']:,} chars, {len(s['topics'])} topics, "
                  f"answerable {s['answerable']} (verbatim {s['verbatim']}), near {s['near']}, off {s['off']}")
        print(f"total: {len(docs)} notes, answerable {len(answerable)}, near {len(near)}, off {len(off)}")
        for w in warnings_for(docs, near, off):
            print("warning:", w)

    if args.check:
        stale = [name for name, data in outputs.items()
                 if not (HERE / name).is_file() or (HERE / name).read_bytes() != data]
        if stale:
            print("out of date: " + ", ".join(stale) + " (run python3 build.py)", file=sys.stderr)
            return 1
        if not args.quiet:
            print("up to date")
    else:
        for name, data in outputs.items():
            path = HERE / name
            if not path.is_file() or path.read_bytes() != data:
                path.write_bytes(data)

    if args.materialize:
        root = Path(args.materialize)
        for d in docs:
            target = root / d["id"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(d["text"] + "\n", encoding="utf-8")
        if not args.quiet:
            print(f"materialized {len(docs)} notes under {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
