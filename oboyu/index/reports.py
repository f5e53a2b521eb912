"""What an indexing run tells: its progress through the keyword and meaning passes, and what it
did (`IndexStats`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from oboyu.index.records import Root
from oboyu.progress import format_duration
from oboyu.text import counted, visible

if TYPE_CHECKING:  # the cache's module loads the model's, the walk's pathspec: not for a query's reports
    from oboyu.documents.crawl import Skipped
    from oboyu.index.embedding_cache import Lookup


@dataclass
class IndexStats:
    added: int = 0
    changed: int = 0
    removed: int = 0
    renamed: int = 0
    unchanged: int = 0
    chunks: int = 0  # embedded by the model in this run
    reused: int = 0  # vectors taken from the embedding cache
    repeated: int = 0  # chunks whose text another chunk of the run has: embedded once for both
    skipped: list[Skipped] = field(default_factory=list)
    hidden: list[Skipped] = field(default_factory=list)  # left out by their leading dot; listed by -v
    junk: list[Skipped] = field(default_factory=list)  # junk folders left out, named apart from skipped files
    missing_roots: list[Root] = field(default_factory=list)  # folders not found; their rows kept
    seconds: float = 0.0
    stopped: bool = False  # asked to stop before the end; what was stored is complete per file

    def found_skipped(self, items: list[Skipped]) -> None:
        """What the walk skipped: hidden entries apart, said only by -v; junk folders apart."""
        from oboyu.documents.crawl import Hidden, JunkFolder

        for item in items:
            kind = self.hidden if isinstance(item, Hidden) else self.junk if isinstance(item, JunkFolder) else self.skipped
            kind.append(item)

    def count_embedded(self, lookup: Lookup) -> None:
        """A group of the meaning pass: its texts embedded, found in the cache, or repeated."""
        self.chunks += len(lookup.missing)
        self.reused += lookup.cached
        self.repeated += lookup.repeated

    def found_nothing(self) -> bool:
        """No file at all: an empty folder, or every file hidden or ignored."""
        return not (self.added or self.changed or self.removed or self.renamed or self.unchanged or self.skipped
                    or self.missing_roots or self.stopped)

    def summary(self) -> str:
        line = (
            f"indexed in {format_duration(self.seconds)}: {self.added:,} added, {self.changed:,} changed, "
            f"{self.removed:,} removed, {self.renamed:,} renamed, {self.unchanged:,} unchanged, {len(self.skipped):,} skipped; "
            f"{counted(self.chunks, 'chunk')} embedded, {self.reused:,} reused from the cache"
        ) + (f", {self.repeated:,} the same text as another" if self.repeated else "")
        return line + (" (stopped early)" if self.stopped else "")


FOUND_NOTHING = ("no file found to index: the folder is empty, or each file is hidden, in a junk folder or left out by "
                 "an ignore file (.oboyuignore, .gitignore); `oboyu index -v` lists the hidden and junk ones")
SLOW_FILE_SECONDS = 2.0  # a file the reader is on this long is named on the progress line
NAME_CHARS = 40  # of its name, so that the line stays one terminal line


@dataclass(frozen=True)
class InHand:
    """The file the reader is on, and since when (`time.perf_counter`): one large file kept the
    line at "reading 0/1 files · 0 chunks" for 6 to 8 s (8 MB of text), as if nothing moved."""

    path: Path
    size: int
    since: float

    def note(self, now: float) -> str:
        """`notes.txt (8.4 MB) for 6.0s` once it has taken SLOW_FILE_SECONDS, else ''."""
        seconds = now - self.since
        if seconds < SLOW_FILE_SECONDS:
            return ""
        name = visible(self.path.name)
        name = name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"
        size = f"{self.size / 1e6:.1f} MB" if self.size >= 1e6 else f"{self.size / 1e3:.0f} kB"
        return f"{name} ({size}) for {format_duration(seconds)}"


@dataclass
class IndexProgress:
    """A step of either pass: `keywords` (files read, chunks made; keyword search finds them)
    or `meaning` (vectors made for the index's chunks; meaning search reaches them)."""

    files_done: int
    files_total: int
    chunks: int  # read (keywords), embedded (meaning) so far in this pass
    rate: float  # chunks per second
    eta: float | None  # seconds; None while too little is done to tell
    phase: str = "keywords"
    vectors_done: int = 0  # the index's chunks with their vector (meaning)
    vectors_total: int = 0
    in_hand: str = ""  # the file the reader has been on a while (`InHand.note`), keywords only

    @property
    def share(self) -> float:
        """How far the pass is, 0..1."""
        if self.phase == "meaning":
            return self.vectors_done / self.vectors_total if self.vectors_total else 1.0
        return self.files_done / self.files_total if self.files_total else 1.0

    def line(self) -> str:
        if self.phase == "meaning":
            return (
                f"meaning: {meaning_share(self.vectors_done, self.vectors_total)} of passages "
                f"({self.vectors_done:,}/{self.vectors_total:,}) · {self.rate:.1f} chunks/s · {self._eta()}"
            )
        return (
            f"reading {self.files_done:,}/{counted(self.files_total, 'file')} · {counted(self.chunks, 'chunk')} · "
            f"{self.rate:.1f} chunks/s · {self._eta()}"
        ) + (f" · on {self.in_hand}" if self.in_hand else "")

    def _eta(self) -> str:
        return "ETA estimating" if self.eta is None else f"ETA {format_duration(self.eta)}"


def meaning_share(done: int, total: int) -> str:
    """`43%`; never 100% while a passage waits, nor 0% once one has its vector."""
    if not total or done >= total:
        return "100%"
    return f"{min(99, max(1 if done else 0, round(100 * done / total)))}%"
