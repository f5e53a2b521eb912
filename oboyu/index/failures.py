"""What can be wrong with an index's file, said as a person can act on it: what stands at its path
(`not_an_index`), and DuckDB's failures on it. DuckDB raises its own
exceptions, not OSError, so a full disk read "unexpected error: TransactionException: ... No space
left on device", and a damaged file "unexpected error: IOException: ... Could not read enough
bytes" (a user trial). Read from the message, since DuckDB gives no errno; no import of duckdb
here, so that the command's last line of defence stays light."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from oboyu.errors import OboyuError

_FILE = re.compile(r'file "([^"]+)"')
_DAMAGED = ("Corrupt database file", "Could not read enough bytes", "checksum", "database file is corrupt")
# DuckDB's own word for another process holding the file (`Could not set lock on file`,
# `Conflicting lock is held`): whole words, since a damaged file's message names a "block"
LOCK = re.compile(r"\block\b", re.IGNORECASE)


def from_duckdb(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] in ("_duckdb", "duckdb")


def explained(exc: BaseException, index: object = None) -> OboyuError | None:
    """The one-line error for a DuckDB failure on a file (`index`: the index's path, where the
    message names none), or None when it is not one of these."""
    if not from_duckdb(exc):
        return None
    text = str(exc)
    named = _FILE.search(text)
    where = named.group(1) if named else (str(index) if index is not None else "the index")
    if "No space left on device" in text:
        return OboyuError(f"the disk holding {where} is full; free some space and run it again "
                          "(what was stored is kept: `oboyu index` goes on from there)")
    if "Read-only file system" in text:
        return OboyuError(f"{where} is on a read-only disk; choose a writable place for the index (--db or OBOYU_DB)")
    if "Permission denied" in text:
        return OboyuError(f"cannot open {where}: permission denied; check the permissions of it and of the index's "
                          "folder (DuckDB writes a .wal file beside the index), or choose another place (--db or OBOYU_DB)")
    if any(sign in text for sign in _DAMAGED):
        return OboyuError(f"the index {index if index is not None else where} is damaged or incomplete "
                          f"({text.splitlines()[0]}); move it aside and run `oboyu index FOLDER...` to make it again")
    return None


SQLITE_MAGIC = b"SQLite format 3\x00"


def not_an_index(path: Path) -> str | None:
    """What stands at the index's path when it cannot be an index: a pipe there made every
    command wait for a writer forever (a user trial), a folder read as DuckDB's raw error, and
    DuckDB reached for its SQLite extension (a download) to open an SQLite file. None when it
    may be one, or is missing (a new index) or unreadable (DuckDB says which)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))
    if kind := next((kind for test, kind in kinds if test(mode)), None):
        return kind
    try:
        with open(path, "rb") as file:
            return "an SQLite database" if file.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC else None
    except OSError:
        return None
