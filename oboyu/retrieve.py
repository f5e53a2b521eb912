"""Indexed files' text, as `oboyu get` prints it and MCP `read` serves it: which indexed files a
request names (a path with a line range, a glob, a folder, a passage's chunk id), the one rule
that confines reading to them, and their extracted text with the heading paths and parts
(pages, slides, rows) the index knows.

    with open_reading(db) as store:
        found = find(store, ["notes/*.md", "report.pdf:40:20", "3f2a9c0d1e4b5a67"])
    for item in read(found.targets, max_bytes=200_000):  # an Excerpt, or a LeftOut past the cap
        ...
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from oboyu.documents.crawl import reaches
from oboyu.documents.extracted import LINE_BREAK
from oboyu.documents.filetypes import PART_UNITS
from oboyu.documents.viewing import Shown, read_document
from oboyu.errors import OboyuError
from oboyu.index.store import Store
from oboyu.paths import disk_path, is_within, stored_path, time_stamp
from oboyu.search.filters import CASE_INSENSITIVE_FILES
from oboyu.text import visible_name

MAX_FILE_BYTES = 20 * 1024 * 1024  # a file larger than this is not read (the indexer stops at 10 MB)
NOT_INDEXED = "not an indexed file"
OUTSIDE_ROOT = "resolves outside its indexed folder"


# --- the rule: only indexed files, inside their indexed folder ---------------------------------

def inside_its_root(path: str, root: str | None) -> bool:
    """Whether the file's real path (symlinks and `..` resolved) lies inside its root's. A name
    that is not UTF-8 may come in the index's form (as MCP carries it to a client)."""
    return root is not None and is_within(os.path.realpath(disk_path(path)), os.path.realpath(disk_path(root)))


def indexed_real_path(path: str, root_of: Callable[[str], str | None]) -> str:
    """The real path to read for `path` (absolute; as the system names it, or in the index's
    form): only a file the index holds (`root_of` gives its indexed folder, or None), and only
    when its real path lies inside that folder's, so that a symlink or `..` never reads past what
    was indexed. Read what it returns without following symlinks. Raises OboyuError saying why
    (NOT_INDEXED, OUTSIDE_ROOT, or a bad path)."""
    if not path or "\x00" in path:
        raise OboyuError("invalid path")
    if not os.path.isabs(path):
        raise OboyuError("path must be absolute")
    candidate = os.path.abspath(path)
    root = root_of(candidate)
    if root is None:
        raise OboyuError(NOT_INDEXED)
    if not inside_its_root(candidate, root):
        raise OboyuError(OUTSIDE_ROOT)
    return os.path.realpath(disk_path(candidate))


def lines_around(shown: Shown, first: int, last: int) -> list[tuple[int, str]]:
    """The parts (pages, slides, ...) of lines first..last: the one the first line is in (a range
    from mid-page says which page it is on), then each that starts inside."""
    inside = [part for part in shown.parts if first <= part[0] <= last]
    if inside and inside[0][0] == first:  # `¶ 4 · ¶ 5` over a line that starts ¶ 5
        return inside
    return [part for part in shown.parts if part[0] < first][-1:] + inside


# --- what a request names ---------------------------------------------------------------------

CHUNK_ID = re.compile(r"#?([0-9a-f]{16})")
_RANGE = re.compile(r"(?s)(.+?):(\d+)(?:([:-])(\d+))?")
# `report.pdf (p. 3)`, `deck.pptx (slides 4-5)`: where `query` says a passage of a paged or tabular file is
_PART_UNIT = "|".join(re.escape(u) for u in sorted({u for pair in PART_UNITS.values() for u in pair}, key=len, reverse=True))
_PART = re.compile(rf"(?s)(.+?) \((?:{_PART_UNIT}) (\d+)(?:-(\d+))?\)")
_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Request:
    """One argument: a path (absolute, as the system names it; a glob or a folder too) or a chunk
    id, and the lines asked for (first..last; None: to the end)."""

    argument: str
    path: str | None = None
    chunk_id: str | None = None
    first: int | None = None
    last: int | None = None
    glob: bool = False  # `path` is a pattern (the working folder's name in it escaped)
    literal: str | None = None  # a pattern's path as typed: a name printed with ␛ and [ is no pattern
    parts: tuple[int, int] | None = None  # pages, slides, rows, ... asked for instead of lines


