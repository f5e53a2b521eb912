"""The user's settings: one TOML file in the user config dir (`OBOYU_CONFIG` elsewhere), read
once a process. Like the environment, it applies everywhere: the crawl reads its excludes, the
extractors its extra file types, `oboyu query` its default mode and k. `oboyu config` shows each
setting and where it came from.

    exclude = ["*.tmp", "archive/"]   # gitignore patterns, for every indexed folder
    [file_types]
    ".textile" = "text"                # an extension, read as markdown | text | rst | html | code
    [query]
    mode = "hybrid"
    k = 10
    [app]
    restore_last_search = true         # the app opens on the last query and mode of its index
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from oboyu.errors import OboyuError
from oboyu.modes import MODE_NAMES, Mode
from oboyu.paths import config_file

READERS = ("markdown", "text", "rst", "html", "code")
DEFAULT_MODE, DEFAULT_K = Mode.HYBRID, 10


@dataclass(frozen=True)
class Settings:
    exclude: tuple[str, ...] = ()
    file_types: dict[str, str] = field(default_factory=dict)  # ".ext" -> reader
    mode: Mode = DEFAULT_MODE
    k: int = DEFAULT_K
    restore_last_search: bool = False
    path: Path | None = None  # the file read, None when there is none
    given: frozenset[str] = frozenset()  # the settings the file gave


@functools.cache
def settings() -> Settings:
    """The settings in force (read once; `settings.cache_clear()` reads the file again)."""
    return read_settings(config_file())


def read_settings(path: Path) -> Settings:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings()
    except (OSError, UnicodeDecodeError) as exc:
        raise OboyuError(f"cannot read the settings {path}: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise OboyuError(f"the settings {path} are not valid TOML: {exc}") from exc
    return _parse(data, path)


def _parse(data: dict, path: Path) -> Settings:
    def bad(key: str, wanted: str) -> OboyuError:
        return OboyuError(f"in {path}: `{key}` must be {wanted}")

    query, app = data.get("query", {}), data.get("app", {})
    unknown = sorted(set(data) - {"exclude", "file_types", "query", "app"})
    if isinstance(query, dict):
        unknown += sorted(f"query.{key}" for key in query if key not in ("mode", "k"))
    if isinstance(app, dict):
        unknown += sorted(f"app.{key}" for key in app if key != "restore_last_search")
    if unknown:
        raise OboyuError(f"in {path}: unknown setting {unknown[0]!r} "
                         "(known: exclude, file_types, query.mode, query.k, app.restore_last_search)")
    given: set[str] = set()
    exclude = data.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
        raise bad("exclude", 'a list of gitignore patterns, like ["*.tmp", "archive/"]')
    file_types = data.get("file_types", {})
    if not isinstance(file_types, dict):
        raise bad("file_types", 'a table of extensions, like {".textile" = "text"}')
    types = {}
    for ext, reader in file_types.items():
        if reader not in READERS:
            raise bad(f'file_types."{ext}"', f"one of {', '.join(READERS)}")
        types[("." + ext.lstrip(".")).lower()] = reader
    if not isinstance(query, dict):
        raise bad("query", "a table with mode and k")
    mode, k = query.get("mode", DEFAULT_MODE), query.get("k", DEFAULT_K)
    if mode not in MODE_NAMES:
        raise bad("query.mode", f"one of {', '.join(MODE_NAMES)}")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
        raise bad("query.k", "a whole number from 1 to 1000")
    if not isinstance(app, dict):
        raise bad("app", "a table with restore_last_search")
    restore = app.get("restore_last_search", False)
    if not isinstance(restore, bool):
        raise bad("app.restore_last_search", "true or false")
    given.update(key for key in ("exclude", "file_types") if key in data)
    given.update(f"query.{key}" for key in ("mode", "k") if key in query)
    given.update(f"app.{key}" for key in ("restore_last_search",) if key in app)
    return Settings(tuple(exclude), types, Mode(mode), k, restore, path, frozenset(given))
