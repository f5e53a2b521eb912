"""Where the index and the caches live (platformdirs, overridable by environment), path tests and a file's time as the index stores it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import platformdirs

APP_NAME = "oboyu"


def default_db_path() -> Path:
    """The index file: `OBOYU_DB`, else `index.duckdb` in the user data dir."""
    env = os.environ.get("OBOYU_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME)) / "index.duckdb"


def cache_dir() -> Path:
    """Models and caches: `OBOYU_CACHE_DIR`, else the user cache dir."""
    env = os.environ.get("OBOYU_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir(APP_NAME))


def config_file() -> Path:
    """The settings file: `OBOYU_CONFIG`, else `config.toml` in the user config dir."""
    env = os.environ.get("OBOYU_CONFIG")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def state_dir() -> Path:
    """What the app remembers between runs (search history, recent documents): `OBOYU_STATE_DIR`,
    else the user state dir."""
    env = os.environ.get("OBOYU_STATE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_state_dir(APP_NAME))


def models_dir() -> Path:
    return cache_dir() / "models"


def is_within(path: str, folder: str) -> bool:
    """`path` is `folder` or lies below it (as strings: /a/bc is not within /a/b)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths not inside another of them."""
    out: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(is_within(str(path), str(o)) for o in out):
            out.append(path)
    return out


# A name that is not UTF-8 on disk (Shift_JIS from an old archive) reaches Python with each bad
# byte as a lone surrogate U+DC80+byte (PEP 383), which DuckDB cannot store. The index holds such
# a byte as the private-use character U+10FD00+byte instead: one character for one, so equality
# and prefixes (files under a folder) still hold, and the exact name comes back. A real name with
# a character of that block cannot be told apart: the crawl refuses it.
_STORED_BYTE = 0x10FD00
_TO_STORE = {0xDC00 + byte: chr(_STORED_BYTE + byte) for byte in range(0x80, 0x100)}
_FROM_STORE = {_STORED_BYTE + byte: chr(0xDC00 + byte) for byte in range(0x80, 0x100)}
RESERVED_IN_NAMES = re.compile(f"[{chr(_STORED_BYTE + 0x80)}-{chr(_STORED_BYTE + 0xFF)}]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def stored_path(path: str | Path) -> str:
    """The path as the index holds it: valid UTF-8 whatever the name's bytes on disk."""
    text = str(path)
    return text.translate(_TO_STORE) if _SURROGATE.search(text) else text


def disk_path(stored: str) -> str:
    """The path as the system names it (bad bytes as surrogates again): what open() takes."""
    return stored.translate(_FROM_STORE) if RESERVED_IN_NAMES.search(stored) else stored


def time_stamp(ns: int) -> int:
    """A file's time as the index stores it (a 64-bit count of nanoseconds since 1970): a date
    past April 2262 or before 1678 (`touch -d 2300-01-01`, a damaged archive) is held at the
    nearest end rather than stopping the run (two such times look alike: an edit that keeps the
    size is then found by `--full`)."""
    return min(max(ns, -(2**63)), 2**63 - 1)
