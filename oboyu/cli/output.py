"""How results reach stdout: colour and terminal hyperlinks (only on a terminal that wants them),
and `oboyu query --format`: text, json, jsonl, csv, md, files, files0.

Hyperlinks are OSC 8 (ESC ] 8 ; ; URL ST text ESC ] 8 ; ; ST), written where colour is: stdout
a terminal, no NO_COLOR, TERM not `dumb`, as ripgrep and `ls --hyperlink=auto` decide, and
not on the Linux console (TERM=linux), which does not implement them; NO_TERM_HYPERLINKS turns
them off alone (GNU libtextstyle's variable). The URL is `file://HOST/PATH` (the host, as the
spec asks, so that a terminal reached over SSH does not open a local file of the same name), with
`#LINE` only in kitty, the one terminal that opens a file URL at its fragment's line
(ripgrep's `kitty` format); a fragment would make others open nothing."""

from __future__ import annotations

import csv
import json
import os
import re
import socket
import sys
import urllib.parse
from collections.abc import Mapping
from typing import TextIO

import click

from oboyu.search.query import UNLIKELY, Result, unlikely_from
from oboyu.text import json_safe, visible, visible_name, visible_pieces

UNLIKELY_DIVIDER = f"── {UNLIKELY} ──"
FORMATS = ("text", "json", "jsonl", "csv", "md", "files", "files0")
CSV_COLUMNS = ("rank", "score", "path", "start_line", "end_line", "location", "heading", "title", "snippet",
               "chunk_id", "weak", "across_languages")


def colour(stream: TextIO, env: Mapping[str, str] = os.environ) -> bool:
    """Escape sequences (colour, hyperlinks) are for a person's terminal only."""
    return stream.isatty() and "NO_COLOR" not in env and env.get("TERM") != "dumb"


def hyperlinks(stream: TextIO, env: Mapping[str, str] = os.environ) -> bool:
    return colour(stream, env) and env.get("TERM") != "linux" and "NO_TERM_HYPERLINKS" not in env


def file_url(path: str, line: int | None = None, env: Mapping[str, str] = os.environ) -> str:
    """`file://HOST/PATH` (every byte outside a plain name percent-encoded: a control character in
    a name never reaches the terminal raw), `#LINE` in kitty."""
    if sys.platform == "win32":  # file:///C:/Users/...: Windows terminals take no host
        where = "/" + urllib.parse.quote(path.replace("\\", "/"), safe="/:")
        url = f"file://{where}"
    else:
        url = f"file://{urllib.parse.quote(socket.gethostname())}{urllib.parse.quote(os.fsencode(path), safe='/')}"
    kitty = env.get("TERM") == "xterm-kitty" or "KITTY_WINDOW_ID" in env
    return f"{url}#{line}" if line and kitty else url


def link(text: str, url: str | None) -> str:
    """`text` as a hyperlink to `url`; as it is when `url` is None."""
    return f"\x1b]8;;{url}\x1b\\{text}\x1b]8;;\x1b\\" if url else text


def highlight(text: str, spans: list[tuple[int, int]], coloured: bool = True) -> str:
    """Text from a file, its control characters made visible (piece by piece: a visible form may
    be longer than the character), matched words in bold yellow when `coloured`."""
    return "".join(click.style(piece, fg="yellow", bold=True) if matched and coloured else piece
                   for piece, matched in visible_pieces(text, spans))


def not_on_disk(results: list[Result]) -> set[str]:
    """The results' paths no longer where they were indexed: looked at once, for the text's marks
    and the note that says why (`missing.say_missing`)."""
    return {r.path for r in results if not os.path.lexists(r.path)}


def write_results(results: list[Result], output_format: str, explain: bool = False, out: TextIO | None = None,
                  env: Mapping[str, str] | None = None, missing: set[str] | None = None) -> None:
    """Results in one of FORMATS on `out` (stdout), styled for a terminal whose variables are `env`;
    `missing`: those not on disk (`not_on_disk`, looked at here when not given)."""
    out = out if out is not None else sys.stdout
    env = env if env is not None else os.environ
    if output_format == "json":
        out.write(json_safe(json.dumps([r.to_json() for r in results], ensure_ascii=False, indent=2)) + "\n")
    elif output_format == "jsonl":
        for r in results:
            out.write(json_safe(json.dumps(r.to_json(), ensure_ascii=False)) + "\n")
    elif output_format == "csv":
        _write_csv(results, out)
    elif output_format == "md":
        out.writelines(_markdown(r) + "\n" for r in results)
    elif output_format in ("files", "files0"):
        _write_files(results, out, end=b"\0" if output_format == "files0" else b"\n")
    else:
        _write_text(results, explain, out, env, not_on_disk(results) if missing is None else missing)


