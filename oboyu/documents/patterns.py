"""Gitignore patterns as people write them, in `.gitignore` / `.oboyuignore` files, the `exclude`
setting and `--path`: compiled by pathspec, one line at a time where one bad line (a lone `!`, a
trailing `\\`, a range such as `[z-a]`) must not cost the others."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from oboyu.text import visible

if TYPE_CHECKING:  # imported where a pattern is compiled: a query without one never needs it
    import pathspec

_log = logging.getLogger(__name__)


def pattern_problem(pattern: str) -> str | None:
    """Why a gitignore pattern cannot be used, or None when it can."""
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([pattern])
    except re.error as exc:  # the regular expression pathspec made of it
        return exc.msg
    except ValueError:  # pathspec's GitIgnorePatternError: `!` or `\\` alone
        return "not a gitignore pattern"
    return None


def compile_patterns(lines: list[str], source: str, unit: str = "line") -> pathspec.GitIgnoreSpec:
    """The lines as one spec; a line that is not a pattern is left out with a warning that names
    `source`, the line (or other `unit`) and why (git, too, skips a line it cannot read)."""
    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, re.error):
        pass
    good = []
    for number, line in enumerate(lines, start=1):
        problem = pattern_problem(line)
        if problem is None:
            good.append(line)
        else:
            _log.warning(f"{source}, {unit} {number}: `{visible(line)}` left out ({problem})")
    return pathspec.GitIgnoreSpec.from_lines(good)
