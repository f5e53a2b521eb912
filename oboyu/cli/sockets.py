"""Where a warm process holding an index listens (`oboyu serve`), and reading a reply:
shared by the asking side (handoff.py, which must stay light: the standard library only) and the
answering side (serving.py)."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
from pathlib import Path

MAX_SOCKET_PATH = 100  # bytes: Linux allows 107, macOS 103


def receive_all(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def socket_path(index: Path, create: bool = False) -> Path | None:
    """Where a warm process holding `index` listens: a socket named by the index file's real path,
    in $XDG_RUNTIME_DIR/oboyu, or a folder of the temporary dir that only this user may enter
    (/tmp's when that is too long a path for a socket). None when the folder is someone else's or
    open to others: then nothing is handed off."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    name = hashlib.sha256(os.fsencode(index.expanduser().resolve())).hexdigest()[:24] + ".sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime) / "oboyu" if runtime else Path(os.environ.get("TMPDIR") or "/tmp") / f"oboyu-{uid}"
    if len(os.fsencode(folder / name)) > MAX_SOCKET_PATH:
        folder = Path("/tmp") / f"oboyu-{uid}"
    if create:
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            return None
    try:
        status = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != uid or status.st_mode & 0o077:
        return None
    return folder / name
