"""The index's invariants, checked in SQL: what a killed or interrupted run must never break."""

from __future__ import annotations

import duckdb

from oboyu.documents.keywords import BIGRAM_MARK


def problems(con: duckdb.DuckDBPyConnection, vectors_made: bool = True) -> list[str]:
    """What breaks the index's invariants (empty when none): every chunk with at most one
    vector (exactly one with `vectors_made`: after a run that finished, not one interrupted
    between its keyword and meaning passes), one keyword length and its document; documents'
    chunks numbered 0..n-1; no duplicate paths or ids; every document under a registered root."""
    most = "<> 1" if vectors_made else "> 1"
    # the vectors' table comes with the index's model (Store.set_model): a run stopped before that
    # (Ctrl+C in its first second) leaves an index with no model, and then no chunk may be stored
    has_vectors = (con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'embeddings'").fetchone() or (0,))[0]
    vector_checks = {
        f"chunks without {'exactly' if vectors_made else 'at most'} one vector":
            f"SELECT count(*) FROM chunks c WHERE (SELECT count(*) FROM embeddings e WHERE e.chunk_id = c.id) {most}",
        "vectors without a chunk": "SELECT count(*) FROM embeddings WHERE chunk_id NOT IN (SELECT id FROM chunks)",
    } if has_vectors else {"chunks stored before the index has a model": "SELECT count(*) FROM chunks"}
    checks = {
        "chunks without a document": "SELECT count(*) FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)",
        **vector_checks,
        "chunks without exactly one keyword length": "SELECT count(*) FROM chunks c WHERE (SELECT count(*) FROM kw_lengths l WHERE l.chunk_id = c.id) <> 1",
        "keyword rows without a chunk": "SELECT (SELECT count(*) FROM kw_lengths WHERE chunk_id NOT IN (SELECT id FROM chunks)) + (SELECT count(*) FROM kw_postings WHERE chunk_id NOT IN (SELECT id FROM chunks))",
        "keyword lengths that disagree with postings": (  # a length counts words, not bigrams
            "SELECT count(*) FROM kw_lengths l WHERE l.length <> coalesce((SELECT sum(tf) FROM kw_postings p "
            f"WHERE p.chunk_id = l.chunk_id AND NOT starts_with(p.term, '{BIGRAM_MARK}')), 0)"),
        "duplicate chunk ids": "SELECT count(*) - count(DISTINCT id) FROM chunks",
        "duplicate paths": "SELECT count(*) - count(DISTINCT path) FROM documents",
        "documents whose chunks are not numbered 0..n-1": "SELECT count(*) FROM (SELECT document_id FROM chunks GROUP BY document_id HAVING min(ordinal) <> 0 OR max(ordinal) <> count(*) - 1 OR count(DISTINCT ordinal) <> count(*))",
        "documents outside every root": "SELECT count(*) FROM documents WHERE root NOT IN (SELECT path FROM roots)",
    }
    found = []
    for what, sql in checks.items():
        n = (con.execute(sql).fetchone() or (0,))[0] or 0
        if n:
            found.append(f"{n} {what}")
    return found

