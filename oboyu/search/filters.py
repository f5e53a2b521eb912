"""Restrictions applied before ranking: path patterns, file types, modification dates and indexed
folders, parsed from command-line style values. Types, dates and folders become SQL over
`documents d`; path patterns are gitignore patterns, the syntax of `.gitignore` and `.oboyuignore`,
matched against each file's path inside its indexed folder (`*.md`, `notes/`, `old/*`, `/top.md`
anchored at the folder, `!drafts/` to leave out; an absolute pattern inside a folder works too)."""

from __future__ import annotations

import functools
import os
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from oboyu.documents.filetypes import FORMAT_EXT, file_type_for
from oboyu.documents.patterns import pattern_problem
from oboyu.errors import OboyuError
from oboyu.paths import time_stamp

if TYPE_CHECKING:  # compiled only for a query with path patterns
    import pathspec

# macOS and Windows name files case-insensitively: there `*.md` matches `todo.MD` as the Finder does
CASE_INSENSITIVE_FILES = sys.platform in ("darwin", "win32")


@dataclass(frozen=True)
class Filters:
    """`path_globs`: gitignore patterns; one starting with `!` leaves out what it matches."""

    path_globs: tuple[str, ...] = ()
    types: tuple[str, ...] = ()  # extensions (md, txt) or file types (markdown, html, code)
    since_ns: int | None = None  # file modification time, nanoseconds since the epoch
    until_ns: int | None = None
    folders: tuple[str, ...] = ()  # absolute folders (indexed roots) the files must be under
    ignore_case: bool = CASE_INSENSITIVE_FILES  # patterns match as the file system names files

    def is_empty(self) -> bool:
        return self == Filters()

    def matches_path(self, path: str, holders: tuple[str, ...], roots: tuple[str, ...] = ()) -> bool:
        """Whether an indexed file passes the path patterns, read from each indexed folder that
        holds it (`holders`: a folder indexed on its own inside another is read from both);
        `roots`, every indexed folder, tells an absolute pattern from one anchored with `/`."""
        if not self.path_globs:
            return True
        included = excluded = False
        for root in holders:
            includes, excludes = _specs(self.path_globs, root, roots or holders, self.ignore_case)
            rel = _relative(path, root)
            if self.ignore_case:
                rel = rel.lower()
            included |= includes is None or includes.match_file(rel)
            excluded |= bool(excludes and excludes.match_file(rel))
        return included and not excluded

    def sql(self) -> tuple[str, list]:
        """A WHERE condition over `documents d`, and its parameters, for all but the path
        patterns (`matches_path`)."""
        clauses: list[str] = []
        params: list = []
        if self.types:
            extensions = [t.lower().lstrip(".") for t in self.types]
            clauses.append(
                "(list_contains(?, d.file_type) OR list_contains(?, lower(regexp_extract(d.path, '\\.([^./]+)$', 1))))"
            )
            kinds = extensions + _document_types(extensions)
            kinds += [member for kind in kinds for member in KIND_MEMBERS.get(kind, ())]
            params += [kinds, extensions]
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


@functools.lru_cache(maxsize=64)
def _specs(patterns: tuple[str, ...], root: str, roots: tuple[str, ...],
           ignore_case: bool) -> tuple[pathspec.GitIgnoreSpec | None, pathspec.GitIgnoreSpec | None]:
    """The include and exclude patterns, compiled for files under `root` (None: no such
    pattern). A pattern inside an indexed folder (`/home/me/notes/drafts/`) counts for that
    folder only; any other pattern with a leading `/` is anchored at each folder, as in an
    ignore file. Includes that all name other folders give a spec that matches nothing here."""
    includes: list[str] = []
    excludes: list[str] = []
    any_include = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pattern = os.path.expanduser(pattern[1:] if negated else pattern)
        any_include |= not negated
        home = next((r for r in roots if pattern.startswith(r.rstrip(os.sep) + os.sep)), None)
        if home is not None:
            if home != root:
                continue  # another folder's
            pattern = "/" + pattern[len(root.rstrip(os.sep)) + 1:] if len(pattern) > len(root) + 1 else "*"  # anchored
        pattern = pattern.replace(os.sep, "/")
        (excludes if negated else includes).append(pattern.lower() if ignore_case else pattern)
    import pathspec

    include_spec = pathspec.GitIgnoreSpec.from_lines(includes) if any_include else None
    return include_spec, pathspec.GitIgnoreSpec.from_lines(excludes) if excludes else None


def _relative(path: str, root: str) -> str:
    """The file's path inside its folder, with `/` (a file indexed by name: its name)."""
    if path == root:
        return os.path.basename(path)
    return os.path.relpath(path, root).replace(os.sep, "/")


