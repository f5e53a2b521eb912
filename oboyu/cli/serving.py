"""`oboyu serve`: an index held in memory with its model loaded, answering the `oboyu query`
commands run on the same machine (handoff.py sends them); the app and the MCP server run a
QueryServer too while they run. A query answered here prints exactly
what it would have printed on its own: the same options parsed by the same command, the same
output written for the asking terminal. What this process cannot answer as the command would
(an error, --rerank asked of a server without a reranker, another settings file) it declines,
and the query runs in its own process.

One request a connection on a Unix socket only this user can reach (sockets.socket_path): a JSON
line asks; a line of numbers (sockets.reply_head), then the bytes written to stdout and to stderr,
answers; its runs say how the two were interleaved, so that a notice printed before the results
comes before them. Requests are answered one at a time. Like `oboyu query --stdin`, the index is read
through short-lived connections, so `oboyu index` can write it meanwhile."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import click

from oboyu.cli.common import db_option, db_path, open_reading
from oboyu.cli.searching import Asked, answer_warm, query
from oboyu.cli.sockets import DECLINED, receive_all, reply_head, socket_path
from oboyu.config import settings
from oboyu.errors import OboyuError
from oboyu.paths import config_file, default_db_path
from oboyu.search.live import LiveIndex
from oboyu.text import visible

log = logging.getLogger(__name__)

REQUEST_BYTES = 1 << 20  # a query's arguments; more is not a query


class _Recording(io.BytesIO):
    """Bytes written to one stream, each write also noted in the order shared with the other."""

    def __init__(self, stream: int, order: list[list[int]]):
        super().__init__()
        self.stream, self.order = stream, order

    def write(self, data) -> int:
        written = super().write(data)
        if written:
            if self.order and self.order[-1][0] == self.stream:
                self.order[-1][1] += written
            else:
                self.order.append([self.stream, written])
        return written


class TerminalLike(io.TextIOWrapper):
    """What a command writes, kept as bytes, telling the writer whether the asker's stream is a
    terminal (colour, hyperlinks, and how `--format files` writes names depend on it). Streams
    made with the same `order` note in it how their writes interleaved: [stream, bytes] runs."""

    def __init__(self, tty: bool, stream: int = 1, order: list[list[int]] | None = None):
        super().__init__(_Recording(stream, [] if order is None else order), encoding="utf-8",
                         errors="surrogateescape", write_through=True)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def written(self) -> bytes:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue()


class QueryServer:
    """Answers handed-off queries about `live`'s index until closed."""

    def __init__(self, live: LiveIndex):
        self.live = live
        self.address: Path | None = None
        self._listener: socket.socket | None = None
        self._answering = threading.Lock()
        self._config = _config_state()

    def start(self) -> Path | None:
        """Listen (in a daemon thread); the socket's path, or None where there can be none (no Unix
        sockets, no private folder) or another process already answers for this index."""
        address = socket_path(self.live.db_path, create=True) if hasattr(socket, "AF_UNIX") else None
        if address is None or _answering_elsewhere(address):
            return None
        with contextlib.suppress(FileNotFoundError):
            address.unlink()  # left by a process that was killed
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(address))
        os.chmod(address, 0o600)
        listener.listen(16)
        self._listener, self.address = listener, address
        threading.Thread(target=self._serve, name="oboyu-query-server", daemon=True).start()
        return address

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            if self.address is not None:
                with contextlib.suppress(OSError):
                    self.address.unlink()
                    self.address.parent.rmdir()  # when no other index is served: nothing left behind

    def _serve(self) -> None:
        while (listener := self._listener) is not None:
            try:
                connection, _ = listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._reply, args=(connection,), daemon=True).start()

    def _reply(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.settimeout(10)
                raw = receive_all(connection)
                request = json.loads(raw.decode("utf-8", "surrogateescape")) if len(raw) <= REQUEST_BYTES else None
                with self._answering:
                    answer = self._answer_safely(request) if isinstance(request, dict) else None
                if answer is None:
                    connection.sendall(DECLINED + b"\n")
                    return
                code, stdout, stderr, order = answer
                connection.sendall(reply_head(code, len(stdout), len(stderr), order) + stdout + stderr)
            except (OSError, ValueError):
                pass  # the asker went away, or sent no request: nothing to answer

    def _answer_safely(self, request: dict[str, Any]) -> tuple[int, bytes, bytes, list[list[int]]] | None:
        """`answer`, any failure of it a declined request: the query runs, and says what went
        wrong, in the asker's process; nothing is printed here (in the app, stderr is the screen)."""
        try:
            return self.answer(request)
        except Exception:
            log.debug("declined a handed-off query", exc_info=True)
            return None

    def answer(self, request: dict[str, Any]) -> tuple[int, bytes, bytes, list[list[int]]] | None:
        """Run the query command for `request`: its exit code, what it wrote to stdout and to
        stderr, and in what order ([stream, bytes] runs); None when it is to run in the asker's
        process."""
        given = request.get("env")
        env: dict[str, str] = {k: v for k, v in given.items() if isinstance(v, str)} if isinstance(given, dict) else {}
        argv, cwd = request.get("argv"), request.get("cwd")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or not isinstance(cwd, str):
            return None
        if request.get("index") != os.path.realpath(self.live.db_path):
            return None  # another index whose socket's name is the same (two checksums of its path)
        if request.get("default") and os.path.realpath(default_db_path()) != request["index"]:
            return None  # the asker's default index is not this one's: its environment says another
        if env.get("OBOYU_CONFIG") != os.environ.get("OBOYU_CONFIG"):
            return None  # another settings file: its defaults are read there
        self._reread_changed_settings()
        try:
            params = query.make_context("query", list(argv)).params
            if params["from_stdin"] or params["text"] is None:
                return None
            if params["db"] is not None and (Path(cwd) / params["db"]).resolve() != self.live.db_path.resolve():
                return None
            if params["rerank"] is not None and params["rerank"] != (self.live.reranker is not None):
                return None
            asked = Asked.of(params["text"], params["k"], params["output_format"], params["as_json"],
                             params["min_score"], params["paths"], params["types"], params["since"], params["until"],
                             params["roots"], params["mode_name"], params["by_chunk"], params["explain"],
                             params["show_all"])
            if asked.mode.uses_vectors and self.live.embedder is None:
                return None  # the model is still loading
            order: list[list[int]] = []
            out = TerminalLike(bool(request.get("stdout_tty")), 1, order)
            err = TerminalLike(bool(request.get("stderr_tty")), 2, order)
            code = answer_warm(asked, self.live, out, err, env)
        except (click.ClickException, click.exceptions.Exit, OboyuError, OSError):
            return None  # said in the asker's own words by running it there
        return code, out.written(), err.written(), order

    def _reread_changed_settings(self) -> None:
        """The settings file is read again when it changed since (query.k, query.mode)."""
        now = _config_state()
        if now != self._config:
            settings.cache_clear()
            self._config = now


def _config_state() -> tuple[str, int | None]:
    path = config_file()
    try:
        return str(path), path.stat().st_mtime_ns
    except OSError:
        return str(path), None


def _answering_elsewhere(address: Path) -> bool:
    if not address.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        try:
            probe.connect(str(address))
        except OSError:
            return False  # nobody listens: a socket left behind
    return True


@click.command()
@db_option
@click.option("--rerank/--no-rerank", default=None,
              help="Reorder the best passages with the installed reranker (default: when one is installed).")
def serve(db: Path | None, rerank: bool | None) -> None:
    """Hold the index in memory with its model loaded, so that `oboyu query` answers at once.

    While it runs, `oboyu query` on this index is answered here, with the output it would have
    written itself; `oboyu index` can update the index meanwhile. Ctrl+C stops it."""
    from oboyu.api import READ_WAIT_SECONDS
    from oboyu.models.loading import load_embedder, load_reranker
    from oboyu.progress import ProgressLine

    path = db_path(db)
    address = socket_path(path)
    if address is not None and _answering_elsewhere(address):  # said before the model loads
        raise OboyuError(f"cannot serve {path}: another oboyu process answers for it already")
    with open_reading(path) as store:
        model_id = store.model_id()
    live = LiveIndex(path, load_embedder(model_id, progress=ProgressLine()), load_reranker(rerank),
                     read_wait=READ_WAIT_SECONDS)
    live.refresh()  # read now: the first query is as quick as the next
    server = QueryServer(live)
    address = server.start()
    if address is None:
        raise OboyuError(f"cannot serve {path}: another oboyu process answers for it already, or there is no "
                         "private folder for its socket here")
    click.echo(visible(f"oboyu: serving {path}; `oboyu query` answers from here (Ctrl+C stops)"), err=True)
    signal.signal(signal.SIGTERM, _stop)  # as Ctrl+C: a service manager's stop removes the socket too
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    click.echo("oboyu: stopped", err=True)


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
