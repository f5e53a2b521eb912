"""What the commands say of files and folders no longer where they were indexed: a folder moved
(and indexed at its new place), on a drive not mounted, or files deleted since the last run."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

import click

from oboyu.cli.common import open_reading
from oboyu.text import counted, visible


def say_missing(missing: int, err: TextIO) -> None:
    """Why `missing` of the results shown are not where they were indexed (a folder moved or on
    a drive not mounted, a file deleted since): a user trial's results all named a folder that had
    moved, unmarked."""
    if missing:
        these = "one of these files is no longer where it was" if missing == 1 else \
            f"{missing} of these files are no longer where they were"
        click.echo(f"oboyu: {these} indexed (moved, deleted, or on a drive not mounted): "
                   "`oboyu status` names a missing folder; `oboyu index NEW-PLACE` indexes a moved one, and "
                   "`oboyu index` updates the rest", file=err)


def say_moved(db: Path) -> None:
    """A missing folder whose files (most of them, by content) another indexed folder holds: a
    folder moved and indexed at its new place. Its rows are kept (a drive not mounted looks the
    same, and a copy too), so the person is told how to drop them: a user trial's moved folder
    left every result twice, the old paths unmarked."""
    with open_reading(db) as store:
        for root in store.roots():
            if os.path.exists(root.path):
                continue
            total, elsewhere = store.copies_in_other_roots(root.path)
            now = {other: n for other, n in elsewhere.items() if os.path.exists(other) and 2 * n >= total > 0}
            for other, n in now.items():
                files = "all its files" if n == total else f"{n:,} of its {counted(total, 'file')}"
                sys.stderr.write(visible(f"  {root.name} ({root.path}) is missing, and {other} holds {files}: "
                                         f"if it moved, `oboyu remove {root.name}` drops the old place's rows") + "\n")