def make_filters(
    paths: Iterable[str] = (), types: str | Iterable[str] | None = None, since: str | None = None, until: str | None = None,
    folders: Iterable[str] = (),
) -> Filters:
    """Filters from command-line style values: globs, `md,txt`, dates (`2026-01-31`, an ISO
    time, or an age such as `7d` / `12h`) and indexed folders (their absolute paths)."""
    if isinstance(types, str):
        given = types
        types = [t for t in (part.strip() for part in types.split(",")) if t]
        if not types:  # `--type ''` searched everything, as if not given (a user trial)
            raise OboyuError(f"the file types {given!r} name none; give extensions or kinds, as in md,txt or pdf")
    types = [KIND_ALIASES.get(t.lower().lstrip("."), t) for t in types or ()]
    unknown = [t for t in types if not _known_type(t)]
    if unknown:
        raise OboyuError(f"unknown file type {unknown[0]!r}; use an extension oboyu reads (md, txt, pdf, py, ...) "
                         f"or a kind: {', '.join(sorted({*KINDS, *KIND_ALIASES}))}")
    for pattern in paths:
        # `--path ""` (a script's unset variable) and `!` filtered nothing, silently
        problem = "it is empty" if not pattern.removeprefix("!").strip() else pattern_problem(pattern.removeprefix("!"))
        if problem is None and len(re.findall(r"\*+", pattern)) > MAX_PATTERN_WILDCARDS:
            problem = f"more than {MAX_PATTERN_WILDCARDS} wildcards (*): matching a long name against it takes minutes; use fewer, as in **/drafts/*.md"
        if problem is not None:
            raise OboyuError(f"--path `{pattern}` is not a usable pattern ({problem}); write it as a .gitignore line")
    since_ns = parse_time(since) if since is not None else None  # "" is no date (the MCP tool and the app pass None)
    until_ns = parse_time(until) if until is not None else None
    if since_ns is not None and until_ns is not None and since_ns >= until_ns:
        raise OboyuError(f"--since {since} is not before --until {until}: no file can be in between")
    return Filters(
        path_globs=tuple(p for p in paths if p),
        types=tuple(types),
        since_ns=since_ns,
        until_ns=until_ns,
        folders=tuple(folders),
    )


KINDS = tuple(sorted({"markdown", "text", "rst", "code", *FORMAT_EXT.values()}))  # the types documents are stored with
KIND_MEMBERS = {"email": ("mbox",)}  # a kind a person names that spans stored types: a mailbox is mail too
# what people call a kind (a user trial typed --type mail)
KIND_ALIASES = {"mail": "email", "word": "docx", "excel": "spreadsheet", "powerpoint": "pptx", "slides": "pptx"}


def _known_type(name: str) -> bool:
    """A kind, or an extension some reader takes (`../` or `/` is neither: it read as text)."""
    name = name.lower().lstrip(".")
    if not re.fullmatch(r"[\w+-]+", name):
        return False
    return name in KINDS or file_type_for(Path("x." + name)) is not None


# runs of `*` in a --path pattern: each one more multiplies the matcher's backtracking on a name by
# its length (Python's regexes; a four-* pattern took 53 s on one 250-character name)
MAX_PATTERN_WILDCARDS = 3
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
        # an age past what the index stores (10**400 days would not even fit a float) means all time
        return time_stamp(int(time.time() * 1e9) - seconds * 1_000_000_000)
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise OboyuError(f"not a date: {value!r} (use 2026-01-31, 2026-01-31T09:00, today, yesterday "
                         "or an age like 30min, 12h, 7d, 2w, 6mo, 1y)") from None
    try:
        # held within what the index stores, as files' times are: --since 2299 finds a file of 2300
        return time_stamp(int(moment.timestamp() * 1e9))
    except (ValueError, OverflowError, OSError):  # before year 1 in local time, or past what the clock holds
        raise OboyuError(f"the date {value!r} is out of range; use one from 1970 to 9999") from None


def describe_age(value: str) -> str | None:
    """`6m` -> "6m: 6 minutes", so that a person who meant months sees it; None for a date, and
    for a unit no one misreads (`30d` said "30 days ago" at every query: a user trial's noise)."""
    age = re.fullmatch(r"(\d+)\s*(min|mo|[mhdwy])", value.strip().lower())
    if age is None or age.group(2) != "m":
        return None
    unit = AGE_NAMES[age.group(2)]
    return f"{value.strip()}: {age.group(1)} {unit.removesuffix('s') if int(age.group(1)) == 1 else unit}"
