"""Restrictions applied before ranking: path globs, file types, modification dates and indexed
folders, parsed from command-line style values and turned into SQL over `documents d`."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from oboyu.documents.extract import file_type_for
from oboyu.errors import OboyuError

# macOS and Windows name files case-insensitively: there `*.md` matches `todo.MD` as the Finder does
CASE_INSENSITIVE_FILES = sys.platform in ("darwin", "win32")


@dataclass(frozen=True)
class Filters:
    """A glob without a leading `/` matches anywhere below a folder (`*.md`, `notes/*`); one
    starting with `!` excludes."""

    path_globs: tuple[str, ...] = ()
    types: tuple[str, ...] = ()  # extensions (md, txt) or file types (markdown, html, code)
    since_ns: int | None = None  # file modification time, nanoseconds since the epoch
    until_ns: int | None = None
    folders: tuple[str, ...] = ()  # absolute folders (indexed roots) the files must be under
    ignore_case: bool = CASE_INSENSITIVE_FILES  # globs match as the file system names files

    def is_empty(self) -> bool:
        return self == Filters()

    def sql(self) -> tuple[str, list]:
        """A WHERE condition over `documents d`, and its parameters."""
        clauses: list[str] = []
        params: list = []
        includes = [g for g in self.path_globs if not g.startswith("!")]
        excludes = [g[1:] for g in self.path_globs if g.startswith("!")]
        path, fold = ("lower(d.path)", str.lower) if self.ignore_case else ("d.path", str)
        if includes:
            clauses.append("(" + " OR ".join(f"{path} GLOB ?" for _ in includes) + ")")
            params += [fold(_anchor(g)) for g in includes]
        for glob in excludes:
            clauses.append(f"NOT {path} GLOB ?")
            params.append(fold(_anchor(glob)))
        if self.types:
            extensions = [t.lower().lstrip(".") for t in self.types]
            clauses.append(
                "(list_contains(?, d.file_type) OR list_contains(?, lower(regexp_extract(d.path, '\\.([^./]+)$', 1))))"
            )
            params += [extensions + _document_types(extensions), extensions]
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


def _document_types(extensions: list[str]) -> list[str]:
    """The document types these extensions name: `md` is every Markdown file (.markdown, .mdx
    too). Code is left out: `--type py` means Python files, not every source file."""
    types = {file_type_for(Path("x." + ext)) for ext in extensions}
    return sorted(t for t in types if t is not None and t != "code")


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


AGE_UNITS = {  # seconds; a month and a year as people count them roughly
    "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800, "mo": 30 * 86400, "y": 365 * 86400,
}
AGE_NAMES = {"m": "minutes", "min": "minutes", "h": "hours", "d": "days", "w": "weeks", "mo": "months", "y": "years"}


def parse_time(value: str) -> int:
    """A date, an ISO time, `today`, `yesterday` or an age (`30min`, `12h`, `7d`, `2w`, `6mo`,
    `1y`; `m` is minutes) as nanoseconds since the epoch."""
    word = value.strip().lower()
    if word in ("today", "yesterday"):
        midnight = datetime.now().replace(hour=0, minute=0, second=0, microsecond=0)
        return int((midnight.timestamp() - (86400 if word == "yesterday" else 0)) * 1e9)
    age = re.fullmatch(r"(\d+)\s*(min|mo|[mhdwy])", word)
    if age:
        seconds = int(age.group(1)) * AGE_UNITS[age.group(2)]
        return int((time.time() - seconds) * 1e9)
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise OboyuError(f"not a date: {value!r} (use 2026-01-31, 2026-01-31T09:00, today, yesterday "
                         "or an age like 30min, 12h, 7d, 2w, 6mo, 1y)") from None
    try:
        return int(moment.timestamp() * 1e9)
    except (ValueError, OverflowError, OSError):  # before year 1 in local time, or past what the clock holds
        raise OboyuError(f"the date {value!r} is out of range; use one from 1970 to 9999") from None


def describe_age(value: str) -> str | None:
    """`6m` -> "6m: 6 minutes", so that a person who meant months sees it; None for a date."""
    age = re.fullmatch(r"(\d+)\s*(min|mo|[mhdwy])", value.strip().lower())
    return f"{value.strip()}: {age.group(1)} {AGE_NAMES[age.group(2)]}" if age else None
