"""Where the index and the caches live (platformdirs, overridable by environment), and path tests."""

from __future__ import annotations

import os
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
