"""What an update changes: the disk under the parts asked for, compared with what the index
holds there. Size and modification time are trusted, so an unchanged file is never opened; a file
whose stat changed is hashed only when asked (`status --pending`) or at write time. A new file
with the content of a file that went away is a rename or move: its rows follow it."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from oboyu.documents.crawl import FileEntry, Skipped, crawl_part
from oboyu.documents.decoding import read_regular_file
from oboyu.documents.filetypes import file_type_for
from oboyu.index.records import KnownSkip, Move, Root, StoredFile
from oboyu.index.store import Store
from oboyu.paths import stored_path


@dataclass(frozen=True)
class Part:
    """A root, or a folder or file inside it, to compare."""

    root: Root
    path: Path


@dataclass
class Plan:
    """What an update would change; computing it writes nothing."""

    added: list[FileEntry] = field(default_factory=list)
    changed: list[tuple[FileEntry, StoredFile]] = field(default_factory=list)  # stat differs; maybe not content
    removed: list[str] = field(default_factory=list)
    renamed: list[Move] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    missing_roots: list[Root] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)  # remembered as unindexable, and gone or changed
    # what the walk could not take that a person may mend (a FIFO, an unreadable file or folder, a
    # file over the size cap): (path, root, reason), remembered so that `status` lists them too
    walk_problems: list[tuple[str, str, str]] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.added or self.changed or self.removed or self.renamed)


def sha256_of(path: Path, max_bytes: int) -> str | None:
    """The content hash of a file, or None when it cannot be read or is over the cap."""
    try:
        data, _ = read_regular_file(path, max_bytes)
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest() if len(data) <= max_bytes else None


def stored_files(store: Store, parts: list[Part]) -> dict[str, StoredFile]:
    """What the index holds under the parts, by path."""
    stored: dict[str, StoredFile] = {}
    for part in parts:
        stored.update(store.files_under(stored_path(part.path), part.root.path))
    return stored


# the walk's reasons worth listing in `status`: not an unsupported type, a junk folder or a
# symlink's second path, which are choices, not problems
WALK_PROBLEMS = ("cannot read", "broken symlink", "not a regular file", "larger than the ", "the name holds ")


def known_skips(store: Store, parts: list[Part]) -> dict[str, KnownSkip]:
    """The files under the parts whose content could not be indexed when last tried, by path."""
    known: dict[str, KnownSkip] = {}
    for part in parts:
        known.update(store.skipped_under(stored_path(part.path), part.root.path))
    return known


@dataclass(frozen=True)
class OwnFiles:
    """oboyu's own files, never indexed wherever a folder holds them: the index, its lock,
    write-ahead log and search arrays (`index.duckdb.*`), and the cache of models and embeddings
    (a user trial kept `--db ~/Documents/oboyu.duckdb` and indexed ~/Documents)."""

    index: str
    prefixes: tuple[str, ...]
    folder: str  # the index's folder, symlinks resolved: reached by another path, it is the same

    @classmethod
    def of(cls, index: Path) -> OwnFiles:
        from oboyu.paths import cache_dir

        path = stored_path(os.path.abspath(index))
        return cls(path, (path + ".", stored_path(os.path.abspath(cache_dir())) + os.sep),
                   os.path.realpath(os.path.dirname(os.path.abspath(index))))

    def hold(self, path: str) -> bool:
        if path == self.index or path.startswith(self.prefixes):
            return True
        # the index's own name, under another path (a symlink to its folder): the folder decides
        name = os.path.basename(self.index)
        if name not in path:  # nearly every file a walk finds
            return False
        parts = path.split(os.sep)
        at = next((i for i, part in enumerate(parts) if part == name or part.startswith(name + ".")), None)
        return at is not None and os.path.realpath(os.sep.join(parts[:at]) or os.sep) == self.folder


def compare(stored: dict[str, StoredFile], parts: list[Part], max_bytes: int, full: bool = False,
            hash_changed: bool = False, known: dict[str, KnownSkip] | None = None, own: OwnFiles | None = None) -> Plan:
    """The plan for `parts`: with `full` every file counts as changed; with `hash_changed` a file
    whose stat changed is hashed, and counts as unchanged when its content did not. A file `known`
    to be unindexable is skipped again while its stat is the same (with `full` it is tried).
    oboyu's `own` files are passed by, unsaid."""
    known = known or {}
    plan = Plan()
    found: dict[str, FileEntry] = {}  # by path, so overlapping parts list a file once
    skipped: dict[str, Skipped] = {}
    for part in parts:
        for item in crawl_part(Path(part.root.path), part.path, part.root.follow_symlinks, max_bytes):
            if own is not None and own.hold(stored_path(item.path)):
                continue
            if isinstance(item, Skipped):
                if stored_path(item.path) not in skipped and item.reason.startswith(WALK_PROBLEMS):
                    plan.walk_problems.append((stored_path(item.path), part.root.path, item.reason))
                skipped.setdefault(stored_path(item.path), item)
            else:
                found.setdefault(stored_path(item.path), item)
    plan.skipped = list(skipped.values())
    # what the walk could not read (a folder or file whose permissions changed, a disk error) may
    # read again: its indexed files are kept as they are, not removed
    folders = tuple(path + os.sep for path, item in skipped.items() if item.reason.startswith("cannot read folder"))
    files = {path for path, item in skipped.items() if item.reason.startswith("cannot read")}
    kept = [path for path in stored if path not in found and (path in files or path.startswith(folders))]
    plan.unchanged += len(kept)
    gone = {path: stored[path] for path in stored if path not in found and path not in kept}
    for path, entry in found.items():
        previous = stored.get(path)
        skip = known.get(path)
        if (previous is None and skip is not None and not full and not skip.tried_again
                and (skip.size, skip.mtime_ns) == (entry.size, entry.mtime_ns)):
            plan.skipped.append(Skipped(entry.path, skip.reason))
        elif previous is None:
            plan.added.append(entry)
        elif full:
            plan.changed.append((entry, previous))
        elif (previous.size, previous.mtime_ns) == (entry.size, entry.mtime_ns):
            plan.unchanged += 1
        elif hash_changed and sha256_of(entry.path, max_bytes) == previous.sha256:
            plan.unchanged += 1  # touched, not changed
        else:
            plan.changed.append((entry, previous))
    if gone and plan.added and not full:
        _find_renames(plan, gone, max_bytes)
    plan.removed = sorted(gone)
    problems = {path: reason for path, _, reason in plan.walk_problems}

    def forgotten(path: str, skip: KnownSkip) -> bool:
        """Gone (or a walk's problem no more, or another), or changed since it was tried."""
        if path not in found:
            return problems.get(path) != skip.reason
        return (skip.size, skip.mtime_ns) != (found[path].size, found[path].mtime_ns)

    plan.forgotten = sorted(path for path, skip in known.items() if forgotten(path, skip))
    # remembered already, as they are: nothing to write
    plan.walk_problems = [p for p in plan.walk_problems if p[0] not in known or known[p[0]].reason != p[2]]
    return plan


def _find_renames(plan: Plan, gone: dict[str, StoredFile], max_bytes: int) -> None:
    """New files with the content of files that went away; hashed only when sizes match."""
    by_content: dict[tuple[int, str, str | None], list[str]] = {}
    sizes = {info.size for info in gone.values()}
    for path, info in gone.items():
        by_content.setdefault((info.size, info.sha256, file_type_for(Path(path))), []).append(path)
    still_new = []
    for entry in plan.added:
        match = None
        if entry.size in sizes:
            sha = sha256_of(entry.path, max_bytes)
            candidates = by_content.get((entry.size, sha or "", entry.file_type))
            if candidates:
                match = candidates.pop()
        if match is None:
            still_new.append(entry)
        else:
            del gone[match]
            plan.renamed.append(Move(match, stored_path(entry.path), str(entry.root), entry.size, entry.mtime_ns))
    plan.added = still_new
