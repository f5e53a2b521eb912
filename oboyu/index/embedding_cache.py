"""Embeddings already computed, kept across runs: unchanged text is never embedded twice.

Keyed by the model's fingerprint and a hash of the exact text the model reads (prefix included),
so the cache survives re-indexing, `--full` rebuilds, deleted indexes, renames and moves. One
SQLite file in the cache dir (write-ahead log: several processes may read and write it at once;
a killed process loses at most its last uncommitted batch, never the file).

It is only a cache: a file that is not a database or is damaged is moved aside (said once, with
its new name) and a new one made; where none can be made or written (a full disk, a folder that
cannot be written) work goes on without it. Nothing here stops indexing."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
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


_log = logging.getLogger(__name__)


class EmbeddingCache:
    def __init__(self, path: Path, notify: Callable[[str], None] = _log.warning):
        """`notify` hears, once, when the cache had to be moved aside or given up."""
        self.path = Path(path)
        self.notify = notify
        self.con: sqlite3.Connection | None = None
        self.problem: BaseException | None = None  # the last failure of the file: why there may be no connection
        self._told = False
        try:
            self.con = self._open()
        except (sqlite3.DatabaseError, OSError) as exc:
            self._recover(exc)

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, model TEXT, vector BLOB) WITHOUT ROWID")
            # where documents were cut into chunks (oboyu.index.chunk_cache)
            con.execute("CREATE TABLE IF NOT EXISTS chunkings (key BLOB PRIMARY KEY, chunks TEXT) WITHOUT ROWID")
            con.execute("SELECT count(*) FROM vectors WHERE key = x''").fetchone()  # reads the table's root page
            con.commit()
        except BaseException:
            con.close()
            raise
        return con

    def _recover(self, exc: BaseException) -> None:
        """After `exc` from the file: move a damaged file aside and start a new one, else go on
        without a cache."""
        self.problem = exc
        if self.con is not None:
            self.con.close()
            self.con = None
        moved = None
        if isinstance(exc, sqlite3.DatabaseError) and _is_damaged(exc) and self.path.is_file():
            moved = self.path.with_name(f"{self.path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
            try:
                os.replace(self.path, moved)
                for suffix in ("-wal", "-shm"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
                self.con = self._open()
            except (sqlite3.DatabaseError, OSError):
                self.con = None
        if self.con is not None:
            self._say(f"the embedding cache {self.path} was damaged ({exc}); moved it to {moved} and started a new one")
        else:
            self._say(f"cannot use the embedding cache {self.path} ({exc}); going on without it")

    def _say(self, message: str) -> None:
        if not self._told:
            self._told = True
            self.notify(message)

    @staticmethod
    def path_of_default() -> Path:
        """`OBOYU_EMBEDDING_CACHE`, else embeddings.sqlite3 in the cache dir."""
        env = os.environ.get("OBOYU_EMBEDDING_CACHE")
        return Path(env).expanduser() if env else cache_dir() / CACHE_FILE

    @classmethod
    def default(cls, notify: Callable[[str], None] = _log.warning) -> EmbeddingCache:
        return cls(cls.path_of_default(), notify)

    @staticmethod
    def key(fingerprint: str, text: str) -> bytes:
        return hashlib.blake2b(f"{fingerprint}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get_many(self, keys: Sequence[bytes], dimensions: int) -> dict[bytes, np.ndarray]:
        """The cached vectors of these keys (a damaged cache has none)."""
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        try:
            for start in range(0, len(unique), _LOOKUP_BATCH):
                if self.con is None:
                    return {}
                part = unique[start : start + _LOOKUP_BATCH]
                marks = ",".join("?" * len(part))
                for key, blob in self.con.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape == (dimensions,):
                        found[key] = vector
        except sqlite3.DatabaseError as exc:
            self._recover(exc)
            return {}
        return found

    def put_many(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Keep these vectors; when they cannot be written (a full disk), they are not kept."""
        if not items or self.con is None:
            return
        rows = [(key, model, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for key, v in items]
        try:
            with self.con:
                self.con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
        except sqlite3.DatabaseError as exc:
            self._recover(exc)

    def get_chunks(self, key: bytes) -> str | None:
        if self.con is None:
            return None
        try:
            row = self.con.execute("SELECT chunks FROM chunkings WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            self._recover(exc)
            return None
        return None if row is None else str(row[0])

    def put_chunks(self, key: bytes, chunks: str) -> None:
        if self.con is None:
            return
        try:
            with self.con:
                self.con.execute("INSERT OR REPLACE INTO chunkings VALUES (?, ?)", (key, chunks))
        except sqlite3.DatabaseError as exc:
            self._recover(exc)

    def stats(self) -> CacheStats:
        vectors = models = 0
        if self.con is not None:
            try:
                vectors, models = self.con.execute("SELECT count(*), count(DISTINCT model) FROM vectors").fetchone()
            except sqlite3.DatabaseError as exc:
                self._recover(exc)
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
                   if p.is_file() and ".broken-" not in p.name)
        return CacheStats(self.path, int(vectors), size, int(models))

    def damaged_copies(self) -> list[Path]:
        """Damaged cache files moved aside earlier."""
        return sorted(self.path.parent.glob(self.path.name + ".broken-*"))

    def clear(self) -> int:
        """Empty the cache, and delete damaged copies moved aside earlier; returns the vectors removed."""
        for broken in self.damaged_copies():
            broken.unlink(missing_ok=True)
        if self.con is None:
            return 0
        try:
            with self.con:
                removed = self.con.execute("DELETE FROM vectors").rowcount
                self.con.execute("DELETE FROM chunkings")
            self.con.execute("VACUUM")
        except sqlite3.DatabaseError as exc:
            self._recover(exc)
            return 0
        return int(removed)

    def close(self) -> None:
        if self.con is not None:
            self.con.close()


def _is_damaged(exc: BaseException) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB: the file's own bytes are wrong, so it is moved aside. Not
    a folder, a missing permission or a full disk: a trial's cache path that was a folder was
    moved aside, as if damaged."""
    return (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


@dataclass
class Lookup:
    """Passages looked up in the cache: their vectors (a row of NaN for each the cache has not)
    and, by key, the distinct texts still to embed, as the model reads them."""

    keys: list[bytes]
    vectors: np.ndarray
    missing: dict[bytes, str]
    cached: int  # rows the cache held

    @property
    def repeated(self) -> int:
        """Rows whose text another row of this lookup also has: embedded once for all of them."""
        return len(self.keys) - self.cached - len(self.missing)

    def fill(self, fresh: np.ndarray, cache: EmbeddingCache | None, model_id: str) -> np.ndarray:
        """The vectors with `fresh` (the embeddings of `missing`, in order) in place, kept in the cache."""
        made = {key: vector for key, vector in zip(self.missing, fresh) if not np.isnan(vector).any()}  # NaN: failed
        if cache is not None and made:
            cache.put_many(model_id, list(made.items()))
        for row, key in enumerate(self.keys):
            if key in made:
                self.vectors[row] = made[key]
        return self.vectors


def look_up(embedder: Embedder, texts: list[str], cache: EmbeddingCache | None) -> Lookup:
    """What the cache holds for these passages; a text repeated among them is embedded once."""
    model_texts = [embedder.passage_text(t) for t in texts]
    keys = [EmbeddingCache.key(embedder.info.vectors_key, t) for t in model_texts]
    vectors = np.full((len(texts), embedder.info.dimensions), np.nan, dtype=np.float32)
    known = cache.get_many(keys, embedder.info.dimensions) if cache is not None and keys else {}
    missing: dict[bytes, str] = {}
    cached = 0
    for row, (key, text) in enumerate(zip(keys, model_texts)):
        if key in known:
            vectors[row] = known[key]
            cached += 1
        else:
            missing.setdefault(key, text)
    return Lookup(keys, vectors, missing, cached)
