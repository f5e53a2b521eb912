"""The file's name as keyword text: `quality.ranking --name-words stem|path` rewrites each index's
keyword postings with the words of the file's name (`stem`) or of its path within the indexed
folder (`path`: folders and name) before the title, heading and text a chunk's keywords are read
from. Tried for a person's note named `バックアップ 手順.md` whose text never says バックアップ;
the figures are in docs/relevance.md. Done once per index (a row in `meta` marks it); the
index's search arrays are made anew."""

from __future__ import annotations

import re
import shutil
from pathlib import Path, PurePosixPath

from oboyu.documents.keywords import term_counts
from oboyu.index.store import Store

SEPARATORS = re.compile(r"[_\-.\s]+")  # what people put between the words of a file name
MARK = "benchmark_name_words"


def name_words(path: str, root: str, variant: str) -> str:
    """`2024-04-08_定例MTG` of `ROOT/仕事/議事録/2024-04-08_定例MTG.md` with `stem`; with `path`,
    `仕事 議事録 2024 04 08 定例MTG`."""
    relative = PurePosixPath(path).relative_to(root) if PurePosixPath(path).is_relative_to(root) else PurePosixPath(path)
    parts = [*relative.parts[:-1], PurePosixPath(relative.name).stem]
    return " ".join(SEPARATORS.sub(" ", part) for part in (parts[-1:] if variant == "stem" else parts))


def add_name_words(db: Path, variant: str) -> None:
    with Store(db) as store:
        if store.con.execute("SELECT value FROM meta WHERE key = ?", [MARK]).fetchone():
            return
        rows = store.con.execute("SELECT c.id, d.path, d.root, d.title, c.heading, c.text "
                                 "FROM chunks c JOIN documents d ON d.id = c.document_id").fetchall()
        counts = [(cid, term_counts("\n".join(p for p in (name_words(path, root, variant), title, heading, text) if p)))
                  for cid, path, root, title, heading, text in rows]
        store.con.execute("BEGIN")
        store.con.execute("DELETE FROM kw_postings")
        store.con.execute("DELETE FROM kw_lengths")
        store.insert_keywords(counts)
        store.con.execute("INSERT INTO meta VALUES (?, ?)", [MARK, variant])
        store.con.execute("COMMIT")
    shutil.rmtree(f"{db}.arrays", ignore_errors=True)  # they hold the old postings
