"""Embeddings already computed, kept across runs: unchanged text is never embedded twice.

Keyed by the model's fingerprint and a hash of the exact text the model reads (prefix included),
so the cache survives re-indexing, `--full` rebuilds, deleted indexes, renames and moves. One
SQLite file in the cache dir (write-ahead log: several processes may read and write it at once;
a killed process loses at most its last uncommitted batch, never the file)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oboyu.models.embedding import Embedder
from oboyu.paths import cache_dir

CACHE_FILE = "embeddings.sqlite3"
_LOOKUP_BATCH = 500  # keys per SELECT (SQLite's parameter limit is higher; this keeps plans small)


@dataclass
class CacheStats:
    path: Path
    vectors: int
    bytes: int
    models: int


class EmbeddingCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.con = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("PRAGMA synchronous=NORMAL")
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, model TEXT, vector BLOB) WITHOUT ROWID"
        )
        self.con.commit()

    @classmethod
    def default(cls) -> EmbeddingCache:
        """`OBOYU_EMBEDDING_CACHE`, else embeddings.sqlite3 in the cache dir."""
        env = os.environ.get("OBOYU_EMBEDDING_CACHE")
        return cls(Path(env).expanduser() if env else cache_dir() / CACHE_FILE)

    @staticmethod
    def key(fingerprint: str, text: str) -> bytes:
        return hashlib.blake2b(f"{fingerprint}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get_many(self, keys: Sequence[bytes], dimensions: int) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _LOOKUP_BATCH):
            part = unique[start : start + _LOOKUP_BATCH]
            marks = ",".join("?" * len(part))
            for key, blob in self.con.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part):
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.shape == (dimensions,):
                    found[key] = vector
        return found

    def put_many(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        if not items:
            return
        rows = [(key, model, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for key, v in items]
        with self.con:
            self.con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

    def stats(self) -> CacheStats:
        vectors, models = self.con.execute("SELECT count(*), count(DISTINCT model) FROM vectors").fetchone()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, int(vectors), size, int(models))

    def clear(self) -> int:
        with self.con:
            removed = self.con.execute("DELETE FROM vectors").rowcount
        self.con.execute("VACUUM")
        return int(removed)

    def close(self) -> None:
        self.con.close()


def embed_passages(embedder: Embedder, texts: list[str], cache: EmbeddingCache | None) -> tuple[np.ndarray, int, int]:
    """Vectors of these passages, from the cache where it has them, the rest embedded and kept:
    (vectors, how many embedded, how many reused). A text repeated in the batch embeds once."""
    model_texts = [embedder.passage_text(t) for t in texts]
    if cache is None:
        return embedder.embed(model_texts), len(texts), 0
    keys = [EmbeddingCache.key(embedder.info.fingerprint, t) for t in model_texts]
    known = cache.get_many(keys, embedder.info.dimensions)
    missing = list(dict.fromkeys(k for k in keys if k not in known))
    if missing:
        text_of = dict(zip(keys, model_texts))
        fresh = list(zip(missing, embedder.embed([text_of[k] for k in missing])))
        cache.put_many(embedder.info.model_id, fresh)
        known.update(fresh)
    vectors = np.stack([known[k] for k in keys]) if keys else np.zeros((0, embedder.info.dimensions), np.float32)
    return vectors, len(missing), len(keys) - len(missing)