def parse(argument: str, cwd: str | None = None) -> Request:
    """`PATH`, `PATH:LINE` (to the end), `PATH:LINE:COUNT`, `PATH:START-END` or `PATH (p. 3)`,
    `PATH (slides 4-5)` (as `oboyu query` prints a result), a glob or folder with any of these, or
    a chunk id (`--json`'s `chunk_id`, a leading `#` allowed). A name that exists as given is taken
    whole, colons and all."""
    if not argument or "\x00" in argument:
        raise OboyuError("an empty or invalid path")
    cwd = cwd or os.getcwd()
    name = disk_path(argument)  # a name that is not UTF-8 may be pasted in the index's form
    whole = os.path.abspath(os.path.join(cwd, os.path.expanduser(name)))
    if (chunk := CHUNK_ID.fullmatch(name)) and not os.path.lexists(whole):
        return Request(argument, chunk_id=chunk[1])
    if (part := _PART.fullmatch(name)) and not os.path.lexists(whole):
        first_part, last_part = int(part[2]), int(part[3] or part[2])
        if last_part < first_part:
            raise OboyuError("the range ends before it starts")
        located = _located(argument, part[1], cwd)
        return Request(argument, located.path, parts=(first_part, last_part), glob=located.glob)
    match = _RANGE.fullmatch(name)
    if match is None or os.path.lexists(whole):
        if match is None and not os.path.lexists(whole):
            # the longest name before a colon that exists: `FILE:`, `FILE:2:` and `FILE:2-` each
            # say what is wrong after it, rather than "no such file" for some of them
            for colon in (at for at in range(len(name) - 1, 0, -1) if name[at] == ":"):
                if os.path.lexists(os.path.join(cwd, os.path.expanduser(name[:colon]))):
                    raise OboyuError(f"{name[colon + 1:]!r} is not a line: PATH:LINE, PATH:LINE:COUNT or PATH:START-END, "
                                     "with numbers")
        return _located(argument, name, cwd)
    name, start, separator, end = match.groups()
    first, last = int(start), None
    if first < 1:
        raise OboyuError("lines are numbered from 1")
    if separator == ":":  # LINE:COUNT
        if int(end) < 1:
            raise OboyuError("COUNT must be at least 1")
        last = first + int(end) - 1
    elif separator == "-":  # START-END
        last = int(end)
        if last < first:
            raise OboyuError("the range ends before it starts")
    return _located(argument, name, cwd, first, last)


def _located(argument: str, name: str, cwd: str, first: int | None = None, last: int | None = None) -> Request:
    name = os.path.expanduser(name)
    path = os.path.abspath(os.path.join(cwd, name))
    if not _GLOB.search(name) or os.path.lexists(path):
        return Request(argument, path, first=first, last=last)
    escaped = os.path.abspath(os.path.join(_GLOB.sub(r"[\g<0>]", cwd), name))  # a `[` in the folder's name is a `[`
    return Request(argument, escaped, first=first, last=last, glob=True, literal=path)


@dataclass
class Target:
    """An indexed file to show, as the index holds it, and the lines asked for."""

    request: Request
    document_id: int
    path: str  # as the system names it
    root: str
    file_type: str
    size: int
    mtime_ns: int
    first: int | None
    last: int | None
    chunk_id: str | None = None
    passage: str | None = None  # a chunk id's passage as indexed: within its lines, only it is shown


@dataclass
class Found:
    targets: list[Target] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (argument, why): bad requests
    unmatched: list[str] = field(default_factory=list)  # globs and folders that named no indexed file


_DOCUMENT = "SELECT id, path, root, file_type, size, mtime_ns FROM documents"


