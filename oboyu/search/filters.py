"""Restrictions applied before ranking: path globs, file types, modification dates and indexed
folders, parsed from command-line style values and turned into SQL over `documents d`."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from oboyu.errors import OboyuError


@dataclass(frozen=True)
class Filters:
    """A glob without a leading `/` matches anywhere below a folder (`*.md`, `notes/*`); one
    starting with `!` excludes."""

    path_globs: tuple[str, ...] = ()
    types: tuple[str, ...] = ()  # extensions (md, txt) or file types (markdown, html, code)
    since_ns: int | None = None  # file modification time, nanoseconds since the epoch
    until_ns: int | None = None
    folders: tuple[str, ...] = ()  # absolute folders (indexed roots) the files must be under

    def is_empty(self) -> bool:
        return self == Filters()

    def sql(self) -> tuple[str, list]:
        """A WHERE condition over `documents d`, and its parameters."""
        clauses: list[str] = []
        params: list = []
        includes = [g for g in self.path_globs if not g.startswith("!")]
        excludes = [g[1:] for g in self.path_globs if g.startswith("!")]
        if includes:
            clauses.append("(" + " OR ".join("d.path GLOB ?" for _ in includes) + ")")
            params += [_anchor(g) for g in includes]
        for glob in excludes:
            clauses.append("NOT d.path GLOB ?")
            params.append(_anchor(glob))
        if self.types:
            types = [t.lower().lstrip(".") for t in self.types]
            clauses.append(
                "(list_contains(?, d.file_type) OR list_contains(?, lower(regexp_extract(d.path, '\\.([^./]+)$', 1))))"
            )
            params += [types, types]
        if self.since_ns is not None:
            clauses.append("d.mtime_ns >= ?")
            params.append(self.since_ns)
        if self.until_ns is not None:
            clauses.append("d.mtime_ns < ?")
            params.append(self.until_ns)
        if self.folders:
            clauses.append("(" + " OR ".join("starts_with(d.path, ?)" for _ in self.folders) + ")")
            params += [folder.rstrip(os.sep) + os.sep for folder in self.folders]
        return (" AND ".join(clauses) or "TRUE"), params


def _anchor(glob: str) -> str:
    return glob if glob.startswith("/") else "*/" + glob


def make_filters(
    paths: Iterable[str] = (), types: str | Iterable[str] | None = None, since: str | None = None, until: str | None = None,
    folders: Iterable[str] = (),
) -> Filters:
    """Filters from command-line style values: globs, `md,txt`, dates (`2026-01-31`, an ISO
    time, or an age such as `7d` / `12h`) and indexed folders (their absolute paths)."""
    if isinstance(types, str):
        types = [t for t in (part.strip() for part in types.split(",")) if t]
    return Filters(
        path_globs=tuple(p for p in paths if p),
        types=tuple(types or ()),
        since_ns=parse_time(since) if since else None,
        until_ns=parse_time(until) if until else None,
        folders=tuple(folders),
    )


def parse_time(value: str) -> int:
    """A date, an ISO time or an age (`30m`, `12h`, `7d`, `2w`) as nanoseconds since the epoch."""
    age = re.fullmatch(r"(\d+)\s*([mhdw])", value.strip())
    if age:
        seconds = int(age.group(1)) * {"m": 60, "h": 3600, "d": 86400, "w": 604800}[age.group(2)]
        return int((time.time() - seconds) * 1e9)
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise OboyuError(f"not a date: {value!r} (use 2026-01-31, 2026-01-31T09:00 or an age like 7d)") from None
    try:
        return int(moment.timestamp() * 1e9)
    except (ValueError, OverflowError, OSError):  # before year 1 in local time, or past what the clock holds
        raise OboyuError(f"the date {value!r} is out of range; use one from 1970 to 9999") from None