def _write_text(results: list[Result], explain: bool, out: TextIO, env: Mapping[str, str], missing: set[str]) -> None:
    coloured, linked = colour(out, env), hyperlinks(out, env)
    tail = unlikely_from(results)
    for number, r in enumerate(results, start=1):  # numbered as listed (a weak result's rank may be higher)
        if number - 1 == tail and tail < sum(not s.weak for s in results):
            divider = UNLIKELY_DIVIDER
            out.write(f"    {click.style(divider, dim=True) if coloured else divider}\n")
        location = link(visible_name(r.location), file_url(r.path, r.start_line, env) if linked else None)
        weak = "  (weak)" if r.weak else ""
        gone = "  (missing)" if r.path in missing else ""  # the stderr note says why, once
        out.write(f"{number:>2}. {r.readable_score:>5}{weak}  {click.style(location, bold=True) if coloured else location}"
                  f"{click.style(gone, fg='yellow') if coloured and gone else gone}\n")
        heading = visible(r.heading or r.title or "")
        if r.other_matches:
            heading = f"{heading}  (+{r.other_matches} more in this file)" if heading else f"(+{r.other_matches} more in this file)"
        if heading:
            out.write(f"    {click.style(heading, fg='cyan') if coloured else heading}\n")
        if r.copies:  # the same content at other paths: one answer
            same = "same as " + ", ".join(visible_name(path) for path in r.copies)
            out.write(f"    {click.style(same, dim=True) if coloured else same}\n")
        out.write(f"    {highlight(r.snippet, r.matches, coloured)}\n")
        if explain:
            legs = ", ".join(
                f"{leg} rank {r.ranks[leg] if r.ranks[leg] else '-'} score {r.leg_scores[leg] if r.leg_scores[leg] is not None else '-'}"
                for leg in r.ranks
            )
            evidence = ", ".join(f"{name} {value:g}" for name, value in r.evidence.items())
            out.write(f"    [{r.mode}: {legs}; fused {r.ranking_score:g}; evidence: {evidence}]\n")


def _write_csv(results: list[Result], out: TextIO) -> None:
    """A header row, then a row a result; text made visible (a newline in a snippet is ␊, so a row
    is a line)."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in results:
        writer.writerow([r.rank, r.confidence, visible(r.path), r.start_line, r.end_line, r.part, visible(r.heading),
                         visible(r.title or ""), visible(r.snippet), r.chunk_id, "true" if r.weak else "false",
                         "true" if r.across_languages else "false"])


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<~])")  # emphasis, links, code, HTML, strike-through
_BLOCK_START = re.compile(r"^(\d*)([-+=#>.)])")  # at a line's start: a list, a heading, a quote


def _markdown(r: Result) -> str:
    """A list item to paste into notes: `path:line` (and the page or slide), the heading path, and
    the snippet on the next line; Markdown's characters escaped so that a snippet renders as written."""
    where = visible_name(f"{r.path}:{r.start_line}")
    fence = "``" if "`" in where else "`"
    item = f"- {fence}{where}{fence}" + (f" ({r.part})" if r.part else "")
    if heading := (r.heading or r.title or ""):
        item += " " + _MARKDOWN_SPECIAL.sub(r"\\\1", visible(heading))
    if r.weak:
        item += " *(weak)*"
    snippet = _MARKDOWN_SPECIAL.sub(r"\\\1", visible(" ".join(r.snippet.split())))
    snippet = _BLOCK_START.sub(r"\1\\\2", snippet)
    return f"{item}\n  {snippet}" if snippet else item


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # and bidi controls, as visible()


def _write_files(results: list[Result], out: TextIO, end: bytes = b"\n") -> None:
    """Each result's file once, in rank order, for xargs and editors: one a line, or each ended by
    NUL (`files0`, for `xargs -0`). Piped, a name is written as the system's bytes (a Shift_JIS
    name reaches the editor intact); one a line, a name that holds a control character (a newline
    would make it two names) is made visible, as is every name on a terminal."""
    paths = list(dict.fromkeys(r.path for r in results))
    if out.isatty():
        out.writelines(visible_name(path) + "\n" for path in paths)
        return
    out.flush()
    raw = out.buffer
    for path in paths:
        raw.write((visible(path).encode("utf-8") if end == b"\n" and _CONTROL.search(path) else os.fsencode(path)) + end)
    raw.flush()
