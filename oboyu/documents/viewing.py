"""The text a person is shown for an indexed file: what the indexer read from it, so that a
result's lines (and its pages, slides, rows) point into what a preview or MCP `read` shows. For
Markdown, text and code that is the file itself; for a PDF, a workbook or a mail, its extracted
text, never the file's bytes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from oboyu.documents.chunking import heading_path, under_heading
from oboyu.documents.decoding import read_regular_file
from oboyu.documents.extract import extract_file
from oboyu.documents.extracted import Extracted, Unextractable, split_lines
from oboyu.documents.filetypes import SNIFF_BYTES, file_type_for, part_location, sniffed_type, unsupported_reason
from oboyu.errors import OboyuError


@dataclass(frozen=True)
class Shown:
    """A file's text as lines, its type, and where each part (page, slide, ...) starts."""

    lines: list[str]
    file_type: str
    parts: list[tuple[int, str]]  # (first line, `p. 3`)
    headings: list[tuple[int, str]]  # (the heading's line, its path: `確定申告 > 準備`)


def read_document(path: str | os.PathLike, max_bytes: int, file_type: str | None = None,
                  follow_symlinks: bool = True) -> Shown:
    """A file's text as the indexer extracts it; ordinary failures raise OboyuError, one line."""
    try:
        data, _ = read_regular_file(path, max_bytes, follow_symlinks)
    except OSError as exc:
        raise OboyuError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise OboyuError(f"{path} is larger than {max_bytes // (1024 * 1024)} MB")
    name = Path(path)
    kind = file_type or file_type_for(name)
    if kind == "text" and not name.suffix:
        kind = sniffed_type(data[:SNIFF_BYTES])
    if kind is None:
        raise OboyuError(f"{path}: {unsupported_reason(name) if name.suffix else 'not text'}")
    try:
        extracted, _ = extract_file(data, kind, name.name)
    except Unextractable as exc:
        raise OboyuError(f"{path}: {exc}") from exc
    except Exception as exc:  # a reader's bug on a malformed file: said, not a crash of the app or server
        raise OboyuError(f"cannot extract text from {path}: {type(exc).__name__}: {exc}") from exc
    return Shown(split_lines(extracted.text), kind, _part_lines(extracted, kind), _heading_lines(extracted))


def _heading_lines(extracted: Extracted) -> list[tuple[int, str]]:
    """Where each heading is, with the path of headings it sits under, as passages name them."""
    out: list[tuple[int, str]] = []
    path: list[tuple[int, str]] = []
    for block in extracted.blocks:
        if block.heading_level:
            path = under_heading(path, block)
            out.append((block.start_line, heading_path(path)))
    return out


def _part_lines(extracted: Extracted, file_type: str) -> list[tuple[int, str]]:
    """Each part's first line: newlines counted on from the part before (parts are in text order;
    a fuzzing trial's CSV of 500,000 rows took 158 s when each was counted from the start)."""
    out: list[tuple[int, str]] = []
    line, counted_to = 1, 0
    for offset, number in extracted.parts:
        line += extracted.text.count("\n", counted_to, offset)
        counted_to = offset
        out.append((line, part_location(file_type, number, number)))
    return out
