"""`oboyu mcp`: a Model Context Protocol server so AI assistants can search the index.

Tools: `search`, `read` and `status`; `index` only with `--allow-index`, and only inside folders
already indexed (it updates the index; no tool deletes or changes a file). `read` serves only
files that are in the index and whose real path (symlinks and `..` resolved) lies inside the real
path of their root. The index is held as a LiveIndex (searches from memory; the file opened
briefly, read-only, when it changed), so `oboyu index` can run between calls. The HTTP transport
binds to 127.0.0.1 and refuses other Host and Origin headers (DNS rebinding).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oboyu.api import open_indexer
from oboyu.documents.viewing import read_document
from oboyu.errors import OboyuError
from oboyu.models.embedding import Embedder
from oboyu.models.rerank import Reranker
from oboyu.modes import Mode
from oboyu.paths import is_within
from oboyu.search.filters import make_filters
from oboyu.search.live import LiveIndex

MAX_QUERY_CHARS = 1000
MAX_K = 50
MAX_READ_LINES = 2000
MAX_READ_CHARS = 200_000
MAX_READ_FILE_BYTES = 20 * 1024 * 1024
MAX_HTTP_BODY = 64 * 1024
READ_WAIT_SECONDS = 3.0  # how long a call waits while `oboyu index` writes a batch
MAX_READ_SECONDS = 10.0
_READERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="oboyu-read")


class RefusedError(OboyuError):
    """A request the server will not serve; the message says why."""


@dataclass
class OboyuTools:
    """What the MCP tools do, callable without a server (tests, scripts)."""

    db_path: Path
    embedder: Embedder
    allow_index: bool = False
    reranker: Reranker | None = None
    live: LiveIndex = field(init=False)

    def __post_init__(self) -> None:
        self.live = LiveIndex(self.db_path, self.embedder, self.reranker, read_wait=READ_WAIT_SECONDS)

    def search(self, query: str, mode: str = "hybrid", k: int = 10, path: str | None = None,
               type: str | None = None, since: str | None = None) -> dict[str, Any]:
        if not query.strip():
            raise RefusedError("query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise RefusedError(f"query is longer than {MAX_QUERY_CHARS} characters")
        if not 1 <= k <= MAX_K:
            raise RefusedError(f"k must be between 1 and {MAX_K}")
        filters = make_filters([path] if path else [], type, since)
        results = self.live.search(query, Mode.named(mode), k, filters).results
        # a file indexed through a symlink that leaves its folder is not read; nor is its text shown
        roots = self.live.file_roots()
        results = [r for r in results if self._inside_its_root(r.path, roots.get(r.path))]
        hits = [
            {"path": r.path, "start_line": r.start_line, "end_line": r.end_line, "heading": r.heading,
             "location": r.part or None, "snippet": r.snippet, "confidence": r.confidence, "weak": r.weak}
            for r in results
        ]
        # every result weak: the folder most likely does not hold the answer, and the assistant should say so
        return {"no_good_match": all(r.weak for r in results), "results": hits}

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> dict[str, Any]:
        real = self._indexed_real_path(path)
        # read in a worker with a time cap: a file on a hung network drive costs a worker, not the server
        reading = _READERS.submit(read_document, real, MAX_READ_FILE_BYTES, follow_symlinks=False)
        try:
            shown = reading.result(timeout=MAX_READ_SECONDS)
            lines = shown.lines
        except TimeoutError:
            raise RefusedError(f"reading {real} took over {MAX_READ_SECONDS:g} s (a slow or hung drive?)") from None
        except OboyuError as exc:
            raise RefusedError(str(exc)) from exc
        first = max(1, start_line or 1)
        last = min(len(lines), end_line or len(lines))
        if last < first and lines:
            raise RefusedError(f"empty line range {first}-{last} (the file has {len(lines)} lines)")
        truncated = last - first + 1 > MAX_READ_LINES
        last = min(last, first + MAX_READ_LINES - 1)
        text = "\n".join(lines[first - 1 : last])
        if len(text) > MAX_READ_CHARS:
            text, truncated = text[:MAX_READ_CHARS], True
        # where each page, slide, sheet row or chapter starts in the lines returned, and the part
        # the first line is in (a range from mid-page says which page it is on)
        enclosing = [part for part in shown.parts if part[0] < first][-1:]
        inside = [part for part in shown.parts if first <= part[0] <= last]
        parts = [{"line": line, "location": label} for line, label in enclosing + inside]
        return {"path": str(Path(os.path.abspath(path))), "start_line": first, "end_line": last,
                "total_lines": len(lines), "truncated": truncated, "text": text, "parts": parts}

    def status(self) -> dict[str, Any]:
        summary = self.live.summary()
        roots = [
            {"path": r.path, "documents": r.documents, "chunks": r.chunks,
             "last_update": str(r.last_update) if r.last_update else None}
            for r in summary.roots
        ]
        updates = [r["last_update"] for r in roots if r["last_update"]]
        return {"db": str(self.db_path), "model": summary.model, "documents": summary.documents,
                "chunks": summary.chunks, "embedded_chunks": summary.embedded, "roots": roots, "last_update": max(updates) if updates else None}

    def index(self, path: str) -> dict[str, Any]:
        if not self.allow_index:
            raise RefusedError("indexing is off (start the server with --allow-index)")
        target = self._checked_path(path)
        with self.live.reading() as store:
            roots = [os.path.realpath(r.path) for r in store.roots()]
        real = os.path.realpath(target)
        root = next((r for r in roots if is_within(real, r)), None)
        if root is None:
            raise RefusedError("only folders inside an indexed root can be indexed from here")
        if any(part.startswith(".") for part in Path(real).relative_to(root).parts):
            raise RefusedError("hidden folders are not indexed")
        # the writer is taken for each batch only: this server's searches and other processes read meanwhile
        stats = open_indexer(self.live, self.embedder).index([Path(target)])
        return {"added": stats.added, "changed": stats.changed, "removed": stats.removed, "renamed": stats.renamed,
                "unchanged": stats.unchanged, "skipped": len(stats.skipped), "chunks": stats.chunks,
                "reused": stats.reused}

    @staticmethod
    def _checked_path(path: str) -> str:
        if not path or "\x00" in path:
            raise RefusedError("invalid path")
        if not os.path.isabs(path):
            raise RefusedError("path must be absolute, as search returns it")
        return os.path.abspath(path)

    def _indexed_real_path(self, path: str) -> str:
        candidate = self._checked_path(path)
        root = self.live.file_roots().get(candidate)
        if root is None:
            raise RefusedError("not an indexed file")
        if not self._inside_its_root(candidate, root):
            raise RefusedError("file resolves outside its indexed folder")
        return os.path.realpath(candidate)

    @staticmethod
    def _inside_its_root(path: str, root: str | None) -> bool:
        """Whether the file's real path (symlinks and `..` resolved) lies inside its root's."""
        return root is not None and is_within(os.path.realpath(path), os.path.realpath(root))


def build_server(tools: OboyuTools):
    """The MCP server exposing `tools`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from oboyu import __version__

    server = MCPServer(
        "oboyu",
        version=__version__,
        instructions="Search the user's local documents (Japanese and English) and read indexed files.",
    )

    def call(fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OboyuError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description="Search indexed documents; one result per file: path, line range, heading, location "
                 "(page, slide, rows, ... in a PDF, Office file or book), snippet, confidence (the estimated "
                 "probability that it answers the query) and weak (under the line of a good match). no_good_match: "
                 "every result is weak, so the documents most likely do not hold the answer. mode: hybrid (default), vector (meaning) or keyword (exact words). path: a file pattern "
                 "(as in .gitignore: *.md, drafts/, !drafts/); type: extensions like md,txt; since: date or age like 7d.")
    def search(query: str, mode: str = "hybrid", k: int = 10, path: str | None = None, type: str | None = None,
               since: str | None = None) -> dict[str, Any]:
        return call(tools.search, query, mode, k, path, type, since)

    @server.tool(description="Read an indexed file's text, or lines start_line..end_line of it (1-based, inclusive), "
                 "numbered as search numbers them. A PDF, Office file, mail or book gives its extracted text; "
                 "parts says on which line each page, slide, row or chapter starts.")
    def read(path: str, start_line: int | None = None, end_line: int | None = None) -> dict[str, Any]:
        return call(tools.read, path, start_line, end_line)

    @server.tool(description="Indexed folders, document and chunk counts, model, last update.")
    def status() -> dict[str, Any]:
        return call(tools.status)

    if tools.allow_index:
        @server.tool(description="Update the index for a folder inside an already indexed folder.")
        def index(path: str) -> dict[str, Any]:
            return call(tools.index, path)

    return server


def http_security(port: int):
    """Loopback only: Host must be 127.0.0.1/localhost on our port, Origin the same or absent."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = [f"127.0.0.1:{port}", f"localhost:{port}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )


def serve(tools: OboyuTools, http: bool = False, port: int = 8765) -> None:
    server = build_server(tools)
    if http:
        server.run("streamable-http", host="127.0.0.1", port=port, transport_security=http_security(port),
                   max_request_body_size=MAX_HTTP_BODY)
    else:
        server.run("stdio")
