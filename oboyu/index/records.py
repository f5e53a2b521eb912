"""What the index stores and hands back: documents, chunks, roots and moves, as plain records."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from oboyu.documents.chunking import CONTEXT_CHARS


@dataclass
class DocumentRecord:
    path: str
    root: str
    size: int
    mtime_ns: int
    sha256: str
    encoding: str
    file_type: str
    title: str | None


@dataclass
class ChunkRecord:
    id: str
    ordinal: int
    heading: str
    start_line: int
    end_line: int
    start_char: int
    end_char: int
    text: str
    terms: dict[str, int] = field(default_factory=dict)  # keyword index terms and counts
    page_start: int | None = None  # the parts the chunk spans: pages, slides, rows, ... (`documents.extract.PART_UNITS`)
    page_end: int | None = None


@dataclass(frozen=True)
class Move:
    """A file renamed or moved with its content unchanged."""

    old_path: str
    new_path: str
    root: str
    size: int
    mtime_ns: int


@dataclass
class StoredFile:
    size: int
    mtime_ns: int
    sha256: str


# how the indexer words a failure that may pass (preparing.py, isolation.py, crawl.size_cap_reason);
# "cannot read PDF: ..." (a corrupt file, a reader's verdict) is not one of them
TRIED_AGAIN = ("cannot read: ", "cannot read its words: ", "cannot extract text: ", "cannot be stored: ", "larger than the ")


@dataclass
class KnownSkip:
    """A file whose content cannot be indexed (encrypted, corrupt, binary), as it was when tried:
    passed over until its size or modification time changes, unless its failure may pass."""

    size: int
    mtime_ns: int
    reason: str

    @property
    def tried_again(self) -> bool:
        """A failure that may pass without the file changing (a permission, a reader's bug that
        an upgrade fixes): tried each run, and remembered meanwhile so that `status` lists it."""
        return self.reason.startswith(TRIED_AGAIN)


@dataclass
class SearchHit:
    """A chunk's display fields."""

    chunk_id: str
    path: str
    title: str | None
    heading: str
    start_line: int
    end_line: int
    text: str
    page_start: int | None = None  # the parts (pages, slides, rows, ...) of the passage
    page_end: int | None = None
    file_type: str = ""
    content: str = ""  # the file's content hash: copies of a file share it ("" when unknown)


@dataclass(frozen=True)
class Root:
    """A folder (or file) the person asked to index; `oboyu index` with no path updates them all."""

    path: str
    name: str
    follow_symlinks: bool = False
    description: str | None = None  # what the folder holds, in the person's words (`oboyu describe`)


@dataclass(frozen=True)
class RootSummary:
    """An indexed folder with what the index holds of it."""

    root: Root
    documents: int
    chunks: int
    last_update: datetime | None  # the newest file's indexing, else when the folder was added
    left_out: tuple[str, ...] = ()  # junk folders its last whole walk left out

    @property
    def path(self) -> str:
        return self.root.path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def description(self) -> str | None:
        return self.root.description


def chunk_id(path: str, start_char: int, end_char: int, text: str) -> str:
    """A chunk's id: stable while its file's path and text are."""
    key = f"{path}\0{start_char}\0{end_char}\0{text}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(key, digest_size=8).hexdigest()


def keyword_text(title: str | None, heading: str, text: str) -> str:
    """What the keyword index reads for a chunk: title, heading path and text."""
    return "\n".join(part for part in (title, heading, text) if part)


def embedding_text(title: str | None, heading: str, text: str) -> str:
    """What the model reads for a chunk: its document's title and its heading path (cut to
    CONTEXT_CHARS, which chunk sizes leave room for), then its text."""
    context = heading
    if title and not context.startswith(title):
        context = f"{title} > {context}" if context else title
    if len(context) > CONTEXT_CHARS:
        context = context[: CONTEXT_CHARS - 1] + "…"
    return f"{context}\n{text}" if context else text
