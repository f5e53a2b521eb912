"""Writes docs/tui.svg (and docs/tui.png when rsvg-convert is installed): the app searching the
example notes, as the README shows it.

    python scripts/tui_screenshot.py [--query TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oboyu.index.indexer import Indexer  # noqa: E402
from oboyu.index.store import Store  # noqa: E402
from oboyu.models.loading import load_default_embedder  # noqa: E402
from oboyu.tui.app import OboyuApp  # noqa: E402


async def shoot(db: Path, query: str, svg: Path) -> None:
    app = OboyuApp(db, load_default_embedder())
    async with app.run_test(size=(120, 30)) as pilot:
        app.query_one("#query").cursor_blink = False
        app.query_one("#query").value = query
        while app.shown is None or app.shown.query != query:
            await pilot.pause(0.05)
        await pilot.pause(1.0)  # the preview
        svg.write_text(app.export_screenshot(title="oboyu"), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--query", default="京都でお寺を巡る")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = tmp  # paths then read ~/notes/…, as on a person's machine
        notes = Path(tmp) / "notes"
        shutil.copytree(ROOT / "examples" / "notes", notes)
        db = Path(tmp) / "index.duckdb"
        with Store(db) as store:
            Indexer(store, load_default_embedder()).index([notes])
        svg = ROOT / "docs" / "tui.svg"
        asyncio.run(shoot(db, args.query, svg))
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", "-w", "1400", str(svg), "-o", str(svg.with_suffix(".png"))], check=True)
    print(f"wrote {svg}")


if __name__ == "__main__":
    main()
