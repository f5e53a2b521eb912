"""The `oboyu` command's first step: hand `oboyu query` to a warm process when one holds the index.

`oboyu serve`, and the app or the MCP server while they run, keep an index in memory with its
model loaded and listen on a Unix socket named after the index file, in a folder only this user
can enter. A query that finds the socket sends its arguments there and prints the answer it gets
back, byte for byte what it would have printed itself, in milliseconds rather than the second a
cold start takes (loading the model, reading the index). Anything the warm process does not answer itself
(an error, an option it cannot honour, no process at all) runs here as usual, so the output never
depends on whether a server was running.

This module is imported before anything else and must stay light: only what Python's start has
loaded or costs nothing (sockets.py says why), no click, no NumPy, no onnxruntime.
`OBOYU_NO_HANDOFF=1` turns it off.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from oboyu.cli.interrupts import leave_closed_pipe, leave_now
from oboyu.cli.sockets import json_text, read_reply_head, receive_all, socket_address

TYPE_CHECKING = False  # typing's own costs an import
if TYPE_CHECKING:
    from typing import TextIO

CONNECT_SECONDS = 0.5  # a server that does not accept in this time is not used
ANSWER_SECONDS = 300.0  # a query may wait while an indexer writes, as a local one would
TERMINAL_VARIABLES = ("NO_COLOR", "TERM", "NO_TERM_HYPERLINKS", "KITTY_WINDOW_ID")  # how output is styled
NOT_HANDED = ("--stdin", "--help", "-h")  # answered here: a stream of queries, the help text


def main() -> None:
    waiting = signal.getsignal(signal.SIGINT) in (signal.default_int_handler, leave_now)  # leave_now: from entry.py
    if waiting:  # not when SIGINT is ignored (a background job): it stays ignored
        signal.signal(signal.SIGINT, leave_now)
    code = handed_off(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from oboyu.cli.main import main as run_here

    try:  # main() gives Ctrl+C back to Python once it can say "interrupted" itself
        run_here()
    finally:  # the command has finished and said so: a Ctrl+C now would raise in the interpreter's
        if waiting:  # shutdown, ending by the signal or, with threads in native code, in a crash
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def handed_off(args: list[str]) -> int | None:
    """Have a warm process answer `oboyu query ...`: its exit code once the answer is written,
    None when the query is to run here."""
    if not args or args[0] != "query" or os.environ.get("OBOYU_NO_HANDOFF") or not hasattr(socket, "AF_UNIX"):
        return None
    if any(arg in NOT_HANDED for arg in args[1:]):
        return None
    named = named_index(args[1:])
    index = os.path.realpath(os.path.expanduser(named or default_index()))
    address = socket_address(index)
    if address is None or not os.path.exists(address):
        return None
    request = {
        "argv": args[1:],
        "cwd": os.getcwd(),
        "index": index,
        "default": named is None,
        "env": {name: os.environ[name] for name in (*TERMINAL_VARIABLES, "OBOYU_CONFIG") if name in os.environ},
        "stdout_tty": sys.stdout.isatty(),
        "stderr_tty": sys.stderr.isatty(),
    }
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(CONNECT_SECONDS)
            connection.connect(address)
            connection.settimeout(ANSWER_SECONDS)
            connection.sendall(json_text(request).encode("ascii") + b"\n")
            connection.shutdown(socket.SHUT_WR)
            reply = receive_all(connection)
        head, _, body = reply.partition(b"\n")
        answer = read_reply_head(head)
        if answer is None:
            return None
        code, stdout_bytes, stderr_bytes, order = answer
        if len(body) != stdout_bytes + stderr_bytes:
            return None  # cut short
    except (OSError, ValueError):  # gone, refused, timed out, garbled: answer here
        return None
    try:
        for stream, written in in_order(body, stdout_bytes, order):
            stream.flush()
            stream.buffer.write(written)
            stream.buffer.flush()
    except BrokenPipeError:  # the reader went away (`| head -1`)
        return leave_closed_pipe()
    return code


def in_order(body: bytes, stdout_bytes: int, order: object) -> list[tuple[TextIO, bytes]]:
    """The answer's stdout and stderr bytes as the command wrote them: in `order`'s runs of
    [stream, bytes] where it gives them and they add up, else stdout, then stderr."""
    sections = {1: [0, stdout_bytes], 2: [stdout_bytes, len(body)]}
    runs: list[tuple[TextIO, bytes]] = []
    if isinstance(order, list):
        for run in order:
            if not (isinstance(run, list) and len(run) == 2 and run[0] in sections and isinstance(run[1], int)):
                break
            section = sections[run[0]]
            if run[1] < 0 or section[0] + run[1] > section[1]:
                break
            runs.append((sys.stdout if run[0] == 1 else sys.stderr, body[section[0]:section[0] + run[1]]))
            section[0] += run[1]
        else:
            if all(start == end for start, end in sections.values()):
                return runs
    return [(sys.stdout, body[:stdout_bytes]), (sys.stderr, body[stdout_bytes:])]


def named_index(args: list[str]) -> str | None:
    """The index file a query's arguments name (--db), else $OBOYU_DB; None for the default."""
    for i, arg in enumerate(args):
        if arg == "--db" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--db="):
            return arg.removeprefix("--db=")
    return os.environ.get("OBOYU_DB") or None


def default_index() -> str:
    """`paths.default_db_path()` without platformdirs, whose import (13 ms) would be a quarter of
    a handed-off query's time, in the plain case: Linux or macOS, an absolute HOME, no
    XDG_DATA_HOME. Elsewhere platformdirs says (its rules for the rest are many); the server
    declines a query whose default index is not its own."""
    home, plain = os.environ.get("HOME", ""), "XDG_DATA_HOME" not in os.environ
    if plain and home.startswith("/") and sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "oboyu", "index.duckdb")
    if plain and home.startswith("/") and sys.platform.startswith("linux"):
        return os.path.join(home, ".local", "share", "oboyu", "index.duckdb")
    from oboyu.paths import default_db_path

    return str(default_db_path())
