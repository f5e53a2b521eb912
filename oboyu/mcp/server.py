"""`oboyu mcp`: a Model Context Protocol server so AI assistants can search the index.

Tools: `search`, `read` and `status`; `index` only with `--allow-index`, and only inside folders
already indexed (it updates the index; no tool deletes or changes a file). `read` serves only
files that are in the index and whose real path (symlinks and `..` resolved) lies inside the real
path of their root. The index is held as a LiveIndex (searches from memory; the file opened
briefly, read-only, when it changed), so `oboyu index` can run between calls. The HTTP transport
binds to 127.0.0.1 and refuses other Host and Origin headers (DNS rebinding).

Every call answers within its time cap (CALL_SECONDS) with a result or an `isError` reply of one
line that says what to do: wrong, missing or unknown arguments, lone surrogates, strings past
their length cap and path patterns with too many wildcards are refused before any work is done.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

from pydantic import BeforeValidator, Field

from oboyu import retrieve
from oboyu.api import open_indexer
from oboyu.documents.viewing import read_document
from oboyu.errors import OboyuError
from oboyu.mcp.stdio_wire import answer_unreadable_lines, protocol_stdin, with_valid_strings
from oboyu.models.embedding import Embedder
from oboyu.models.rerank import Reranker
from oboyu.modes import MODE_NAMES, Mode
from oboyu.paths import disk_path, is_within, stored_path
from oboyu.search.filters import make_filters
from oboyu.search.live import LiveIndex
from oboyu.search.query import MAX_QUERY_CHARS
from oboyu.text import valid_text

MAX_K = 50


def _whole(value: object) -> object:
    """JSON Schema's integer is any number without a fraction: a client's 5.0 is 5 (a user trial's
    was refused); "5" and true stay refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# a JSON integer, no other type read as one (true was k=1, "5" was 5): what a caller meant is not guessed
