"""The index's tables and their versions: `create` makes the current schema; each older version
has one migration, numbered by the version it brings the file to, run in order in one transaction
(a keyword index analysed anew is made beside the old before it: `prepare`).

Versions: 1 documents and chunks; 2 the keyword index (kw_postings, kw_lengths); 3 roots, PDF pages
of chunks; 4 the folders each root's last walk left out; 5 web pages read again (their navigation and
link bars left out, lines counted in the text shown); page_start/page_end hold any format's parts;
6 the keyword index rebuilt with Japanese spellings folded (UniDic lemmas, kana); 7 rebuilt again
with the character bigrams of unknown words, and the files that cannot be indexed remembered; 8 a
description of each root; 9 and 10 the keyword index rebuilt with English words stemmed by
Snowball, then Latin words joined by hyphens or underscores made one word too (`reanalysis`). The
embeddings table is made when the index's model is set (its width is the model's).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from oboyu.index.reanalysis import KeywordStore, make_keywords_beside, put_keywords_in_place


class Store(KeywordStore, Protocol):
    """What the migrations use of `store.Store` (named here so that the store imports its schema,
    never the other way round): the keyword index's writes, and roots' names."""

    def unique_root_name(self, base: str) -> str: ...

SCHEMA_VERSION = 10

_BASE = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE SEQUENCE IF NOT EXISTS document_ids;
CREATE TABLE IF NOT EXISTS documents (
    id BIGINT, path VARCHAR, root VARCHAR, size BIGINT, mtime_ns BIGINT, sha256 VARCHAR,
    encoding VARCHAR, file_type VARCHAR, title VARCHAR, indexed_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS chunks (
    id VARCHAR, document_id BIGINT, ordinal INTEGER, heading VARCHAR, start_line INTEGER,
    end_line INTEGER, start_char INTEGER, end_char INTEGER, text VARCHAR, page_start INTEGER, page_end INTEGER
);
"""
_KEYWORDS = """
CREATE TABLE IF NOT EXISTS kw_postings (chunk_id VARCHAR, term VARCHAR, tf INTEGER);
CREATE TABLE IF NOT EXISTS kw_lengths (chunk_id VARCHAR, length INTEGER);
"""
_ROOTS = "CREATE TABLE IF NOT EXISTS roots (path VARCHAR, name VARCHAR, follow_symlinks BOOLEAN, added_at TIMESTAMP);"
_LEFT_OUT = "ALTER TABLE roots ADD COLUMN left_out VARCHAR[]"
_DESCRIPTION = "ALTER TABLE roots ADD COLUMN description VARCHAR"
_SKIPPED = "CREATE TABLE IF NOT EXISTS skipped_files (path VARCHAR, root VARCHAR, size BIGINT, mtime_ns BIGINT, reason VARCHAR);"


def create(store: Store) -> None:
    """The current schema in an empty file (the caller holds a transaction)."""
    for ddl in (_BASE, _KEYWORDS, _ROOTS, _LEFT_OUT, _SKIPPED, _DESCRIPTION):
        store.con.execute(ddl)
    store.con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])


def migrate_to_2(store: Store) -> None:
    """The keyword index's tables (filled from the stored chunk texts: KEYWORDS_MADE_ANEW)."""
    store.con.execute(_KEYWORDS)


def migrate_to_3(store: Store) -> None:
    """PDF pages of chunks; roots, one for each folder documents were indexed under."""
    store.con.execute("ALTER TABLE chunks ADD COLUMN page_start INTEGER")
    store.con.execute("ALTER TABLE chunks ADD COLUMN page_end INTEGER")
    store.con.execute(_ROOTS)
    for (root,) in store.con.execute("SELECT DISTINCT root FROM documents ORDER BY root").fetchall():
        # the columns version 3 had (the store writes the newest table's)
        store.con.execute("INSERT INTO roots (path, name, follow_symlinks, added_at) VALUES (?, ?, false, now())",
                          [root, store.unique_root_name(Path(root).name or root)])


def migrate_to_4(store: Store) -> None:
    """The folders a root's walk left out (junk folders), for `oboyu status`: empty until the
    next update."""
    store.con.execute(_LEFT_OUT)


def migrate_to_5(store: Store) -> None:
    """Web pages are read again by the next update: their stored content hash is cleared, so the
    unchanged file is extracted anew rather than passed over as unchanged."""
    store.con.execute("UPDATE documents SET sha256 = '', mtime_ns = -1 WHERE file_type = 'html'")


def migrate_to_7(store: Store) -> None:
    """The files whose content cannot be indexed, remembered so that an update does not read
    them again."""
    store.con.execute(_SKIPPED)


def migrate_to_8(store: Store) -> None:
    """A description of each root, in the person's words (`oboyu describe`): none until given."""
    store.con.execute(_DESCRIPTION)


# Versions whose keyword analysis changed: the keyword index is made anew from the stored chunk
# texts, once however many of these an upgrade crosses (the vectors stay).
KEYWORDS_MADE_ANEW: dict[int, str] = {
    2: "the keyword index, first made",
    6: "words folded: 引越し and 引っ越し, コンピュータ and コンピューター, みーてぃんぐ and ミーティング meet",
    7: "words the dictionary does not know gain their character bigrams, found by their parts",
    9: "English words stemmed by Snowball's English stemmer: meetings meets meeting",
    10: "Latin words joined by hyphens or underscores also indexed as one word: Wi-Fi meets wifi, "
        "e-mail email, MAX_RETRIES maxRetries",
}


def _keywords_made_anew(version: int) -> bool:
    return any(target in KEYWORDS_MADE_ANEW for target in range(version + 1, SCHEMA_VERSION + 1))


def prepare(store: Store, version: int) -> None:
    """What an upgrade from `version` makes before its transaction (the caller holds the file
    for writing): a keyword index analysed anew, beside the one in use. Minutes at a million
    passages, so it commits as it goes and a stopped upgrade goes on from where it was; held
    in one transaction, a million passages' terms took 6.7 GB."""
    if _keywords_made_anew(version):
        make_keywords_beside(store)


MIGRATIONS: dict[int, Callable[[Store], None]] = {
    2: migrate_to_2, 3: migrate_to_3, 4: migrate_to_4, 5: migrate_to_5, 7: migrate_to_7, 8: migrate_to_8,
}


def migrate(store: Store, version: int) -> None:
    """Bring a file of `version` to SCHEMA_VERSION (the caller holds a transaction; `prepare`
    has run)."""
    targets = range(version + 1, SCHEMA_VERSION + 1)
    for target in targets:
        if target in MIGRATIONS:
            MIGRATIONS[target](store)
    if _keywords_made_anew(version):
        put_keywords_in_place(store)
    store.con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])
