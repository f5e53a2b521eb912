"""Where a warm process holding an index listens (`oboyu serve`), and the two lines a hand-off
speaks: shared by the asking side (handoff.py) and the answering side (serving.py).

The asking side starts with every `oboyu query`, so this module imports only what Python's start
has loaded or costs nothing: no pathlib, json, re, typing or hashlib (their imports took 25 of
the 60 ms a handed-off query took end to end, on the 2-core development machine). So the
request is JSON written here (the server reads it with `json`), and the reply's first line is
plain words."""

from __future__ import annotations

import os
import socket
import stat
import zlib

TYPE_CHECKING = False  # typing's own costs an import
if TYPE_CHECKING:
    from pathlib import Path

MAX_SOCKET_PATH = 100  # bytes: Linux allows 107, macOS 103
PROTOCOL = 2  # in the socket's name: a server that speaks another form of the lines is not asked
HANDLED, DECLINED = b"handled", b"declined"


def receive_all(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def socket_address(index: str, create: bool = False) -> str | None:
    """Where a warm process holding `index` listens: a socket named by the index file's real path,
    in $XDG_RUNTIME_DIR/oboyu, or a folder of the temporary dir that only this user may enter
    (/tmp's when that is too long a path for a socket). None when the folder is someone else's or
    open to others: then nothing is handed off. The name is two checksums of the path (zlib's:
    hashlib loads OpenSSL); the server also checks the path it is asked about."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    real = os.fsencode(os.path.realpath(os.path.expanduser(index)))
    name = f"{zlib.crc32(real):08x}{zlib.adler32(real):08x}-{PROTOCOL}.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = os.path.join(runtime, "oboyu") if runtime else os.path.join(os.environ.get("TMPDIR") or "/tmp", f"oboyu-{uid}")
    if len(os.fsencode(os.path.join(folder, name))) > MAX_SOCKET_PATH:
        folder = os.path.join("/tmp", f"oboyu-{uid}")
    if create:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        status = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != uid or status.st_mode & 0o077:
        return None
    return os.path.join(folder, name)


def socket_path(index: Path, create: bool = False) -> Path | None:
    """`socket_address` as a Path, for the answering side."""
    from pathlib import Path

    address = socket_address(os.fspath(index), create)
    return Path(address) if address is not None else None


def json_text(value: object) -> str:
    """`json.dumps(value)` (ASCII only, as its default) for what a request holds: text, truth
    values, lists and objects of them. A lone surrogate (a name's undecodable byte) is written
    as `\\udcxx`, as json writes it, and read back the same."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + "".join(_escaped(ch) for ch in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(json_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json_text(key)}: {json_text(item)}" for key, item in value.items()) + "}"
    raise TypeError(f"not in a request: {type(value).__name__}")


def _escaped(ch: str) -> str:
    code = ord(ch)
    if 0x20 <= code < 0x7F:
        return "\\" + ch if ch in '"\\' else ch
    if code > 0xFFFF:  # a pair of surrogates
        code -= 0x10000
        return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def reply_head(code: int, stdout_bytes: int, stderr_bytes: int, order: list[list[int]]) -> bytes:
    """The answer's first line: `handled CODE STDOUT STDERR` and the runs of its order
    (`STREAM:BYTES`); the bytes written follow it."""
    runs = " ".join(f"{stream}:{length}" for stream, length in order)
    return f"{HANDLED.decode()} {code} {stdout_bytes} {stderr_bytes} {runs}".rstrip().encode("ascii") + b"\n"


def read_reply_head(line: bytes) -> tuple[int, int, int, list[list[int]]] | None:
    """(code, stdout bytes, stderr bytes, order) from a reply's first line; None when declined
    (or not a reply). Raises ValueError for a garbled one."""
    fields = line.split()
    if len(fields) < 4 or fields[0] != HANDLED:
        return None
    order = [[int(number) for number in run.split(b":")] for run in fields[4:]]
    return int(fields[1]), int(fields[2]), int(fields[3]), order
