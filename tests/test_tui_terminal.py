"""The app in a real terminal: tmux runs `oboyu tui`, keys go in with send-keys, the screen comes
back with capture-pane."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXAMPLE_NOTES

from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


class Tmux:
    def __init__(self, socket: str):
        self.socket = socket

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "app")

    def wait_for(self, text: str, timeout: float = 90.0) -> str:
        return self.wait_until(lambda screen: text in screen, f"{text!r} never appeared", timeout)

    def wait_until(self, ready: Callable[[str], bool], failure: str, timeout: float = 90.0,
                   escapes: bool = False) -> str:
        """Polls the screen (with colour escapes when `escapes`) until `ready(screen)`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self("capture-pane", "-p", "-e", "-t", "app") if escapes else self.screen()
            if ready(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{failure}; the screen:\n{self.screen()}")


def first_result(screen: str) -> str:
    return next((line for line in screen.splitlines() if ".txt" in line or ".md" in line), "")


def results_border(coloured_screen: str) -> str:
    """The results box's top line as drawn, colours included: focus redraws it brighter."""
    return next(line for line in coloured_screen.splitlines() if "Results" in line)


def index_notes(tmp_path: Path, embedder: Embedder) -> tuple[Path, Path]:
    """A home folder with the example notes, indexed: (home, index file)."""
    home = tmp_path / "home"
    shutil.copytree(EXAMPLE_NOTES, home / "notes")
    db = home / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder).index([home / "notes"])
    return home, db


def recording_editor(tmp_path: Path) -> tuple[Path, Path]:
    """An $EDITOR that appends its arguments, one run a line, to a file: (editor, that file)."""
    opened = tmp_path / "opened.txt"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\necho "$@" >> {shlex.quote(str(opened))}\n')
    editor.chmod(0o755)
    return editor, opened


def start_app(tmux: Tmux, tmp_path: Path, env: dict[str, str], db: Path) -> Path:
    """`oboyu tui` in a 100×30 tmux window; returns the file its exit status will be written to."""
    exit_file = tmp_path / "exit-status"
    exit_file.unlink(missing_ok=True)
    env = {"TERM": "xterm-256color", "LANG": "C.UTF-8", "PATH": os.environ.get("PATH", ""), **env}
    command = (
        " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m oboyu.cli tui --db {shlex.quote(str(db))}"
        + f"; echo $? > {shlex.quote(str(exit_file))}"
    )
    tmux("new-session", "-d", "-s", "app", "-x", "100", "-y", "30", command)
    tmux.wait_for("Search your documents")
    return exit_file


def wait_for_file(path: Path, tmux: Tmux, what: str, lines: int = 1) -> list[str]:
    deadline = time.monotonic() + 30
    while (not path.exists() or len(path.read_text().splitlines()) < lines) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert path.exists() and len(path.read_text().splitlines()) >= lines, f"{what}; the screen:\n{tmux.screen()}"
    return path.read_text().splitlines()


def quit_app(tmux: Tmux, exit_file: Path) -> None:
    tmux("send-keys", "-t", "app", "C-q")
    assert wait_for_file(exit_file, tmux, "the app never quit") == ["0"]


def test_search_open_in_editor_and_quit_in_tmux(tmp_path: Path, cache_dir: Path, embedder: Embedder) -> None:
    home, db = index_notes(tmp_path, embedder)
    editor, opened = recording_editor(tmp_path)
    tmux = Tmux(f"oboyu-test-{os.getpid()}")
    try:
        exit_file = start_app(tmux, tmp_path, {"HOME": str(home), "OBOYU_CACHE_DIR": str(cache_dir),
                                               "EDITOR": str(editor)}, db)
        tmux("send-keys", "-t", "app", "-l", "カレーの作り方")
        # answers to the first characters come first; the whole query's answer ranks curry.txt first
        screen = tmux.wait_until(lambda screen: "curry.txt" in first_result(screen), "curry.txt never came first")
        assert "6 docs" in screen
        unfocused = results_border(tmux("capture-pane", "-p", "-e", "-t", "app"))
        tmux("send-keys", "-t", "app", "Tab")
        # a key sent before the focus moved would go to the search box, as it would for a person
        tmux.wait_until(lambda screen: results_border(screen) != unfocused, "Tab never focused the results",
                        timeout=30, escapes=True)
        tmux("send-keys", "-t", "app", "e")
        runs = wait_for_file(opened, tmux, "the editor never ran")
        assert runs[0].split() == ["+1", str(home / "notes" / "home" / "curry.txt")]
        tmux.wait_for("curry.txt")  # the app came back after the editor
        quit_app(tmux, exit_file)
    finally:
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True)


def test_selected_results_open_together_recent_reopens_and_history_returns_in_tmux(
        tmp_path: Path, cache_dir: Path, embedder: Embedder) -> None:
    home, db = index_notes(tmp_path, embedder)
    editor, opened = recording_editor(tmp_path)
    env = {"HOME": str(home), "OBOYU_CACHE_DIR": str(cache_dir), "EDITOR": str(editor),
           "OBOYU_STATE_DIR": str(tmp_path / "state"), "OBOYU_CONFIG": str(tmp_path / "config.toml")}
    tmux = Tmux(f"oboyu-test-m{os.getpid()}")
    try:
        exit_file = start_app(tmux, tmp_path, env, db)
        tmux("send-keys", "-t", "app", "-l", "カレーの作り方")
        tmux.wait_until(lambda screen: "curry.txt" in first_result(screen), "curry.txt never came first")
        unfocused = results_border(tmux("capture-pane", "-p", "-e", "-t", "app"))
        tmux("send-keys", "-t", "app", "Tab")
        tmux.wait_until(lambda screen: results_border(screen) != unfocused, "Tab never focused the results",
                        timeout=30, escapes=True)
        tmux("send-keys", "-t", "app", "Space")
        tmux.wait_for("1 selected", timeout=30)
        tmux("send-keys", "-t", "app", "Down")
        tmux("send-keys", "-t", "app", "Space")
        tmux.wait_for("2 selected", timeout=30)
        tmux("send-keys", "-t", "app", "e")
        runs = wait_for_file(opened, tmux, "the editor never ran")
        words = runs[0].split()
        assert words[0] == "+1" and words[1] == str(home / "notes" / "home" / "curry.txt") and len(words) == 3
        second = words[2]
        tmux.wait_for("2 selected")  # the app came back after the editor
        tmux("send-keys", "-t", "app", "C-r")
        tmux.wait_for("Recent documents", timeout=30)
        tmux("send-keys", "-t", "app", "Enter")  # the first listed: the first opened
        runs = wait_for_file(opened, tmux, "the recent document never opened", lines=2)
        assert runs[1].split() == ["+1", str(home / "notes" / "home" / "curry.txt")]
        assert second != runs[1].split()[1]
        # back from the editor (a key sent while the terminal is still handed over is lost)
        tmux.wait_for("2 selected", timeout=30)
        quit_app(tmux, exit_file)
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True)

        exit_file = start_app(tmux, tmp_path, env, db)
        tmux("send-keys", "-t", "app", "Up")  # an empty box: the last search comes back
        tmux.wait_until(lambda screen: any("カレーの作り方" in line for line in screen.splitlines()[:3]) and "curry.txt" in first_result(screen),
                        "the last search never came back")
        quit_app(tmux, exit_file)
    finally:
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True)
