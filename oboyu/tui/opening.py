"""Opening a result: a text file in the user's editor at the passage's line (the app suspended
meanwhile), anything else (a PDF, a workbook, a mail) in the application the desktop opens it with."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from textual.app import App

from oboyu.documents.filetypes import SOURCE_TYPES
from oboyu.search.query import Result
from oboyu.text import visible


def open_result(app: App, result: Result) -> None:
    if result.file_type and result.file_type not in SOURCE_TYPES:
        open_externally(app, result.path)
        return
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        app.notify("set $EDITOR (or $VISUAL) to open files", severity="warning")
        return
    command = shlex.split(editor) + editor_arguments(editor, result.path, result.start_line)
    try:
        with app.suspend():
            subprocess.run(command, check=False)
    except Exception as exc:  # no terminal to give away, editor missing, …
        app.notify(f"cannot run {editor}: {exc}", severity="error")
    app.refresh()


def open_externally(app: App, path: str) -> None:
    """A PDF, a workbook, a mail: in the application the desktop opens it with."""
    command = opener_command(path)
    if command is None:
        app.notify("no program to open files with here (xdg-open, open)", severity="warning")
        return
    try:
        if sys.platform == "win32":
            os.startfile(path)  # type: ignore[attr-defined]  # Windows only
        else:
            subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        app.notify(f"opening {visible(Path(path).name)}", timeout=2)
    except OSError as exc:
        app.notify(f"cannot open {visible(Path(path).name)}: {exc.strerror or exc}", severity="error")


def editor_arguments(editor: str, path: str, line: int) -> list[str]:
    """How to open a file at a line in common editors: `+LINE FILE` for vi, nano, emacs and most
    terminal editors; `-g FILE:LINE` for VS Code and its kin; `FILE:LINE` for Sublime, Zed, Helix."""
    name = Path(shlex.split(editor)[0]).name if editor.strip() else ""
    if name in ("code", "code-insiders", "codium", "cursor"):
        return ["-g", f"{path}:{line}"]
    if name in ("subl", "zed", "hx", "helix"):
        return [f"{path}:{line}"]
    return [f"+{line}", path]


def opener_command(path: str) -> list[str] | None:
    """The desktop's opener for a file: `open` on macOS, `xdg-open` elsewhere (None when absent);
    Windows uses os.startfile."""
    if sys.platform == "win32":
        return ["start", path]
    tool = "open" if sys.platform == "darwin" else "xdg-open"
    return [tool, path] if shutil.which(tool) else None