def find(store: Store, arguments: list[str], cwd: str | None = None) -> Found:
    """The indexed files the arguments name, in the order given (a glob's or folder's files by
    path), each once per range; what names nothing the index holds is an error, one per argument."""
    found = Found()
    seen: set[tuple[str, int | None, int | None, tuple[int, int] | None]] = set()
    for argument in arguments:
        try:
            request = parse(argument, cwd)
            targets = _targets(store, request)
        except OboyuError as exc:
            found.errors.append((argument, str(exc)))
            continue
        if not targets and request.path is not None:
            found.unmatched.append(argument)
        for target in targets:
            key = (target.path, target.first, target.last, request.parts)
            if key not in seen:
                seen.add(key)
                found.targets.append(target)
    return found


def _targets(store: Store, request: Request) -> list[Target]:
    if request.chunk_id is not None:
        row = store.con.execute("SELECT d.id, d.path, d.root, d.file_type, d.size, d.mtime_ns, c.start_line, c.end_line, "
                                "c.text FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ?",
                                [request.chunk_id]).fetchone()
        if row is None:
            raise OboyuError("no passage with this chunk id (ids change when a file changes; query again)")
        target = _target(request, row[:6], row[6], row[7], request.chunk_id)
        target.passage = row[8]
        return [target]
    assert request.path is not None
    path = request.path
    if request.glob:
        matching = [_target(request, document) for document in _matching(store, path)]
        if not matching and request.literal and (document := _printed_as(store, request.literal)) is not None:
            return [_target(request, document)]  # `ok␛[32m.txt` as query printed it
        return matching
    if os.path.isdir(path):
        return [_target(request, document) for document in _under(store, path)]
    # as indexed, through a symlinked folder, or typed in the other Unicode form (a name copied from
    # macOS, NFD, is not the same bytes on Linux as the NFC one a keyboard types)
    forms = (path, os.path.realpath(path), unicodedata.normalize("NFC", path), unicodedata.normalize("NFD", path))
    for candidate in dict.fromkeys(forms):
        document = store.con.execute(f"{_DOCUMENT} WHERE path = ?", [stored_path(candidate)]).fetchone()
        if document is not None:
            return [_target(request, document)]
    if not os.path.lexists(path):
        if (document := _printed_as(store, path)) is not None:
            return [_target(request, document)]
        raise OboyuError("no such file")
    raise OboyuError(_why_not_indexed(store, path) or NOT_INDEXED)


# what `visible_name` prints for a character a name cannot show as it is: ␊ for a newline, ␉ for a tab, \xff for a
# byte that is not UTF-8, \u202e for a bidi control
_PRINTED_MARK = re.compile(r"[\u2400-\u2421]|\\x[0-9a-f]{2}|\\u[0-9a-f]{4}")


def _printed_as(store: Store, path: str) -> tuple | None:
    """The one indexed file that `oboyu query` printed as `path` (a newline in its name as ␊, a
    byte that is not UTF-8 as \\xff): a person copies what they see, and a user trial's `get` of
    it said "no such file"."""
    mark = _PRINTED_MARK.search(path)
    if mark is None:
        return None
    near = store.con.execute(f"{_DOCUMENT} WHERE starts_with(path, ?)", [stored_path(path[:mark.start()])]).fetchall()
    printed = [row for row in near if visible_name(row[1]) == path]
    return printed[0] if len(printed) == 1 else None


def _why_not_indexed(store: Store, path: str) -> str | None:
    """Why a file inside an indexed folder has no text here: what its last run said, or that
    the walk leaves it out. None for a file outside every indexed folder."""
    skipped = store.con.execute("SELECT reason FROM skipped_files WHERE path = ?", [stored_path(path)]).fetchone()
    if skipped is not None:
        return f"skipped when indexed: {skipped[0]}"
    root = store.root_holding(stored_path(path))
    if root is not None and not reaches(Path(root.path), Path(path), root.follow_symlinks):
        return (f"left out by the walk of {root.name} ({root.path}): hidden, ignored, in a junk folder or a symlink; "
                "`oboyu index -v` says which")
    return None


def _target(request: Request, row: tuple, first: int | None = None, last: int | None = None,
            chunk_id: str | None = None) -> Target:
    document_id, path, root, file_type, size, mtime_ns = row
    return Target(request, document_id, disk_path(path), disk_path(root), file_type, size, mtime_ns,
                  request.first if first is None else first, request.last if last is None else last, chunk_id)


