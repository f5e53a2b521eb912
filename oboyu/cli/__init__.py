"""The `oboyu` command (click): one module per group of commands, over `oboyu.api`."""

from oboyu.cli.main import cli, main

__all__ = ["cli", "main"]
