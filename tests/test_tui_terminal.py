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


def test_search_open_in_editor_and_quit_in_tmux(tmp_path: Path, cache_dir: Path, embedder: Embedder) -> None:
    home = tmp_path / "home"
    shutil.copytree(EXAMPLE_NOTES, home / "notes")
    db = home / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder).index([home / "notes"])
    opened = tmp_path / "opened.txt"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\necho "$@" > {shlex.quote(str(opened))}\n')
    editor.chmod(0o755)
    exit_file = tmp_path / "exit-status"
    env = {"HOME": str(home), "OBOYU_CACHE_DIR": str(cache_dir), "EDITOR": str(editor), "TERM": "xterm-256color",
           "LANG": "C.UTF-8", "PATH": os.environ.get("PATH", "")}
    command = (
        " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m oboyu.cli tui --db {shlex.quote(str(db))}"
        + f"; echo $? > {shlex.quote(str(exit_file))}"
    )
    tmux = Tmux(f"oboyu-test-{os.getpid()}")
    tmux("new-session", "-d", "-s", "app", "-x", "100", "-y", "30", command)
    try:
        tmux.wait_for("Search your documents")
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
        deadline = time.monotonic() + 30
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert opened.exists(), f"the editor never ran; the screen:\n{tmux.screen()}"
        assert opened.read_text().split() == ["+1", str(home / "notes" / "home" / "curry.txt")]
        tmux.wait_for("curry.txt")  # the app came back after the editor
        tmux("send-keys", "-t", "app", "C-q")
        deadline = time.monotonic() + 30
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert exit_file.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True)