def _under(store: Store, folder: str) -> list[tuple]:
    """The indexed files at or below `folder` (a prefix of the stored paths), by path."""
    prefix = stored_path(folder.rstrip(os.sep) + os.sep)
    if CASE_INSENSITIVE_FILES:
        return store.con.execute(f"{_DOCUMENT} WHERE starts_with(lower(path), lower(?)) ORDER BY path", [prefix]).fetchall()
    return store.con.execute(f"{_DOCUMENT} WHERE starts_with(path, ?) ORDER BY path", [prefix]).fetchall()


def _matching(store: Store, pattern: str) -> list[tuple]:
    """The indexed files a shell-style glob names: `*`, `?` and `[...]` inside one name, `**` any
    depth of folders; matched against the whole absolute path."""
    pieces = stored_path(pattern).split(os.sep)
    literal = next((i for i, piece in enumerate(pieces) if _GLOB.search(piece)), len(pieces))
    try:
        # DOTALL: a trailing `**` (`.*`) takes a name with a newline too (a user trial's was left out)
        regex = re.compile(_glob_regex(pieces), re.DOTALL | (re.IGNORECASE if CASE_INSENSITIVE_FILES else 0))
    except re.error as exc:
        raise OboyuError(f"`{pattern}` is not a usable glob ({exc.msg}); quote it as the shell would, e.g. 'notes/*.md'") from None
    return [row for row in _under(store, os.sep.join(pieces[:literal]) or os.sep) if regex.fullmatch(row[1])]


def _glob_regex(pieces: list[str]) -> str:
    sep, name = re.escape(os.sep), f"[^{re.escape(os.sep)}]"
    out = []
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        if piece == "**":
            out.append(".*" if last else f"(?:{name}+{sep})*")
            continue
        regex = "".join(_glob_piece(token, name) for token in _GLOB_TOKEN.findall(piece))
        out.append(regex if last else regex + sep)
    return "".join(out)


_GLOB_TOKEN = re.compile(r"\[[!^]?\]?[^\]]*\]|.", re.DOTALL)  # a class [...] ([!...] negated), or one character


def _glob_piece(token: str, name: str) -> str:
    if token == "*":
        return f"{name}*"
    if token == "?":
        return name
    if len(token) > 2 and token[0] == "[":
        inside = token[1:-1]
        negate = inside[0] in "!^"
        members = re.escape(inside[1:] if negate else inside).replace("\\-", "-")
        return f"[^{members}{re.escape(os.sep)}]" if negate else f"[{members}]"
    return re.escape(token)


# --- reading, within a budget -----------------------------------------------------------------

@dataclass
class Excerpt:
    """Lines start_line..end_line of an indexed file's text, with where its parts and headings start."""

    target: Target
    start_line: int
    end_line: int
    total_lines: int
    lines: list[str]
    parts: list[tuple[int, str]]  # (line, `p. 3`): the part the first line is in, then each starting inside
    headings: list[tuple[int, str]]  # (line, heading path): the section the first line is in, then each change
    truncated: bool  # lines after end_line were asked for but left out (--max-lines, the size cap)
    stale: bool  # the file changed since it was indexed: headings and parts may be off
    line_cut: bool = False  # the one line shown is only its start: alone it passed the size cap

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class LeftOut:
    target: Target
    reason: str


@dataclass
class Unreadable:
    target: Target
    error: str


def read(targets: list[Target], max_bytes: int = 0, max_lines: int | None = None
         ) -> Iterator[Excerpt | LeftOut | Unreadable]:
    """Each target's lines in turn. `max_bytes` (UTF-8, 0 for none) caps the text of all of
    them together: the first is cut at a line to fit, and any later file that does not fit is
    left out whole, saying why; `max_lines` caps each file."""
    left = max_bytes or None
    shown_any = False
    for target in targets:
        if left is not None and left <= 0:
            yield LeftOut(target, f"the --max-bytes cap ({max_bytes:,} bytes) was reached")
            continue
        try:
            excerpt = _excerpt(target, max_lines)
        except OboyuError as exc:
            yield Unreadable(target, str(exc))
            continue
        size = _size(excerpt.text)
        if left is not None and size > left:
            if shown_any:
                yield LeftOut(target, f"{size:,} bytes would pass the --max-bytes cap ({left:,} left of {max_bytes:,})")
                continue
            _cut(excerpt, left)
            size = _size(excerpt.text)
        shown_any = True
        if left is not None:
            left -= size
        yield excerpt


