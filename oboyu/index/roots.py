"""The index's roots: the folders (or files) a person asked to index, with their names, their
descriptions and the folders their walks left out. `RootTable` is a part of `Store` (its base
class), kept apart for size; the writes that touch documents too (adding a root that absorbs
others, removing one) stay in the store."""

from __future__ import annotations

import os
import re
from dataclasses import replace

import duckdb

from oboyu.errors import OboyuError
from oboyu.index.records import Root, RootSummary
from oboyu.paths import is_within
from oboyu.text import valid_text

MAX_DESCRIPTION_CHARS = 500
ROOT_CHANGED = "root_changed:"  # meta key + a root's path: when it last lost files
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # tab is text
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # a name is typed back: no tab, no line break either


def checked_description(text: str) -> str | None:
    """A folder's description as stored: the text as given (lone surrogates made valid), None
    when it is empty or only spaces (that clears it). More than one line, a control character or
    more than MAX_DESCRIPTION_CHARS characters is an error that says so."""
    text = valid_text(text)
    if not text.strip():
        return None
    if text.splitlines() != [text]:
        raise OboyuError("a folder's description is one line: leave out the line breaks")
    if control := _CONTROL.search(text):
        raise OboyuError(f"a folder's description is plain text: it holds the control character U+{ord(control[0]):04X}")
    if len(text) > MAX_DESCRIPTION_CHARS:
        raise OboyuError(f"a folder's description is at most {MAX_DESCRIPTION_CHARS} characters; this one has {len(text)}")
    return text


def checked_name(name: str) -> str:
    """A folder's name as given with `--name`, typed back with `--root`, `reindex` and `remove`: a
    line break or an escape in it could not be (a user trial's `a\nb` was listed as `a␊b`)."""
    if not name.strip():
        raise OboyuError("a folder's name cannot be empty; leave out --name to name it after the folder")
    if control := _NAME_CONTROL.search(name):
        raise OboyuError(f"a folder's name is plain text: it holds the control character U+{ord(control[0]):04X}")
    return name


class RootTable:
    """Reads and small writes of the `roots` table (autocommitted, the generation left as it is:
    nothing here changes what a query ranks)."""

    con: duckdb.DuckDBPyConnection

    def roots(self) -> list[Root]:
        rows = self.con.execute("SELECT path, name, follow_symlinks, description FROM roots ORDER BY path").fetchall()
        return [Root(path, name, bool(follow), description) for path, name, follow, description in rows]

    def root_holding(self, path: str) -> Root | None:
        """The registered root that is `path` or holds it (the deepest: a folder named on its own
        inside another root is its own root)."""
        holders = [root for root in self.roots() if is_within(path, root.path)]
        return max(holders, key=lambda root: len(root.path)) if holders else None

    def root_named(self, name_or_path: str) -> Root | None:
        """The root with this name or path."""
        absolute = os.path.abspath(os.path.expanduser(name_or_path))
        for root in self.roots():
            if name_or_path == root.name or absolute == root.path:
                return root
        return None

    def roots_named(self, names: list[str]) -> list[Root]:
        """The roots with these names or paths; an unknown one is an error that lists the known."""
        roots = []
        for name in names:
            if not name:  # `remove "$NAME"` with NAME unset: "" was the working folder, removed
                raise OboyuError("a folder's name or path cannot be empty; `oboyu status` lists the indexed folders")
            root = self.root_named(name)
            if root is None:
                known = ", ".join(r.name for r in self.roots()) or "none yet"
                raise OboyuError(f"{name!r} is not an indexed folder (indexed: {known})")
            roots.append(root)
        return roots

    def describe_root(self, root: Root, text: str) -> Root:
        """Set the root's description (`checked_description`: "" clears it); the root as now stored."""
        description = checked_description(text)
        self.con.execute("UPDATE roots SET description = ? WHERE path = ?", [description, root.path])
        return replace(root, description=description)

    def left_out(self) -> dict[str, list[str]]:
        """Each root's folders its last whole walk left out."""
        return {path: list(folders or ()) for path, folders in self.con.execute("SELECT path, left_out FROM roots").fetchall()}

    def set_left_out(self, root: str, folders: list[str]) -> None:
        """The folders the root's last whole walk left out (junk), for status."""
        self.con.execute("UPDATE roots SET left_out = ? WHERE path = ?", [sorted(folders), root])

    def insert_root(self, root: Root) -> None:
        self.con.execute("INSERT INTO roots (path, name, follow_symlinks, added_at, description) VALUES (?, ?, ?, now(), ?)",
                         [root.path, root.name, root.follow_symlinks, root.description])

    def unique_root_name(self, base: str) -> str:
        taken = {row[0] for row in self.con.execute("SELECT name FROM roots").fetchall()}
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        return name

    def root_summaries(self) -> list[RootSummary]:
        """Every root with its counts of documents and chunks and its last update."""
        rows = self.con.execute(
            """
            SELECT r.path, r.name, r.follow_symlinks, r.description, count(DISTINCT d.id), count(c.id),
                   coalesce(greatest(max(d.indexed_at), max(TRY_CAST(m.value AS TIMESTAMP))), r.added_at),  -- NULLs ignored
                   r.left_out
            FROM roots r LEFT JOIN documents d ON d.root = r.path LEFT JOIN chunks c ON c.document_id = d.id
                 LEFT JOIN meta m ON m.key = ? || r.path
            GROUP BY r.path, r.name, r.follow_symlinks, r.description, r.added_at, r.left_out ORDER BY r.path
            """, [ROOT_CHANGED]
        ).fetchall()
        return [RootSummary(Root(path, name, bool(follow), description), int(docs), int(chunks), last, tuple(left_out or ()))
                for path, name, follow, description, docs, chunks, last, left_out in rows]


    def copies_in_other_roots(self, root: str) -> tuple[int, dict[str, int]]:
        """(the root's files, other root -> how many of them it holds the same content of): a
        folder moved and indexed at its new place, the old place missing."""
        total = int((self.con.execute("SELECT count(*) FROM documents WHERE root = ?", [root]).fetchone() or (0,))[0])
        rows = self.con.execute(
            """
            SELECT b.root, count(DISTINCT a.id) FROM documents a JOIN documents b
                ON a.sha256 = b.sha256 AND b.root <> a.root
            WHERE a.root = ? AND a.sha256 IS NOT NULL GROUP BY b.root
            """, [root]).fetchall()
        return total, {other: int(n) for other, n in rows}
