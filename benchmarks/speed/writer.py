"""How many passages a second the one DuckDB writer absorbs: the ceiling of indexing with any
number of workers, since the indexer alone writes (docs/scale.md).

    python -m benchmarks.speed.writer --db INDEX [--repeats 3]

Every document of INDEX (made by `oboyu index`), with its chunks, keyword terms and vectors, is
written again into a new index the way the indexer writes: the keyword pass's writes (documents,
chunks and postings, vectors still to make, batches of about 1,024 chunks), then the meaning
pass's (vectors, in groups of 256, 1,024 and 4,096), the file opened and closed for each write as
the indexer does. Medians of --repeats; prints a Markdown table.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from oboyu.index.indexer import EMBED_GROUP_CHUNKS, KEYWORD_BATCH_CHUNKS
from oboyu.index.records import ChunkRecord, DocumentRecord
from oboyu.index.store import Store

GROUPS = (EMBED_GROUP_CHUNKS, 1024, 4096)


def read_index(db: Path) -> tuple[str, int, list[tuple[DocumentRecord, list[ChunkRecord], np.ndarray]]]:
    with Store(db, read_only=True) as store:
        q = store.con.execute
        terms: dict[str, dict[str, int]] = {}
        for cid, term, tf in q("SELECT chunk_id, term, tf FROM kw_postings").fetchall():
            terms.setdefault(cid, {})[term] = tf
        embedded, total = store.vector_coverage()
        if embedded < total:
            raise SystemExit(f"{db}: {total - embedded:,} passages have no vector yet; run `oboyu index` to finish it")
        vectors = {cid: np.asarray(v, np.float32) for cid, v in q("SELECT chunk_id, vector FROM embeddings").fetchall()}
        chunks: dict[int, list[ChunkRecord]] = {}
        for row in q("SELECT document_id, id, ordinal, heading, start_line, end_line, start_char, end_char, text, "
                     "page_start, page_end FROM chunks ORDER BY document_id, ordinal").fetchall():
            doc_id, cid, *fields, page_start, page_end = row
            chunks.setdefault(doc_id, []).append(ChunkRecord(cid, *fields, terms.get(cid, {}), page_start, page_end))
        items = []
        for doc_id, *fields in q("SELECT id, path, root, size, mtime_ns, sha256, encoding, file_type, title FROM documents").fetchall():
            records = chunks.get(doc_id, [])
            items.append((DocumentRecord(*fields), records, np.stack([vectors[c.id] for c in records])
                          if records else np.zeros((0, 384), np.float32)))
        return store.model_id() or "", int(store.get_meta("dimensions") or 384), items


def one_round(items: list, model: str, dimensions: int, group: int, work: Path) -> tuple[float, float]:
    """(seconds of the keyword pass's writes, seconds of the meaning pass's), into a new index."""
    db = work / f"writer-{time.monotonic_ns()}.duckdb"
    with Store.open_writer(db) as store:
        store.set_model(model, dimensions)
        for root in sorted({doc.root for doc, _, _ in items}):
            store.add_root(root, None, False)
    ids = [c.id for _, records, _ in items for c in records]
    all_vectors = np.concatenate([v for _, _, v in items])

    def keyword_pass() -> None:  # documents, chunks and postings; vectors still to make
        batch: list = []
        for doc, records, vectors in items:
            batch.append((doc, records, np.full_like(vectors, np.nan)))
            if sum(len(r) for _, r, _ in batch) >= KEYWORD_BATCH_CHUNKS:
                with Store.open_writer(db) as store:
                    store.write_documents(batch)
                batch = []
        if batch:
            with Store.open_writer(db) as store:
                store.write_documents(batch)

    def meaning_pass() -> None:
        for start in range(0, len(ids), group):
            with Store.open_writer(db) as store:
                store.add_vectors(ids[start : start + group], all_vectors[start : start + group])

    keyword = harness.seconds(keyword_pass)
    meaning = harness.seconds(meaning_pass)
    with Store(db, read_only=True) as store:
        assert store.vector_coverage() == (len(ids), len(ids))
    return keyword, meaning


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model, dimensions, items = read_index(args.db)
    passages = sum(len(r) for _, r, _ in items)
    rows = []
    with tempfile.TemporaryDirectory(prefix="oboyu-writer-") as work:
        for group in GROUPS:
            rounds = [one_round(items, model, dimensions, group, Path(work)) for _ in range(args.repeats)]
            keyword = harness.median(r[0] for r in rounds)
            meaning = harness.median(r[1] for r in rounds)
            rows.append((group, keyword, meaning))
    print(f"{len(items):,} documents, {passages:,} passages; medians of {args.repeats}\n")
    print(harness.table(["meaning-pass group", "keyword-pass writes", "vector writes", "both passes"],
                        [(f"{group:,}", f"{passages / keyword:,.0f} passages/s", f"{passages / meaning:,.0f} passages/s",
                          f"{passages / (keyword + meaning):,.0f} passages/s") for group, keyword, meaning in rows], "rrrr"))


if __name__ == "__main__":
    main()
