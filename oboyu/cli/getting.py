"""`oboyu get`: indexed files' text as the index read it (a PDF's, a slide deck's, a mail's too),
numbered as results number it, with the heading paths and pages the index knows."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import click

from oboyu.cli.common import EXIT_ERROR, EXIT_NO_RESULTS, db_option, db_path, open_reading
from oboyu.cli.output import colour, file_url, hyperlinks, link
from oboyu.paths import disk_path
from oboyu.retrieve import NOT_INDEXED, Excerpt, LeftOut, Unreadable, find, read
from oboyu.text import json_safe, visible, visible_name

DEFAULT_MAX_BYTES = 200_000

_HINTS = {NOT_INDEXED: "`oboyu status` lists the indexed folders; `oboyu index FOLDER` adds one",
          "no such file": "check the path (a relative one starts from the working folder)"}


@click.command("get")
@click.argument("targets", nargs=-1, required=True, metavar="PATH[:LINE[:COUNT]]... | CHUNK_ID")
@db_option
@click.option("-l", "--max-lines", "max_lines", type=click.IntRange(min=1), default=None, metavar="N",
              help="At most N lines of each file.")
@click.option("--max-bytes", "max_bytes", type=click.IntRange(min=0), default=DEFAULT_MAX_BYTES, show_default=True,
              metavar="N", help="At most N bytes of text in all (UTF-8): the first file is cut to fit, later ones "
              "that do not fit are left out, saying so; 0: no cap.")
@click.option("--line-numbers/--no-line-numbers", "numbered", default=True,
              help="Number the lines, and mark where headings and pages start (default), or print the text as it is.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array: an object a file.")
def get(targets: tuple[str, ...], db: Path | None, max_lines: int | None, max_bytes: int, numbered: bool,
        as_json: bool) -> None:
    """Print indexed files' text as oboyu read it: a PDF's, an Office file's or a mail's too.

    A PATH may be written as `oboyu query` prints it (a newline in a name as ␊, a byte that is not
    UTF-8 as \\xff). Each PATH may end in :LINE (from that line), :LINE:COUNT or :START-END, or in
    a part such as ' (p. 3)' or ' (rows 12-40)' (as `oboyu query` prints a result); it may be a folder or a glob
    in quotes ('notes/**/*.md'), or the chunk_id of a result of `oboyu query --json`. Only
    indexed files are read, and only inside the folder they were indexed under. Exit status: 0 every argument named an indexed file (what a cap left out is said on stderr), 1 a glob or folder named no indexed file,
    2 a path or id that is not indexed or cannot be read."""
    with open_reading(db_path(db)) as store:
        found = find(store, list(targets))
    errors = list(found.errors)
    items = list(read(found.targets, max_bytes, max_lines))
    errors += [(item.target.request.argument, item.error + _gone_folder(item.target.root))
               for item in items if isinstance(item, Unreadable)]
    shown = [item for item in items if not isinstance(item, Unreadable)]
    if as_json:
        sys.stdout.write(json_safe(json.dumps([_json(item) for item in shown], ensure_ascii=False, indent=2)) + "\n")
    else:
        _write_text(shown, numbered)
    for item in shown:
        if isinstance(item, LeftOut):
            click.echo(visible(f"oboyu: left out {item.target.path}: {item.reason}; ask for it alone, or raise --max-bytes"),
                       err=True)
        elif item.truncated:
            click.echo(visible(f"oboyu: {item.target.path}: {_what_was_shown(item, max_bytes)}"), err=True)
        if isinstance(item, Excerpt) and item.stale:
            click.echo(visible(f"oboyu: {item.target.path} changed since it was indexed: its headings and pages may be "
                               "off until `oboyu index` reads it again"), err=True)
    for argument in found.unmatched:
        click.echo(visible(f"oboyu: {argument}: no indexed file there (`oboyu status` lists the indexed folders)"), err=True)
    for argument, why in errors:
        hint = _HINTS.get(why)
        click.echo(visible(f"oboyu: error: {argument}: {why}" + (f"; {hint}" if hint else "")), err=True)
    if errors:
        raise SystemExit(EXIT_ERROR)
    if found.unmatched:
        raise SystemExit(EXIT_NO_RESULTS)


def _gone_folder(root: str) -> str:
    """What to do when the file's indexed folder is gone (a trial moved one: `get` said only "No
    such file or directory")."""
    if os.path.lexists(disk_path(root)):
        return ""
    return (f"; its folder {root} is missing (moved, or on a drive not mounted): `oboyu index NEWPATH` indexes it "
            f"where it is now, `oboyu remove {root}` drops what the index holds of it")


def _what_was_shown(item: Excerpt, max_bytes: int) -> str:
    """`lines 1-40 of 120 shown; ... goes on`, or, for one line longer than the cap (a file of one
    200 KB line), that only its start was shown: no next line to go on from."""
    goes_on = f"`oboyu get {shlex.quote(f'{item.target.path}:{item.end_line + 1}')}` goes on"
    if item.line_cut:
        said = f"only the first {max_bytes:,} bytes of line {item.end_line} shown (--max-bytes); raise it to see the line whole"
        return said + (f", or {goes_on}" if item.end_line < item.total_lines else "")
    return f"lines {item.start_line}-{item.end_line} of {item.total_lines} shown; {goes_on}"


def _json(item: Excerpt | LeftOut) -> dict:
    target = item.target
    out: dict = {"path": target.path, "request": target.request.argument}
    if target.chunk_id:
        out["chunk_id"] = target.chunk_id
    if isinstance(item, LeftOut):
        return out | {"left_out": item.reason}
    return out | {
        "file_type": target.file_type, "start_line": item.start_line, "end_line": item.end_line,
        "total_lines": item.total_lines, "truncated": item.truncated, "line_cut": item.line_cut, "stale": item.stale,
        "headings": [{"line": line, "heading": heading} for line, heading in item.headings],
        "parts": [{"line": line, "location": label} for line, label in item.parts],
        "text": item.text,
    }


def _write_text(items: list[Excerpt | LeftOut], numbered: bool) -> None:
    """`==> path:lines <==` over each file (as head and tail head theirs; with --no-line-numbers only
    when there are several), its lines numbered, and a `──` line where a heading path or a page starts."""
    out = sys.stdout
    coloured, linked = colour(out), hyperlinks(out)
    headers = numbered or len(items) > 1
    first = True
    for item in items:
        target = item.target
        if isinstance(item, LeftOut):
            continue
        if headers:
            lines = f":{item.start_line}-{item.end_line}" if item.lines else " (no text)"
            where = visible_name(f"{target.path}{lines}")
            where = link(where, file_url(target.path, item.start_line) if linked else None)
            header = f"==> {click.style(where, bold=True) if coloured else where} <=="
            out.write(("" if first else "\n") + header + "\n")
            first = False
        if not numbered:
            out.writelines(visible(line) + "\n" for line in item.lines)
            continue
        width = len(str(item.end_line))
        marks: dict[int, list[str]] = {}
        for line, label in item.parts:
            marks.setdefault(max(line, item.start_line), []).append(label)
        for line, heading in item.headings:
            marks.setdefault(line, []).append(heading)
        for number, text in enumerate(item.lines, start=item.start_line):
            if number in marks:
                mark = f"{'':>{width}}  ── {visible(' · '.join(marks[number]))}"
                out.write((click.style(mark, fg="cyan") if coloured else mark) + "\n")
            gutter = f"{number:>{width}}"
            out.write(f"{click.style(gutter, dim=True) if coloured else gutter}  {visible(text)}\n")
