"""Finding the files to index: recursive, symlinks not followed unless asked, every skipped file
reported with its reason.

What is left out: hidden files and folders (each reported as `Hidden`, which a `!` line brings
back); what ignore files say (`.gitignore`, and
`.oboyuignore` in the same syntax, deeper files overriding, `!` bringing back), and the user's
`exclude` setting; and junk folders (dependencies, build output, caches: `node_modules`,
`vendor`, `build`, ...) where no ignore file speaks of them, each reported. A folder the user names
is never left out: the rules apply below it."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from oboyu.config import settings
from oboyu.documents.decoding import read_regular_file
from oboyu.documents.filetypes import SNIFF_BYTES, file_type_for, sniffed_type, unsupported_reason
from oboyu.documents.patterns import compile_patterns
from oboyu.paths import RESERVED_IN_NAMES, time_stamp

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
JUNK_DIRS = frozenset(
    {
        "node_modules", "__pycache__", "site-packages", "venv", "env", "build", "dist", "target",
        "out", "_build", "htmlcov", "coverage", "bower_components", "vendor", "Pods", "DerivedData",
    }
)  # hidden folders (.git, .venv, .tox, .mypy_cache, ...) are skipped by their leading dot


@dataclass(frozen=True)
class FileEntry:
    path: Path  # absolute
    root: Path
    size: int
    mtime_ns: int
    file_type: str


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


@dataclass(frozen=True)
class JunkFolder(Skipped):
    """A folder of dependencies, build output or caches (`node_modules`, `__pycache__`), left out:
    said apart from the files skipped, as a folder is not a file that failed."""


@dataclass(frozen=True)
class _Linked:
    """A file reached by a symlink of its own, with links followed: walked after the rest, so
    that the file is kept at its real path where the walk reaches it there too."""

    path: Path
    info: os.stat_result


@dataclass(frozen=True)
class Hidden(Skipped):
    """A hidden file or folder, left out as most tools do: listed by `index -v`, not counted as
    skipped (every run would count a folder's `.git` again)."""

    reason: str = "hidden (its name starts with a dot); a `!NAME` line in .oboyuignore brings it back"


@dataclass(frozen=True)
class IgnoredFolder(Hidden):
    """A folder an ignore rule leaves out although a `!` line names something inside it: a file
    inside an ignored folder cannot be brought back (git's rule too), and -v says so (a user
    trial's `drafts/` then `!drafts/keep.md` left keep.md out without a word)."""


@dataclass(frozen=True)
class NotFollowed(Hidden):
    """A symlink, not followed unless asked: listed by `index -v` as a hidden entry is, not counted."""

    reason: str = "a symlink (`--follow-symlinks` follows it)"


OBOYU_IGNORE = ".oboyuignore"
IGNORE_FILES = (".gitignore", OBOYU_IGNORE)  # read in this order: .oboyuignore has the last word
JUNK_REASON = "junk folder (dependencies, build output or caches); a `!{name}/` line in .oboyuignore brings it back"


@functools.lru_cache(maxsize=4)
def _exclude_spec(patterns: tuple[str, ...], source: str) -> pathspec.GitIgnoreSpec:
    """The `exclude` setting compiled once a process (a bad entry is warned of once, not at
    every root and every `--watch` update)."""
    return compile_patterns(list(patterns), f"the exclude setting in {source}", "entry")


class _IgnoreRules:
    """The ignore files from the root down to one folder; deeper files override."""

    def __init__(self, layers: tuple[tuple[Path, pathspec.GitIgnoreSpec, bool], ...] = ()):
        self.layers = layers  # (folder, rules, whether they are a .oboyuignore's)

    def descend(self, folder: Path) -> _IgnoreRules:
        layers = self.layers
        for name in IGNORE_FILES:
            try:
                lines = (folder / name).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            layers += ((folder, compile_patterns(lines, str(folder / name)), name == OBOYU_IGNORE),)
        return _IgnoreRules(layers)

    @classmethod
    def at(cls, root: Path) -> _IgnoreRules:
        """The rules in force at `root`: the user's `exclude` setting, then the ignore files above
        it inside its git repository, if any, then its own."""
        rules = cls(((root, _exclude_spec(settings().exclude, str(settings().path)), False),))
        parents = []
        for folder in root.parents:
            parents.append(folder)
            if (folder / ".git").exists():
                break
        else:
            parents = []
        for folder in reversed(parents):
            rules = rules.descend(folder)
        return rules.descend(root)

    def verdict(self, path: Path, is_dir: bool, oboyu_only: bool = False) -> bool | None:
        """True: ignored; False: brought back by a `!` line; None: no rule speaks of it. With
        `oboyu_only`, what .oboyuignore files say: a .gitignore's `!.github/` speaks to git."""
        for base, spec, oboyu in reversed(self.layers):
            if oboyu_only and not oboyu:
                continue
            try:
                rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            except ValueError:  # a layer above a folder reached through a symlink
                continue
            result = _folder_check(spec, rel) if is_dir else spec.check_file(rel).include
            if result is not None:
                return result
        return None

    def lines_inside(self, folder: Path) -> list[str]:
        """The `!` lines that name something inside `folder`, as written (`!drafts/keep.md`)."""
        found = []
        for base, spec, _ in self.layers:
            try:
                rel = folder.relative_to(base).as_posix()
            except ValueError:
                continue
            for pattern in spec.patterns:
                line = str(getattr(pattern, "pattern", ""))
                target = line[1:].lstrip("/")
                if pattern.include is False and target.startswith((rel + "/", f"**/{folder.name}/")):
                    found.append(line)
        return found


def _folder_check(spec: pathspec.GitIgnoreSpec, rel: str) -> bool | None:
    """A folder's verdict (`rel` ends with `/`), as git gives it: `sub/**` names what is inside
    `sub`, never `sub` itself, so `!sub/keep.md` after it brings that file back (pathspec matches
    `sub/` too; a user trial's folder was left out whole). Only where a `!` line names something
    inside it: `build/**` alone still leaves `build` out whole, unwalked and unsaid."""
    name = rel.rstrip("/").rpartition("/")[2]
    if not any(p.include is False and str(getattr(p, "pattern", ""))[1:].lstrip("/").startswith((rel, f"**/{name}/"))
               for p in spec.patterns):
        return spec.check_file(rel).include
    patterns = list(spec.patterns)
    while True:
        found = type(spec)(patterns).check_file(rel)
        if found.include is None or found.index is None:
            return found.include
        pattern = patterns[found.index]
        if not str(getattr(pattern, "pattern", "")).lstrip("!").rstrip("/").endswith("/**"):
            return found.include
        parent = rel.rstrip("/").rpartition("/")[0]
        if parent and pattern.match_file(parent + "/") is not None:
            return found.include  # inside the folder the pattern names: git ignores it too
        del patterns[found.index]


def crawl(
    roots: list[Path], follow_symlinks: bool = False, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[FileEntry | Skipped]:
    """Yield the indexable files under `roots` and the files skipped, with reasons."""
    for root in roots:
        root = Path(os.path.abspath(root))
        try:
            info = root.stat()
        except OSError as exc:
            yield Skipped(root, f"cannot read: {exc.strerror or exc}")
            continue
        if stat.S_ISDIR(info.st_mode):
            rules = _IgnoreRules.at(root)
            yield from _walk(root, root, rules, follow_symlinks, max_bytes, set(), set())
        else:
            yield _check_file(root, root, info, max_bytes)  # a file given by name is its own root


def crawl_part(root: Path, part: Path, follow_symlinks: bool = False,
               max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[FileEntry | Skipped]:
    """Like crawl([root]) but only below `part` (a folder or file inside `root`): the files an
    update of that part must see, under the same rules (.gitignore files from the root down,
    hidden and junk folders). A part that is gone, hidden or ignored yields nothing."""
    root, part = Path(os.path.abspath(root)), Path(os.path.abspath(part))
    if part == root:
        yield from crawl([root], follow_symlinks, max_bytes)
        return
    rules = rules_down_to(root, part, follow_symlinks)
    if rules is None:
        return
    try:
        info = part.stat()
    except OSError:
        return  # gone: the caller drops what the index had there
    if stat.S_ISDIR(info.st_mode):
        yield from _walk(part, root, rules.descend(part), follow_symlinks, max_bytes, set(), set())
    else:
        yield _check_file(part, root, info, max_bytes)


def rules_down_to(root: Path, part: Path, follow_symlinks: bool = False) -> _IgnoreRules | None:
    """The rules in force at `part` (inside `root`), or None when a walk of `root` never reaches
    it: it, or a folder on the way, is hidden, ignored or junk."""
    rules = _IgnoreRules.at(root)
    folder = root
    for name in part.relative_to(root).parts:
        path = folder / name
        try:
            if path.is_symlink() and not follow_symlinks:
                return None
            is_dir = path.is_dir()
        except OSError:
            return None
        if _left_out(name, path, rules, is_dir):
            return None
        if path != part:
            rules = rules.descend(path)
        folder = path
    return rules


def reaches(root: Path, path: Path, follow_symlinks: bool = False) -> bool:
    """Whether a walk of `root` reaches `path` (inside it)."""
    root, path = Path(os.path.abspath(root)), Path(os.path.abspath(path))
    return path == root or rules_down_to(root, path, follow_symlinks) is not None


def _is_junk(name: str) -> bool:
    return name in JUNK_DIRS or name.endswith(".egg-info")


def _left_out(name: str, path: Path, rules: _IgnoreRules, is_dir: bool) -> Skipped | bool:
    """What a walk passes by: hidden entries no `!` line of a .oboyuignore brings back (never an
    ignore file itself), what an ignore rule ignores, and junk folders no rule speaks of. False:
    walked; True: left out unsaid (an ignore file, an ignore rule's choice); else what to say."""
    verdict = rules.verdict(path, is_dir)
    if name.startswith("."):
        if name in IGNORE_FILES or rules.verdict(path, is_dir, oboyu_only=True) is False:
            return name in IGNORE_FILES
        return True if verdict else Hidden(path)
    if verdict and is_dir and (lines := rules.lines_inside(path)):
        return IgnoredFolder(path, f"ignored by an ignore rule, so `{lines[0]}` cannot bring back what is inside it; a "
                                   f"rule for the folder's files (`{name}/*`) rather than the folder lets that line work")
    if verdict or not (is_dir and verdict is None and _is_junk(name)):
        return bool(verdict)
    return JunkFolder(path, JUNK_REASON.format(name=name))  # said, with how to bring it back


@dataclass(frozen=True)
class _Descend:
    """A folder to walk next, where it stands in its parent's order."""

    folder: Path
    rules: _IgnoreRules


def _walk(
    folder: Path, root: Path, rules: _IgnoreRules, follow: bool, max_bytes: int,
    seen_dirs: set[tuple[int, int]], seen_files: set[tuple[int, int]],
) -> Iterator[FileEntry | Skipped]:
    """Every file under `folder`, depth first in name order, with a stack of the open folders
    rather than recursion: a tree thousands of folders deep is walked like any other."""
    stack = [_folder_items(folder, root, rules, follow, max_bytes, seen_dirs, seen_files)]
    linked: list[_Linked] = []
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif isinstance(item, _Descend):
            stack.append(_folder_items(item.folder, root, item.rules, follow, max_bytes, seen_dirs, seen_files))
        elif isinstance(item, _Linked):
            linked.append(item)
        else:
            yield item
    for link in linked:  # the files that were reached at their own path are kept there
        key = (link.info.st_dev, link.info.st_ino)
        if key in seen_files:
            yield Skipped(link.path, "same file as another path (symlink)")
            continue
        seen_files.add(key)
        yield _check_file(link.path, root, link.info, max_bytes)


def _folder_items(
    folder: Path, root: Path, rules: _IgnoreRules, follow: bool, max_bytes: int,
    seen_dirs: set[tuple[int, int]], seen_files: set[tuple[int, int]],
) -> Iterator[FileEntry | Skipped | _Descend | _Linked]:
    """One folder's files, what it skips, and its subfolders to walk, in name order."""
    try:
        folder_stat = folder.stat()
        key = (folder_stat.st_dev, folder_stat.st_ino)
        if key in seen_dirs:  # a symlink loop, or a folder linked from elsewhere in the tree
            yield Skipped(folder, "folder already visited through another path (symlink)")
            return
        seen_dirs.add(key)
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        yield Skipped(folder, f"cannot read folder: {exc.strerror or exc}")
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            is_link = entry.is_symlink()
            if is_link and not follow:
                yield NotFollowed(path)  # symlinks are not followed unless asked
                continue
            is_dir = entry.is_dir()  # follows the link when we were asked to
        except OSError as exc:
            yield Skipped(path, f"cannot read: {exc.strerror or exc}")
            continue
        left_out = _left_out(entry.name, path, rules, is_dir)
        if left_out:
            if isinstance(left_out, Skipped):
                yield left_out
            continue
        if is_dir:
            yield _Descend(path, rules.descend(path))
            continue
        try:
            info = entry.stat()
        except OSError as exc:
            yield Skipped(path, "broken symlink" if is_link else f"cannot read: {exc.strerror or exc}")
            continue
        if is_link:
            yield _Linked(path, info)
            continue
        if follow:  # with links followed, one file may be reached by several paths
            key = (info.st_dev, info.st_ino)
            if key in seen_files:
                yield Skipped(path, "same file as another path (symlink)")
                continue
            seen_files.add(key)
        yield _check_file(path, root, info, max_bytes)


def _check_file(path: Path, root: Path, info: os.stat_result, max_bytes: int) -> FileEntry | Skipped:
    if not stat.S_ISREG(info.st_mode):
        return Skipped(path, "not a regular file")
    if RESERVED_IN_NAMES.search(str(path)):
        return Skipped(path, "the name holds a private-use character (U+10FD80-U+10FDFF) oboyu keeps for bytes that are not UTF-8")
    file_type = file_type_for(path)
    if file_type is None:
        return Skipped(path, unsupported_reason(path))
    if info.st_size > max_bytes:
        return Skipped(path, size_cap_reason(max_bytes))
    if not path.suffix and file_type == "text":  # README, memo, a mailbox: or a program
        try:
            sample, _ = read_regular_file(path, SNIFF_BYTES - 1)
        except OSError as exc:
            return Skipped(path, f"cannot read: {exc.strerror or exc}")
        file_type = sniffed_type(sample)
        if file_type is None:
            return Skipped(path, "no extension, and not text")
    return FileEntry(path, root, info.st_size, time_stamp(info.st_mtime_ns), file_type)


def size_cap_reason(max_bytes: int) -> str:
    return f"larger than the {max_bytes / (1024 * 1024):g} MB size cap"
