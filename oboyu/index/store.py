"""The index: one DuckDB file with documents, chunks, their embeddings and keyword postings,
and the folders (roots) they came from.

Every document's rows are written in one transaction together with its chunks and vectors, so
the file is consistent at every instant; DuckDB's write-ahead log makes a killed process lose at
most the transaction in flight. Ranking reads live in `oboyu.search.rankers`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import numpy as np

from oboyu.documents.keywords import words_in
from oboyu.errors import IndexBusyError, OboyuError
from oboyu.index import integrity, schema
from oboyu.index.columns import insert_columns, nullable_ints, nullable_strings, objects, registered
from oboyu.index.failures import LOCK, explained, not_an_index
from oboyu.index.records import ChunkRecord, DocumentRecord, KnownSkip, Move, Root, StoredFile, chunk_id
from oboyu.index.roots import ROOT_CHANGED, RootTable
from oboyu.index.waiting import open_waiting
from oboyu.paths import is_within

# The checkpoint a writer runs as it closes holds more of the index in DuckDB's buffer pool
# the larger the index grows, up to the memory limit (80% of RAM by default): indexing 100k
# chunks a batch at a time peaked at 687 MB, 447 MB with this cap. Set for the whole connection
# it made a large DELETE fail for want of memory, so only the checkpoint gets it.
CHECKPOINT_MEMORY_LIMIT = "64MB"
# A reader's buffer pool kept what it scanned: a one-shot hybrid query over a million passages'
# tables (every vector read) peaked at 3.1 GB, 0.8 GB with this cap, with the same results and
# less CPU (python -m benchmarks.scale.archive measure). Readers only: see the checkpoint's above.
READ_MEMORY_LIMIT = "512MB"
_log = logging.getLogger(__name__)


class _NeedsUpgrade(Exception):
    """A read-only open found an older schema."""


class Store(RootTable):
    """The index file open; its roots' reads and small writes are `RootTable`'s."""

    def __init__(self, path: Path, read_only: bool = False):
        self.path = self.db_path = Path(path)
        if read_only and not self.path.exists():
            raise OboyuError(f"no index at {self.path}; run `oboyu index PATH` first")
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OboyuError(f"cannot make the folder for the index {self.path}: {exc.strerror or exc}; "
                                 "choose another place with --db") from exc
        self.read_only = read_only
        self.con = self._connect()
        try:
            self._check_schema()
        except _NeedsUpgrade:  # upgrade in a brief writable open, then read
            self.con.close()
            Store.open_writer(self.path).close()
            self.con = self._connect()
            self._check_schema()
        except BaseException:
            self.con.close()
            raise

    def _connect(self) -> duckdb.DuckDBPyConnection:
        if kind := not_an_index(self.path):
            raise OboyuError(f"{self.path} is not an index ({kind}); give --db an index, or a new file's path to make one")
        try:
            # nothing leaves the machine: DuckDB otherwise downloads an extension a file seems to need
            config: dict[str, str | bool | int | float | list[str]] = {
                "autoinstall_known_extensions": False, "autoload_known_extensions": False}
            if self.read_only:
                config["memory_limit"] = READ_MEMORY_LIMIT
            con = duckdb.connect(str(self.path), read_only=self.read_only, config=config)
        except duckdb.IOException as exc:
            if LOCK.search(str(exc)):
                raise IndexBusyError(f"the index {self.path} is in use by another oboyu process; try again when it finishes") from exc
            if "not a valid DuckDB database file" in str(exc):
                raise OboyuError(f"{self.path} is not an index (not a DuckDB database file); give --db an index, "
                                 "or a new file's path to make one") from exc
            raise explained(exc, self.path) or OboyuError(f"cannot open the index {self.path}: {exc}") from exc
        except duckdb.Error as exc:
            raise explained(exc, self.path) or OboyuError(f"cannot open the index {self.path}: {exc}") from exc
        return _quiet(con)

    @classmethod
    def open_writer(cls, path: Path, wait_seconds: float = 60.0) -> Store:
        """A writable Store, waiting while readers in other processes hold the file (they hold it
        for milliseconds at a time; a wait of a second or more is logged, once)."""
        return open_waiting(lambda: cls(path), wait_seconds, lambda: _log.warning(f"waiting for another process to let go of {path}"),
                            tell_after=1.0)

    @classmethod
    def reader_of(cls, writer: Store) -> Store:
        """A read-only view through a new cursor of an open writable Store: another thread of the
        same process reads the committed state while the writer works (DuckDB refuses a second,
        read-only connection to a file this process already has open for writing)."""
        reader = cls.__new__(cls)
        reader.path, reader.read_only, reader.con = writer.path, True, _quiet(writer.con.cursor())
        return reader

    def close(self) -> None:
        if not self.read_only:
            with contextlib.suppress(duckdb.Error):  # already closed
                self.con.execute(f"SET memory_limit = '{CHECKPOINT_MEMORY_LIMIT}'")
        self.con.close()

    def writing(self) -> contextlib.AbstractContextManager[Store]:
        """As an Indexer's WritableIndex (with `db_path`): held open for the whole run."""
        return contextlib.nullcontext(self)

    reading = writing

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- schema and metadata ---------------------------------------------------------------

    def _check_schema(self) -> None:
        tables = {row[0] for row in self.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "meta" in tables:
            version = self.get_meta("schema_version") or ""
            if version.isdigit() and int(version) < schema.SCHEMA_VERSION:
                if self.read_only:
                    raise _NeedsUpgrade(version)
                schema.prepare(self, int(version))  # the long part, committed as it goes
                with self._transaction():
                    self._bump_generation()
                    schema.migrate(self, int(version))
            elif version != str(schema.SCHEMA_VERSION):
                raise OboyuError(
                    f"the index {self.path} has schema version {version}, this oboyu reads {schema.SCHEMA_VERSION}; "
                    "index into a new file with --db"
                )
            return
        if self.read_only and not tables:  # a run stopped (Ctrl+C) before it made the schema
            raise OboyuError(f"{self.path} holds no index yet: `oboyu index FOLDER` makes it")
        if self.read_only:
            raise OboyuError(f"{self.path} is not an oboyu index")
        if tables:
            raise OboyuError(f"{self.path} is a DuckDB file but not an oboyu index")
        with self._transaction():
            schema.create(self)

    def model_id(self) -> str | None:
        """The model the index was built with (`id@fingerprint`), None for a new index."""
        return self.get_meta("model_id")

    def get_meta(self, key: str) -> str | None:
        row = self.con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def set_model(self, model_id: str, dimensions: int) -> None:
        """Record the index's model; switching models drops the old vectors (they cannot mix)."""
        current = self.get_meta("model_id")
        if current == model_id:
            return
        with self._transaction():
            self._bump_generation()
            self.con.execute("DROP TABLE IF EXISTS embeddings")
            self.con.execute(f"CREATE TABLE embeddings (chunk_id VARCHAR, vector FLOAT[{int(dimensions)}])")
            self.con.execute("INSERT OR REPLACE INTO meta VALUES ('model_id', ?), ('dimensions', ?)", [model_id, str(dimensions)])
            if current is not None:  # every document must be embedded again
                for table in ("kw_postings", "kw_lengths", "chunks", "documents"):
                    self.con.execute(f"DELETE FROM {table}")

    def mark_run(self, started: bool) -> None:
        """`run_started`: when an `oboyu index` began, kept until it ends with every file and
        vector made, so that `status` can say a run was cut short (Ctrl+C, a kill, a crash)."""
        if started:
            self.con.execute("INSERT OR REPLACE INTO meta VALUES ('run_started', strftime(now(), '%Y-%m-%d %H:%M:%S'))")
        else:
            self.con.execute("DELETE FROM meta WHERE key = 'run_started'")

    def _bump_generation(self) -> None:
        """Mark a change, so that processes holding the index in memory reload it."""
        self.con.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", [uuid.uuid4().hex])

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    # --- documents -------------------------------------------------------------------------

    def files_under(self, folder: str, root: str | None = None) -> dict[str, StoredFile]:
        """The indexed files at or below `folder` (of that root only, when `root` is given: a
        folder named on its own inside another root keeps its files)."""
        return {r[0]: StoredFile(*r[1:]) for r in self._rows_under("documents", "sha256", folder, root)}

    def skipped_under(self, folder: str, root: str | None = None) -> dict[str, KnownSkip]:
        """The files at or below `folder` whose content could not be indexed, as `files_under`."""
        return {r[0]: KnownSkip(*r[1:]) for r in self._rows_under("skipped_files", "reason", folder, root)}

    def _rows_under(self, table: str, last: str, folder: str, root: str | None) -> list[tuple]:
        """(path, size, mtime_ns, `last`) of a table's files at or below `folder`, of `root` only when given."""
        prefix = folder.rstrip(os.sep) + os.sep
        return self.con.execute(
            f"SELECT path, size, mtime_ns, {last} FROM {table} WHERE (path = ? OR starts_with(path, ?))"
            " AND (? IS NULL OR root = ?)",
            [folder, prefix, root, root],
        ).fetchall()

    def remember_skipped(self, found: list[tuple[str, str, KnownSkip]], gone: list[str]) -> None:
        """Files (path, root, what they were) whose content cannot be indexed; `gone`: files no
        longer to remember (deleted, or indexed now)."""
        paths = [path for path, _, _ in found] + gone
        if not paths:
            return
        with self._transaction():
            with registered(self.con, objects(paths)) as (name,):
                self.con.execute(f"DELETE FROM skipped_files WHERE path IN (SELECT column0 FROM {name})")
            if found:
                self.con.executemany("INSERT INTO skipped_files VALUES (?, ?, ?, ?, ?)",
                                     [(path, root, known.size, known.mtime_ns, known.reason) for path, root, known in found])

    def skip_documents_of(self, chunk_ids: list[str], reason: str) -> list[str]:
        """The documents holding these chunks taken out, and remembered as skipped for `reason`
        (passed over until they change); their paths."""
        with registered(self.con, objects(chunk_ids)) as (name,):
            rows = self.con.execute(
                "SELECT DISTINCT d.path, d.root, d.size, d.mtime_ns FROM documents d JOIN chunks c ON c.document_id = d.id "
                f"WHERE c.id IN (SELECT column0 FROM {name}) ORDER BY d.path"
            ).fetchall()
        self.delete_paths([path for path, _, _, _ in rows])
        self.remember_skipped([(path, root, KnownSkip(size, mtime, reason)) for path, root, size, mtime in rows], [])
        return [path for path, _, _, _ in rows]

    def write_documents(self, items: list[tuple[DocumentRecord, list[ChunkRecord], np.ndarray]]) -> None:
        """Replace these documents (by path) with their chunks and vectors, in one transaction. A
        row of NaN is a vector not made yet: the chunk is searchable by keyword until
        `add_vectors` gives it one."""
        if not items:
            return
        with self._transaction():
            self._bump_generation()
            self._delete_paths([doc.path for doc, _, _ in items])
            now = time.time()
            doc_ids = [r[0] for r in self.con.execute(f"SELECT nextval('document_ids') FROM range({len(items)})").fetchall()]
            docs = [doc for doc, _, _ in items]
            insert_columns(
                self.con,
                "documents",
                [
                    np.array(doc_ids, dtype=np.int64),
                    objects([d.path for d in docs]),
                    objects([d.root for d in docs]),
                    np.array([d.size for d in docs], dtype=np.int64),
                    np.array([d.mtime_ns for d in docs], dtype=np.int64),
                    objects([d.sha256 for d in docs]),
                    objects([d.encoding for d in docs]),
                    objects([d.file_type for d in docs]),
                    nullable_strings([d.title for d in docs]),
                ],
                extra=f"to_timestamp({now:f})",
            )
            chunks = [(doc_id, c) for doc_id, (_, cs, _) in zip(doc_ids, items) for c in cs]
            if chunks:
                insert_columns(
                    self.con,
                    "chunks",
                    [
                        objects([c.id for _, c in chunks]),
                        np.array([d for d, _ in chunks], dtype=np.int64),
                        np.array([c.ordinal for _, c in chunks], dtype=np.int32),
                        objects([c.heading for _, c in chunks]),
                        np.array([c.start_line for _, c in chunks], dtype=np.int32),
                        np.array([c.end_line for _, c in chunks], dtype=np.int32),
                        np.array([c.start_char for _, c in chunks], dtype=np.int32),
                        np.array([c.end_char for _, c in chunks], dtype=np.int32),
                        objects([c.text for _, c in chunks]),
                        nullable_ints([c.page_start for _, c in chunks]),
                        nullable_ints([c.page_end for _, c in chunks]),
                    ],
                )
                vectors = np.vstack([v for _, cs, v in items if len(cs)]).astype(np.float32)
                made = ~np.isnan(vectors).any(axis=1)
                if made.any():
                    self._insert_vectors(objects([c.id for _, c in chunks])[made], vectors[made])
                self.insert_keywords([(c.id, c.terms) for _, c in chunks])

    def move_documents(self, moves: list[Move]) -> None:
        """Renamed or moved files (same content): their rows, chunks and vectors follow them to
        the new path, in one transaction; nothing is embedded again."""
        if not moves:
            return
        with self._transaction():
            self._bump_generation()
            old_ids, new_ids = [], []
            for move in moves:
                rows = self.con.execute(
                    "SELECT c.id, c.start_char, c.end_char, c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
                    "WHERE d.path = ?", [move.old_path]
                ).fetchall()
                for cid, start, end, text in rows:
                    old_ids.append(cid)
                    new_ids.append(chunk_id(move.new_path, start, end, text))
                self.con.execute(
                    "UPDATE documents SET path = ?, root = ?, size = ?, mtime_ns = ?, indexed_at = now() WHERE path = ?",
                    [move.new_path, move.root, move.size, move.mtime_ns, move.old_path],
                )
            if not old_ids:
                return
            with registered(self.con, objects(old_ids), objects(new_ids)) as (old_name, new_name):
                mapping = f"(SELECT o.column0 AS old_id, n.column0 AS new_id FROM {old_name} o POSITIONAL JOIN {new_name} n) m"
                for table, column in (("chunks", "id"), ("embeddings", "chunk_id"), ("kw_postings", "chunk_id"), ("kw_lengths", "chunk_id")):
                    self.con.execute(f"UPDATE {table} SET {column} = m.new_id FROM {mapping} WHERE {table}.{column} = m.old_id")

    def delete_paths(self, paths: list[str]) -> None:
        if not paths:
            return
        with self._transaction():
            self._bump_generation()
            self._delete_paths(paths)

    def update_file_stats(self, stats: list[tuple[str, int, int]]) -> None:
        """Files touched but not changed: remember their new (path, size, mtime_ns) so they are
        not read again."""
        if stats:
            self.con.executemany("UPDATE documents SET size = ?, mtime_ns = ? WHERE path = ?", [(s, m, p) for p, s, m in stats])

    def _delete_paths(self, paths: list[str]) -> None:
        if not paths:
            return
        with registered(self.con, objects(paths)) as (name,):
            ids = f"SELECT id FROM documents WHERE path IN (SELECT column0 FROM {name})"
            if not self._number(f"SELECT count(*) FROM ({ids})"):
                return  # new files: each DELETE would scan its table (the postings: ~100 rows a chunk)
            # the folders lose files: when, for status's "last changed" (their other files' times do not move)
            self.con.execute(f"INSERT OR REPLACE INTO meta SELECT DISTINCT '{ROOT_CHANGED}' || root, "
                             f"CAST(CAST(now() AS TIMESTAMP) AS VARCHAR) FROM documents WHERE id IN ({ids})")
            chunk_ids = f"SELECT id FROM chunks WHERE document_id IN ({ids})"
            self.con.execute(f"DELETE FROM embeddings WHERE chunk_id IN ({chunk_ids})")
            self.con.execute(f"DELETE FROM kw_postings WHERE chunk_id IN ({chunk_ids})")
            self.con.execute(f"DELETE FROM kw_lengths WHERE chunk_id IN ({chunk_ids})")
            self.con.execute(f"DELETE FROM chunks WHERE document_id IN ({ids})")
            self.con.execute(f"DELETE FROM documents WHERE id IN ({ids})")

    def insert_keywords(self, counts: list[tuple[str, dict[str, int]]], tables: str = "") -> None:
        """Keyword postings and lengths of these chunks (the caller holds a transaction); a
        chunk's length counts its words, not the bigrams of its unknown ones. `tables`: a suffix
        of the tables' names (an upgrade's keyword index is made beside the one in use)."""
        postings = [(cid, term, n) for cid, terms in counts for term, n in terms.items()]
        if postings:
            insert_columns(
                self.con,
                f"kw_postings{tables}",
                [objects([p[0] for p in postings]), objects([p[1] for p in postings]), np.array([p[2] for p in postings], dtype=np.int32)],
            )
        if counts:
            insert_columns(
                self.con,
                f"kw_lengths{tables}",
                [objects([cid for cid, _ in counts]), np.array([words_in(terms) for _, terms in counts], dtype=np.int32)],
            )

    def chunks_without_vectors(self) -> list[str]:
        """Ids of the chunks waiting for their vectors, file by file: what a meaning pass embeds."""
        sql = "SELECT c.id FROM chunks c ANTI JOIN embeddings e ON e.chunk_id = c.id ORDER BY c.document_id, c.ordinal"
        return [cid for (cid,) in self.con.execute(sql).fetchall()]

    def embedding_inputs(self, ids: list[str]) -> dict[str, tuple[str | None, str, str]]:
        """(document title, heading, text) of these chunks: what their embedding text is made of."""
        if not ids:
            return {}
        with registered(self.con, objects(ids)) as (name,):
            rows = self.con.execute(
                "SELECT c.id, d.title, c.heading, c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
                f"WHERE c.id IN (SELECT column0 FROM {name})"
            ).fetchall()
        return {cid: (title, heading, text) for cid, title, heading, text in rows}

    def add_vectors(self, ids: list[str], vectors: np.ndarray) -> None:
        """Vectors for chunks that had none, in one transaction."""
        if not ids:
            return
        with self._transaction():
            self._bump_generation()
            with registered(self.con, objects(ids)) as (name,):  # none for a chunk removed meanwhile, or embedded
                sql = f"SELECT column0 FROM {name} WHERE column0 IN (SELECT id FROM chunks) EXCEPT SELECT chunk_id FROM embeddings"
                keep = np.isin(objects(ids), [cid for (cid,) in self.con.execute(sql).fetchall()])
            if keep.any():
                self._insert_vectors(objects(ids)[keep], vectors.astype(np.float32)[keep])

    def file_roots(self) -> dict[str, str]:
        """Path of each indexed file -> its root."""
        return dict(self.con.execute("SELECT path, root FROM documents").fetchall())

    def vector_coverage(self) -> tuple[int, int]:
        """(chunks with their vector, chunks): how much of the index meaning search reaches."""
        embedded = self._number("SELECT count(*) FROM embeddings") if self.get_meta("dimensions") else 0
        return embedded, self._number("SELECT count(*) FROM chunks")

    def _insert_vectors(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        dim = vectors.shape[1]
        # a 2-D array is scanned as one column per row of the array, so pass it transposed
        with registered(self.con, ids, np.ascontiguousarray(vectors.T)) as (ids_name, vec_name):
            array = ", ".join(f"{vec_name}.column{i}" for i in range(dim))
            self.con.execute(
                f"INSERT INTO embeddings SELECT {ids_name}.column0, [{array}]::FLOAT[{dim}] FROM {ids_name} POSITIONAL JOIN {vec_name}"
            )

    # --- roots ------------------------------------------------------------------------------

    def add_root(self, path: str, name: str | None = None, follow_symlinks: bool = False) -> Root:
        """Remember a folder to index. Roots inside it that its walk reaches merge into it; those
        it does not (a junk, hidden or ignored folder the user named) stay roots of their own. A
        name must be unique."""
        from oboyu.documents.crawl import reaches  # the walk's rules (pathspec): not read by a query

        existing = self.root_named(path)
        if name is not None:
            other = self.root_named(name)
            if other is not None and other.path != path:
                raise OboyuError(f"the name {name!r} is already used by {other.path}")
        nested = [r for r in self.roots() if r.path != path and is_within(r.path, path)
                  and reaches(Path(path), Path(r.path), follow_symlinks)]
        with self._transaction():
            self._bump_generation()
            for old in [*nested, *([existing] if existing else [])]:
                self.con.execute("DELETE FROM roots WHERE path = ?", [old.path])
                self.con.execute("UPDATE documents SET root = ? WHERE root = ?", [path, old.path])
            chosen = name or (existing.name if existing else self.unique_root_name(Path(path).name or path))
            root = Root(path, chosen, follow_symlinks, existing.description if existing else None)
            self.insert_root(root)
        return root

    def remove_root(self, root: str) -> int:
        """Forget an indexed folder and drop every row of its files; returns how many files went."""
        paths = [row[0] for row in self.con.execute("SELECT path FROM documents WHERE root = ?", [root]).fetchall()]
        with self._transaction():
            self._bump_generation()
            self._delete_paths(paths)
            self.con.execute("DELETE FROM roots WHERE path = ?", [root])
            self.con.execute("DELETE FROM meta WHERE key = ?", [ROOT_CHANGED + root])
            self.con.execute("DELETE FROM skipped_files WHERE root = ?", [root])
        return len(paths)

    def integrity_problems(self, vectors_made: bool = True) -> list[str]:
        """What breaks the index's invariants (`oboyu.index.integrity`); empty when none."""
        return integrity.problems(self.con, vectors_made)

    def counts(self) -> tuple[int, int]:
        """(documents, chunks)."""
        return self._number("SELECT count(*) FROM documents"), self._number("SELECT count(*) FROM chunks")

    def _number(self, sql: str) -> int:
        """The one number a query gives (0 for NULL)."""
        row = self.con.execute(sql).fetchone()
        return int(row[0] or 0) if row else 0


def _quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """No progress bar of DuckDB's own on stderr (long scans drew one): ours says what runs."""
    con.execute("SET enable_progress_bar = false")
    return con


def open_for_reading(path: Path, wait_seconds: float = 3.0, on_wait: Callable[[], None] | None = None) -> Store:
    """A read-only Store, waiting up to `wait_seconds` while a writer holds the file (an indexer
    holds it only while it writes a batch); `on_wait` hears once that we wait."""
    return open_waiting(lambda: Store(path, read_only=True), wait_seconds, on_wait)
