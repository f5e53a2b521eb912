"""The interactive app: `oboyu` on a terminal, or `oboyu tui`."""

from __future__ import annotations

from pathlib import Path


def run(db_path: Path) -> None:
    from oboyu.tui.app import OboyuApp

    OboyuApp(db_path).run()