def _excerpt(target: Target, max_lines: int | None) -> Excerpt:
    real = indexed_real_path(target.path, lambda _: target.root)
    shown = read_document(real, MAX_FILE_BYTES, target.file_type, follow_symlinks=False)
    total = len(shown.lines)
    if target.request.parts is not None:
        target.first, target.last = _lines_of_parts(shown, target.request.parts)
    first = target.first or 1
    if first > max(total, 1):
        raise OboyuError(f"line {first} is past the end (the text has {total} line{'' if total == 1 else 's'})")
    last = min(total, target.last or total)
    wanted = last
    if max_lines is not None:
        last = min(last, first + max_lines - 1)
    try:
        info = os.stat(real)
        stale = (info.st_size, time_stamp(info.st_mtime_ns)) != (target.size, target.mtime_ns)  # as the index holds it
    except OSError:
        stale = True
    lines = shown.lines[first - 1 : last]
    if target.passage is not None and last == wanted:
        lines = _only_the_passage(lines, target.passage)
    return Excerpt(target, first, last, total, lines, lines_around(shown, first, last),
                   _headings(shown.headings, first, last), last < wanted, stale)


def _lines_of_parts(shown: Shown, parts: tuple[int, int]) -> tuple[int, int]:
    """The lines of parts first..last (pages, slides, rows: as `query` names them)."""
    numbered = [(line, int(number[0])) for line, label in shown.parts if (number := re.search(r"\d+", label))]
    starts = [line for line, number in numbered if number == parts[0]]
    if not starts:
        have = f"{numbered[0][1]}-{numbered[-1][1]}" if numbered else "none"
        raise OboyuError(f"it has no part {parts[0]} (its parts: {have}); `oboyu get PATH` shows them all")
    after = [line for line, number in numbered if number > parts[1] and line > starts[0]]
    return starts[0], (after[0] - 1 if after else len(shown.lines))


def _only_the_passage(lines: list[str], passage: str) -> list[str]:
    """The lines with the text before the passage on its first line and after it on its last
    left out (an indent stays): a passage of a one-line 96 KB log printed the whole line (a user
    trial). As they are when the passage is not found in them (the file changed)."""
    text = "\n".join(lines)
    wanted = "\n".join(LINE_BREAK.split(passage))
    start = text.find(wanted)
    if start < 0 or not wanted:
        return lines
    end = start + len(wanted)
    line_start, line_end = text.rfind("\n", 0, start) + 1, len(text) if (n := text.find("\n", end)) < 0 else n
    head = start if text[line_start:start].strip() else line_start
    tail = end if text[end:line_end].strip() else line_end
    return text[head:tail].split("\n")


def _headings(headings: list[tuple[int, str]], first: int, last: int) -> list[tuple[int, str]]:
    """The heading path in force at the first line shown, then each heading among the lines, at its own line."""
    before = [path for line, path in headings if line < first]
    return ([(first, before[-1])] if before else []) + [(line, path) for line, path in headings if first <= line <= last]


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _cut(excerpt: Excerpt, budget: int) -> None:
    """Whole lines up to `budget` bytes (the first line cut short when even it does not fit)."""
    kept: list[str] = []
    used = 0
    for line in excerpt.lines:
        cost = _size(line) + (1 if kept else 0)
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    if not kept and excerpt.lines:
        kept = [excerpt.lines[0].encode("utf-8", "surrogatepass")[:budget].decode("utf-8", "ignore")]
        excerpt.line_cut = True
    excerpt.lines = kept
    excerpt.end_line = excerpt.start_line + max(len(kept), 1) - 1
    excerpt.truncated = True
    excerpt.parts = [part for part in excerpt.parts if part[0] <= excerpt.end_line]
    excerpt.headings = [h for h in excerpt.headings if h[0] <= excerpt.end_line]
