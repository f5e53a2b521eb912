"""Opening results: text files in the user's editor at the passage's line (the app suspended
meanwhile), anything else (a PDF, a workbook, a mail) in the application the desktop opens it with."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from textual.app import App

from oboyu.documents.filetypes import SOURCE_TYPES
from oboyu.search.query import Result
from oboyu.text import visible_name


@dataclass(frozen=True)
class ToOpen:
    """A file to open, at a line where it has lines; `file_type` as the index read it."""

    path: str
    line: int = 1
    file_type: str = ""

    @classmethod
    def of(cls, result: Result) -> ToOpen:
        return cls(result.path, result.start_line, result.file_type)

    @property
    def in_editor(self) -> bool:
        return not self.file_type or self.file_type in SOURCE_TYPES


def open_files(app: App, files: list[ToOpen]) -> list[ToOpen]:
    """Text files in the user's editor, all in one run of it (the first at its line), the others in
    the desktop's application for them; a file no longer there is said, never created by the
    editor. Returns the files opened."""
    there = [f for f in dict.fromkeys(files) if os.path.lexists(f.path)]
    for gone in (f for f in files if f not in there):
        app.notify(f"{visible_name(Path(gone.path).name)} is no longer there", severity="warning")
    for other in (f for f in there if not f.in_editor):
        open_externally(app, other.path)
    texts = [f for f in there if f.in_editor]
    if texts and not open_in_editor(app, texts):
        return [f for f in there if not f.in_editor]
    return there


def open_in_editor(app: App, files: list[ToOpen]) -> bool:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        app.notify("set $EDITOR (or $VISUAL) to open files", severity="warning")
        return False
    command = shlex.split(editor) + editor_arguments(editor, [(f.path, f.line) for f in files])
    try:
        with app.suspend():
            subprocess.run(command, check=False)
    except Exception as exc:  # no terminal to give away, editor missing, …
        app.notify(f"cannot run {editor}: {exc}", severity="error")
        return False
    finally:
        app.refresh()
    return True


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
        app.notify(f"opening {visible_name(Path(path).name)}", timeout=2)
    except OSError as exc:
        app.notify(f"cannot open {visible_name(Path(path).name)}: {exc.strerror or exc}", severity="error")


def editor_arguments(editor: str, files: list[tuple[str, int]]) -> list[str]:
    """How to open files at their lines in common editors: `-g FILE:LINE` each for VS Code and its
    kin; `FILE:LINE` each for Sublime, Zed, Helix; `+LINE FILE…` for vi, nano, emacs and most
    terminal editors, which take a line for the first file only."""
    name = Path(shlex.split(editor)[0]).name if editor.strip() else ""
    if name in ("code", "code-insiders", "codium", "cursor"):
        return [arg for path, line in files for arg in ("-g", f"{path}:{line}")]
    if name in ("subl", "zed", "hx", "helix"):
        return [f"{path}:{line}" for path, line in files]
    if not files:
        return []
    return [f"+{files[0][1]}"] + [path for path, _ in files]


def opener_command(path: str) -> list[str] | None:
    """The desktop's opener for a file: `open` on macOS, `xdg-open` elsewhere (None when absent);
    Windows uses os.startfile."""
    if sys.platform == "win32":
        return ["start", path]
    tool = "open" if sys.platform == "darwin" else "xdg-open"
    return [tool, path] if shutil.which(tool) else None