Count = Annotated[int, Field(strict=True), BeforeValidator(_whole)]
# the modes listed in the tool's schema, so a client can offer them; a wrong one still gets
# `Mode.named`'s one line that lists them, not a validator's dump
ModeName = Annotated[str, Field(json_schema_extra={"enum": list(MODE_NAMES)})]
# what one `read` returns at most: an assistant's tool output is capped (Claude Code's at 25,000
# tokens by default), and the structured result repeats the text; a user trial got 116,000
# characters of one file at 2,000 lines and 200,000 characters. `truncated` and `end_line` say
# where to go on.
MAX_READ_LINES = 400
MAX_READ_CHARS = 12_000
MAX_HTTP_BODY = 64 * 1024
READ_WAIT_SECONDS = 3.0  # how long a call waits while `oboyu index` writes a batch
MAX_READ_SECONDS = 10.0
MAX_ARG_CHARS = 4096  # mode, path, type, since: a longer one is no mode, pattern, type list or date
MAX_ERROR_CHARS = 500
# each call's time cap in seconds, under the minute after which clients commonly give up; a call
# that runs past it is answered and left to finish in the background (an index run goes on)
CALL_SECONDS = {"search": 30.0, "read": 15.0, "status": 15.0, "index": 45.0}
USAGE = {
    "search": "search takes query (text) and optionally mode (hybrid, vector or keyword), k (1-50), "
              "path (a .gitignore pattern), type (extensions like md,txt) and since (a date or an age like 7d)",
    "read": "read takes path (absolute, as search returns it) and optionally start_line and end_line (from 1)",
    "status": "status takes no arguments",
    "index": "index takes path (an absolute folder inside an indexed folder)",
}
SLOW = {  # what to do when a call ran past its time cap
    "search": "try again in a moment (a large index may still be loading), or narrow it with path or type",
    "read": "try again in a moment (the index may be busy, or the file's drive slow)",
    "status": "try again in a moment (the index may be busy)",
}
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
    _indexing: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.live = LiveIndex(self.db_path, self.embedder, self.reranker, read_wait=READ_WAIT_SECONDS)

    def search(self, query: str, mode: str = "hybrid", k: int = 10, path: str | None = None,
               type: str | None = None, since: str | None = None) -> dict[str, Any]:
        self._index_made()
        if not query.strip():
            raise RefusedError("query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise RefusedError(f"query is longer than {MAX_QUERY_CHARS:,} characters")
        if not 1 <= k <= MAX_K:
            raise RefusedError(f"k must be between 1 and {MAX_K}")
        for name, value in (("mode", mode), ("path", path), ("type", type), ("since", since)):
            if value is not None and len(value) > MAX_ARG_CHARS:
                raise RefusedError(f"{name} is longer than {MAX_ARG_CHARS} characters")
        filters = make_filters([path] if path else [], type or None, since or None)  # "": not given, as clients send it
        results = self.live.search(query, Mode.named(mode), k, filters).results
        if not results:  # nothing ranked at all: not that the documents lack the answer (a user trial)
            if not filters.is_empty():
                holds = " and holds the query's words" if Mode.named(mode) is Mode.KEYWORD else ""
                raise RefusedError(f"no indexed file passes the filters (path, type, since){holds}; loosen or drop them")
            if Mode.named(mode) is Mode.KEYWORD:
                raise RefusedError("keyword search: no passage holds the query's words; hybrid also finds by meaning")
            raise RefusedError("the index holds no passage that search reaches yet; index a folder first")
        # a file indexed through a symlink that leaves its folder is not read; nor is its text shown
        roots = self.live.file_roots()
        results = [r for r in results if retrieve.inside_its_root(r.path, roots.get(r.path))]
        hits = [
            {"path": r.path, "start_line": r.start_line, "end_line": r.end_line, "heading": r.heading,
             "location": r.part or None, "snippet": r.snippet, "confidence": r.confidence, "weak": r.weak,
             "likely": None if r.across_languages else r.likely, "across_languages": r.across_languages, "folder": r.folder,
             "folder_description": r.folder_description}
            for r in results
        ]
        # every result weak: the folder most likely does not hold the answer, and the assistant should say so
        return {"no_good_match": all(r.weak for r in results),
                "across_languages": any(r.across_languages for r in results), "results": hits}

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> dict[str, Any]:
        for name, value in (("start_line", start_line), ("end_line", end_line)):
            if value is not None and value < 1:
                raise RefusedError(f"{name} must be 1 or more (lines are numbered from 1, as search numbers them)")
        if start_line is not None and end_line is not None and end_line < start_line:
            raise RefusedError(f"end_line {end_line} is before start_line {start_line}")
        self._index_made()
        real = self._indexed_real_path(path)
        # read in a worker with a time cap: a file on a hung network drive costs a worker, not the server
        reading = _READERS.submit(read_document, real, retrieve.MAX_FILE_BYTES, follow_symlinks=False)
        try:
            shown = reading.result(timeout=MAX_READ_SECONDS)
            lines = shown.lines
        except TimeoutError:
            raise RefusedError(f"reading {real} took over {MAX_READ_SECONDS:g} s (a slow or hung drive?)") from None
        except OboyuError as exc:
            raise RefusedError(str(exc)) from exc
        first = start_line or 1
        last = min(len(lines), end_line or len(lines))
        if last < first and lines:
            raise RefusedError(f"start_line {first} is past the end: the file has {len(lines)} lines")
        truncated = last - first + 1 > MAX_READ_LINES
        last = min(last, first + MAX_READ_LINES - 1)
        while last > first and sum(len(line) + 1 for line in lines[first - 1 : last]) > MAX_READ_CHARS:
            last, truncated = first + (last - first) // 2, True  # whole lines, so that end_line is true
        text = "\n".join(lines[first - 1 : last])
        if len(text) > MAX_READ_CHARS:  # one line longer than the cap
            text, truncated = text[:MAX_READ_CHARS], True
        # where each page, slide, sheet row or chapter starts in the lines returned
        parts = [{"line": line, "location": label} for line, label in retrieve.lines_around(shown, first, last)]
        return {"path": str(Path(os.path.abspath(path))), "start_line": first, "end_line": last,
                "total_lines": len(lines), "truncated": truncated, "text": text, "parts": parts}

    def status(self) -> dict[str, Any]:
        summary = self.live.summary()
        roots = [
            {"name": r.name, "path": r.path, "description": r.description, "documents": r.documents, "chunks": r.chunks,
             "last_update": str(r.last_update)[:19] if r.last_update else None}  # to the second, as `status` says it
            for r in summary.roots
        ]
        updates = [r["last_update"] for r in roots if r["last_update"]]
        return {"db": str(self.db_path), "model": summary.model, "documents": summary.documents,
                "chunks": summary.chunks, "embedded_chunks": summary.embedded, "roots": roots, "last_update": max(updates) if updates else None}

    def index(self, path: str) -> dict[str, Any]:
        if not self.allow_index:
            raise RefusedError("indexing is off (start the server with --allow-index)")
        self._index_made()
        target = disk_path(self._checked_path(path))
        with self.live.reading() as store:
            roots = [os.path.realpath(disk_path(r.path)) for r in store.roots()]
            real = os.path.realpath(target)
            root = next((r for r in roots if is_within(real, r)), None)
            if root is None:  # first: whether a path outside the indexed folders exists is not said
                raise RefusedError("only folders inside an indexed root can be indexed from here")
            # a typo must not read as "updated, nothing changed" (a user trial); a folder deleted since it
            # was indexed is updated: what the index held there goes
            if not os.path.lexists(target) and not store.con.execute(
                    "SELECT 1 FROM documents WHERE path = ? OR starts_with(path, ?) LIMIT 1",
                    [stored_path(target), stored_path(target.rstrip(os.sep) + os.sep)]).fetchone():
                raise RefusedError("no such file or folder, and the index holds nothing there")
        if any(part.startswith(".") for part in Path(real).relative_to(root).parts):
            raise RefusedError("hidden folders are not indexed")
        # one run at a time: one that ran past its time cap goes on in the background
        if not self._indexing.acquire(blocking=False):
            raise RefusedError("an index run started earlier is still going; call status later to see its counts")
        try:
            # the writer is taken for each batch only: this server's searches and other processes read meanwhile
            stats = open_indexer(self.live, self.embedder).index([Path(target)])
        finally:
            self._indexing.release()
        return {"finished": True, "added": stats.added, "changed": stats.changed, "removed": stats.removed,
                "renamed": stats.renamed, "unchanged": stats.unchanged, "skipped": len(stats.skipped),
                "chunks": stats.chunks, "reused": stats.reused, "repeated": stats.repeated}

    def _index_made(self) -> None:
        """A server may start before its index is made (an assistant set up first): until then each
        tool says what the person has to do, and the server serves the index once it is there."""
        if not self.live.exists():
            raise RefusedError(f"no index at {self.db_path} yet: the person runs `oboyu index FOLDER` "
                               "(with this --db) in a terminal, then asks again")

    @staticmethod
    def _checked_path(path: str) -> str:
        if not path or "\x00" in path:
            raise RefusedError("invalid path (empty, or holding a NUL): give a file's absolute path, as search returns it")
        if len(path) > MAX_ARG_CHARS:
            raise RefusedError(f"path is longer than {MAX_ARG_CHARS} characters")
        if not os.path.isabs(path):
            raise RefusedError("path must be absolute, as search returns it")
        return os.path.abspath(path)

    def _indexed_real_path(self, path: str) -> str:
        candidate = self._checked_path(path)
        try:
            return retrieve.indexed_real_path(candidate, self.live.file_roots().get)
        except OboyuError as exc:
            if str(exc) == retrieve.NOT_INDEXED:
                raise RefusedError(self._not_indexed(disk_path(candidate))) from None
            raise RefusedError(f"file {exc}") from None

    def _not_indexed(self, path: str) -> str:
        """Why `path` is not read, and what to pass instead. Whether it exists is said only inside
        an indexed folder: elsewhere, the client learns nothing of the file system."""
        hint = "read takes a file's path as search returns it"
        try:
            with self.live.reading() as store:
                roots = [disk_path(r.path) for r in store.roots()]
        except OboyuError:  # busy: the plain answer
            roots = []
        if any(is_within(os.path.realpath(path), os.path.realpath(root)) for root in roots):
            if os.path.isdir(path):
                return f"that is a folder; {hint}"
            if not os.path.lexists(path):
                return f"no such file; {hint}"
        return f"not an indexed file; {hint}"


def _wire(value: Any) -> Any:
    """A tool's answer as UTF-8 and the SDK's JSON can hold it: a file name that is not UTF-8
    (its bad bytes as lone surrogates) in the index's form, which `read` takes back."""
    return with_valid_strings(value, lambda text: valid_text(stored_path(text)))


def one_line(message: str) -> str:
    """An error for a client: one line, at most MAX_ERROR_CHARS, valid text."""
    text = " ".join(valid_text(message).split())
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


_JSON_TYPES = {str: "text", bool: "true or false", int: "a number", float: "a number", list: "a list",
               dict: "an object", type(None): "null"}


def _invalid_arguments(error: Any) -> str:
    """A pydantic ValidationError of a tool's arguments, in one line, without the values sent."""
    said = []
    for problem in error.errors():
        name = ".".join(str(part) for part in problem["loc"]) or "arguments"
        if problem["type"] == "missing":
            said.append(f"{name} is missing")
        else:
            message = problem["msg"][:1].lower() + problem["msg"][1:]
            got = _JSON_TYPES.get(type(problem.get("input")), "something else")
            said.append(f"{name}: {message} (got {got})")
    return "; ".join(said)


def build_server(tools: OboyuTools):
    """The MCP server exposing `tools`: each call answers within its time cap, with a result or
    an `isError` reply of one line that says what to do; a bug's traceback goes to the log only."""
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    from oboyu import __version__

    arguments_of: dict[str, set[str]] = {}

    class Server(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            if name not in arguments_of:
                raise ToolError(f"Unknown tool {one_line(name)[:80]!r}; the tools are {', '.join(sorted(arguments_of))}")
            unknown = sorted(set(arguments) - arguments_of[name])
            if unknown:
                said = f"{name} takes no argument {one_line(unknown[0])[:80]!r}" if arguments_of[name] else ""
                raise ToolError(f"Error executing tool {name}: {'; '.join(filter(None, [said, USAGE[name]]))}")
            try:
                return await super().call_tool(name, with_valid_strings(arguments), context)  # a half emoji: U+FFFD
            except UnexpectedToolError as exc:  # a bug: its traceback in the log (MCPServer writes it)
                raise UnexpectedToolError(f"{exc}: it failed inside oboyu; the server's log (stderr) says why") from exc
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    raise ToolError(one_line(f"Error executing tool {name}: {_invalid_arguments(exc.__cause__)}; "
                                             f"{USAGE[name]}")) from exc.__cause__
                raise ToolError(one_line(str(exc))) from exc.__cause__

        async def run_stdio_async(self) -> None:
            from mcp.server.stdio import stdio_server

            async with stdio_server(stdin=cast(Any, protocol_stdin())) as (read_stream, write_stream):
                readable_send, readable = anyio.create_memory_object_stream[Any](0)
                async with anyio.create_task_group() as group:
                    group.start_soon(answer_unreadable_lines, read_stream, readable_send, write_stream)
                    await self._lowlevel_server.run(readable, write_stream,
                                                    self._lowlevel_server.create_initialization_options())
                    group.cancel_scope.cancel()

    server = Server(
        "oboyu",
        version=__version__,
        instructions="Search the user's local documents (Japanese and English) and read indexed files.",
    )
    # a refused call is the client's to read, not lines on stderr each time (a bug is logged still)
    logging.getLogger(MCPServer.__module__).setLevel(logging.WARNING)

    async def capped(name: str, fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        """`fn(*args)` in a worker thread, answered within CALL_SECONDS[name]: past it, the worker
        is left to finish (an index run goes on) and the client told so."""
        seconds = CALL_SECONDS[name]
        with anyio.move_on_after(seconds):
            try:
                return _wire(await anyio.to_thread.run_sync(functools.partial(fn, *args), abandon_on_cancel=True))
            except OboyuError as exc:
                raise ToolError(one_line(str(exc))) from None
        if name == "index":
            return {"finished": False, "note": f"still indexing after {seconds:g} s; it goes on in the background, "
                                               "and status shows the counts when it is done"}
        raise ToolError(f"{name} took over {seconds:g} s and was given up; {SLOW[name]}")

    def register(fn: Callable[..., Any], description: str) -> None:
        arguments_of[fn.__name__] = set(inspect.signature(fn).parameters)
        server.tool(description=description)(fn)

    async def search(query: str, mode: ModeName = "hybrid", k: Count = 10, path: str | None = None, type: str | None = None,
                     since: str | None = None) -> dict[str, Any]:
        return await capped("search", tools.search, query, mode, k, path, type, since)

    register(search, "Search indexed documents; one result per file: path, line range, heading, location "
             "(page, slide, rows, ... in a PDF, Office file or book), snippet, confidence (the estimated "
             "probability that it answers the query), weak (under the line of a good match), likely (false for weak "
             "results, and for those under that line beside a good match: kept in case, seldom the answer; null "
             "where it cannot be told, across languages), "
             "folder (the indexed "
             "folder's name) and folder_description (what the user says it holds, or null). no_good_match: "
             "every result is weak, so the documents most likely do not hold the answer. across_languages: the "
             "query is in English and some results are Japanese documents that hardly hold its words: how sure "
             "each of those is cannot be told, so none of them is weak (each result has its own "
             "across_languages). mode: hybrid (default), "
             "vector (meaning) or keyword (exact words). k: 1-50. path: a file pattern "
             "(as in .gitignore: *.md, drafts/, !drafts/); type: extensions like md,txt; since: date or age like 7d.")

    async def read(path: str, start_line: Count | None = None, end_line: Count | None = None) -> dict[str, Any]:
        return await capped("read", tools.read, path, start_line, end_line)

    register(read, "Read an indexed file's text, or lines start_line..end_line of it (1-based, inclusive), "
             "numbered as search numbers them. A PDF, Office file, mail or book gives its extracted text; "
             "parts says on which line each page, slide, row or chapter starts. At most "
             f"{MAX_READ_LINES} lines and {MAX_READ_CHARS:,} characters a call: truncated is true when more "
             "was asked for; end_line says where the text stops, so ask again from the line after it.")

    async def status() -> dict[str, Any]:
        return await capped("status", tools.status)

    register(status, "Indexed folders (name, path, the user's description of each), document and chunk counts, "
             "model, last update.")

    if tools.allow_index:
        async def index(path: str) -> dict[str, Any]:
            return await capped("index", tools.index, path)

        register(index, "Update the index for a folder inside an already indexed folder; finished is false when "
                 "it runs on in the background (status then shows the counts).")

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
    """Serve the tools; meanwhile `oboyu query` on the index is answered from this process too
    (cli/serving.py: a Unix socket, never stdout, which is the MCP channel)."""
    from oboyu.cli.serving import QueryServer

    server = build_server(tools)
    queries = QueryServer(tools.live)
    queries.start()
    try:
        if http:
            server.run("streamable-http", host="127.0.0.1", port=port, transport_security=http_security(port),
                       max_request_body_size=MAX_HTTP_BODY)
        else:
            server.run("stdio")
    finally:
        queries.close()
