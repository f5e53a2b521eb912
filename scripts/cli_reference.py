"""Writes docs/cli.md, the command-line reference, from the click commands themselves
(`oboyu.cli.main.cli`): each command's usage, help text and options, in the order `--help` lists
them. The output depends on nothing but the code (no terminal width, no environment).

    python scripts/cli_reference.py           # rewrite docs/cli.md
    python scripts/cli_reference.py --check   # exit 1 when docs/cli.md is not what it would write

tests/test_docs.py runs the check.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oboyu.cli.main import cli  # noqa: E402

TARGET = ROOT / "docs" / "cli.md"
HEADER = """\
# Command-line reference

Every command and option of `oboyu`, made from the commands' own help by
`python scripts/cli_reference.py` (do not edit it by hand: `tests/test_docs.py` fails when it is
out of date). Every command takes `-h` / `--help`, which prints the same. The
[user guide](guide.md) says how the commands behave. Exit status: 0 success (`query`: results
found), 1 `query` with no results (`get`: a glob or folder that named no indexed file), 2 error.
"""


def commands(group: click.Group, ctx: click.Context) -> list[click.Context]:
    """The context of `group` and of every command below it, depth first, each group's commands
    in the order `--help` lists them."""
    found = [ctx]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = click.Context(command, info_name=name, parent=ctx, **command.context_settings)
        found += commands(command, sub) if isinstance(command, click.Group) else [sub]
    return found


def anchor(title: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def markdown(text: str) -> str:
    """Help text as Markdown: backquoted parts are code already; elsewhere `*`, and `_` and `<`
    where Markdown would read them, are escaped, and click's `\\b` (keep the lines) is dropped."""
    parts = re.split(r"(`[^`]*`)", text.replace("\b\n", ""))
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"(?<!\w)_|_(?!\w)|\*|<(?=[A-Za-z/!?])", lambda m: "\\" + m[0], parts[i])
    return "".join(parts)


def section(ctx: click.Context) -> str:
    command = ctx.command
    lines = [f"## {ctx.command_path}", "", "```", f"{ctx.command_path} {' '.join(command.collect_usage_pieces(ctx))}",
             "```", ""]
    if command.help:
        lines += [markdown(inspect.cleandoc(command.help)), ""]
    helper = command.get_help_option(ctx)  # every command's -h / --help, said once in the header
    records = [param.get_help_record(ctx) for param in command.get_params(ctx)
               if isinstance(param, click.Option) and param is not helper]
    options = [record for record in records if record is not None]
    if options:
        lines += ["Options:", ""]
        lines += [f"- `{names}`: {markdown(' '.join(help_text.split()))}" if help_text else f"- `{names}`"
                  for names, help_text in options]
        lines.append("")
    if isinstance(command, click.Group):
        lines += ["Commands:", ""]
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                title = f"{ctx.command_path} {name}"
                lines.append(f"- [`{name}`](#{anchor(title)}): {markdown(sub.get_short_help_str(limit=1000))}")
        lines.append("")
    return "\n".join(lines)


def render() -> str:
    """docs/cli.md as it should be."""
    top = click.Context(cli, info_name="oboyu", **cli.context_settings)
    return HEADER + "\n" + "\n".join(section(ctx) for ctx in commands(cli, top))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="Change nothing; exit 1 when docs/cli.md is out of date.")
    args = parser.parse_args()
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            sys.exit(f"{TARGET.relative_to(ROOT)} is out of date: run python scripts/cli_reference.py")
        return
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
