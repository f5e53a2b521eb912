"""The `oboyu` command (click): one module per group of commands, over `oboyu.api`. Its entry
point is `oboyu.cli.entry:main` (`handoff.main`), which stays light until it knows the command runs here; so
this package imports the commands only when asked for them."""

from __future__ import annotations

__all__ = ["cli"]


def __getattr__(name: str) -> object:  # no typing import: the entry point stays light
    if name == "cli":
        from oboyu.cli.main import cli

        return cli
    raise AttributeError(f"module 'oboyu.cli' has no attribute {name!r}")
