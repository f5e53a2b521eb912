"""Keyword-style queries: 2–3 content words drawn from a document's title, as people type into a
search box, and whether hybrid search beats plain reciprocal rank fusion on them.

For each document with a title, its nouns (MeCab) are sampled (a fixed seed) into a query of 2 or
3 words; the document is the one relevant answer. Each query is run as oboyu's hybrid search and
as plain RRF (k = 60) of the same vector and keyword legs, one result per file; MRR@10 and
Recall@10 of both are printed.

    .venv/bin/python benchmarks/keyword_style.py [--sets debian-reference manpages-ja] [--db-dir /tmp] [--queries 400]

The index of each set is the one `oboyu eval --db DIR/eval-SET.duckdb` makes (built here when absent).
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from oboyu.documents.keywords import _tagger, words
from oboyu.index.store import Store
from oboyu.models.loading import load_default_embedder
from oboyu.progress import ProgressLine
from oboyu.search.evaluate import doc_id_of, index_corpus, read_jsonl, write_corpus
from oboyu.search.fusion import rrf
from oboyu.search.query import CANDIDATES, rank_chunks, search
from oboyu.search.resident import ResidentIndex

DEV = Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "dev"


def eval_index(name: str, db_dir: Path, embedder) -> Path:
    """The index `oboyu eval --db DIR/eval-SET.duckdb` makes of a dev set, built here when absent."""
    db = db_dir / f"eval-{name}.duckdb"
    if not db.exists():
        with tempfile.TemporaryDirectory() as folder, Store(db) as store:
            write_corpus(DEV / name / "docs.jsonl.gz", Path(folder) / "docs")
            index_corpus(store, embedder, Path(folder) / "docs", ProgressLine())
    return db


def keyword_queries(name: str, count: int, seed: int = 7) -> list[tuple[str, str]]:
    """(query, relevant document id) from the documents' titles."""
    rng = random.Random(seed)
    out = []
    docs = [d for d in read_jsonl(DEV / name / "docs.jsonl.gz") if d.get("title")]
    rng.shuffle(docs)
    for doc in docs:
        nouns = list(dict.fromkeys(t.surface for t in _tagger()(doc["title"]) if t.feature_raw.startswith("名詞") and len(t.surface) > 1))
        if len(nouns) < 2:
            continue
        out.append((" ".join(rng.sample(nouns, min(len(nouns), rng.choice((2, 3))))), str(doc["id"])))
        if len(out) == count:
            break
    return out


def reciprocal_rank(ranked: list[str], relevant: str) -> float:
    return next((1 / i for i, doc in enumerate(ranked[:10], start=1) if doc == relevant), 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["debian-reference", "manpages-ja"])
    parser.add_argument("--db-dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    embedder = load_default_embedder()
    print("| set | queries | hybrid MRR@10 | RRF MRR@10 | hybrid R@10 | RRF R@10 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.sets:
        db = eval_index(name, args.db_dir, embedder)
        queries = keyword_queries(name, args.queries)
        with Store(db, read_only=True) as store:
            resident = ResidentIndex().refresh(store)
            scores = {"hybrid": [0.0, 0.0], "rrf": [0.0, 0.0]}
            for text, relevant in queries:
                hybrid = [doc_id_of(r.path) for r in search(resident, embedder, text, 10, mode="hybrid")]
                legs = rank_chunks(resident, embedder, text, words(text), CANDIDATES, None, "hybrid")
                files = resident.files_of_chunks([cid for leg in ("vector", "keyword") for cid, _ in legs[leg]])
                fused = rrf({leg: legs[leg] for leg in ("vector", "keyword")})
                plain = list(dict.fromkeys(doc_id_of(files[cid]) for cid, _ in fused if cid in files))
                for key, ranked in (("hybrid", hybrid), ("rrf", plain)):
                    scores[key][0] += reciprocal_rank(ranked, relevant)
                    scores[key][1] += relevant in ranked[:10]
            n = len(queries)
            print(f"| {name} | {n} | {scores['hybrid'][0] / n:.3f} | {scores['rrf'][0] / n:.3f} | "
                  f"{scores['hybrid'][1] / n:.3f} | {scores['rrf'][1] / n:.3f} |", flush=True)


if __name__ == "__main__":
    main()
