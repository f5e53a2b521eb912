"""What the commands share: the --db option, opening the index for reading (saying when it
waits), and the exit codes (0 success, 1 a query with no results, 2 error)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from oboyu import api
from oboyu.index.store import Store
from oboyu.paths import default_db_path

EXIT_NO_RESULTS = 1
EXIT_ERROR = 2

F = TypeVar("F", bound=Callable)


def db_option(func: F) -> F:
    return click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Index file (default: $OBOYU_DB or the user data dir).",
    )(func)


def db_path(db: Path | None) -> Path:
    return db or default_db_path()


def say_waiting() -> None:
    click.echo("oboyu: waiting: another oboyu process is writing the index", err=True)


def open_reading(path: Path) -> Store:
    """The index for reading; while an indexer writes a batch, wait (saying so) rather than fail."""
    return api.open_reading(path, on_wait=say_waiting)


def index_model(path: Path) -> str | None:
    """The model the index was built with, None for a new or empty one."""
    return api.index_model(path, on_wait=say_waiting)


class NonEmptyPath(click.Path):
    """A path that is not empty: `index "$DIR"` with DIR unset indexed the working folder."""

    def convert(self, value: str | os.PathLike[str], param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":  # (a folder may be named with spaces)
            self.fail("a path cannot be empty; name a folder or the files to index", param, ctx)
        return super().convert(value, param, ctx)
