"""Spreadsheets and delimited text: .xlsx/.xlsm/.xlsb/.xls/.ods through python-calamine (MIT,
Rust's calamine: reads each format's cached formula values, the legacy binary .xls included, and
is several times faster than openpyxl), .csv/.tsv through the standard csv module.

Each row is a record of `header: value` pairs when the first row looks like a header (all text,
no two the same), else its values; a sheet's name heads its rows. Rows are parts, so a result
shows `rows 12-30` of the sheet its heading names.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from collections.abc import Iterable, Iterator
from pathlib import PurePath

from oboyu.documents.decoding import UndecodableError, decode
from oboyu.documents.extracted import Extracted, Unextractable
from oboyu.documents.formats.builder import TextBuilder
from oboyu.documents.formats.containers import OLE_MAGIC, broken_part, open_zip
from oboyu.documents.formats.sheet_spans import check_spans

MAX_ROWS = 200_000  # per file: a log dumped into a sheet is not read past this
MAX_CELL_CHARS = 2_000


def extract_workbook(data: bytes, kind: str) -> Extracted:
    """A workbook; `kind` is its extension, for the messages."""
    try:
        return _read_workbook(data, kind)
    except BaseException as exc:
        # calamine panics on some damaged files (a BIFF record cut short: "slice index starts at
        # 4096 but ends at 3584"), which pyo3 raises as PanicException, a BaseException: past the
        # indexer's `except Exception`, it would stop the whole run
        if type(exc).__name__ != "PanicException":
            raise
        raise Unextractable(f"corrupt {kind} file: {exc}") from exc


def _read_workbook(data: bytes, kind: str) -> Extracted:
    from python_calamine import CalamineError, CalamineWorkbook, PasswordError

    archive = None
    if not data.startswith(OLE_MAGIC):  # .xls is an OLE file; the others are zip archives
        archive = open_zip(data, kind)
        check_spans(archive, kind)
    elif kind != ".xls" and b"E\x00n\x00c\x00r\x00y\x00p\x00t\x00e\x00d\x00P\x00a\x00c\x00k\x00a\x00g\x00e" in data:
        raise Unextractable(f"encrypted {kind} file (needs a password)")
    try:
        book = CalamineWorkbook.from_filelike(io.BytesIO(data))
    except PasswordError as exc:
        raise Unextractable(f"encrypted {kind} file (needs a password)") from exc
    except (CalamineError, ValueError, OSError) as exc:
        broken = broken_part(archive) if archive is not None else None
        raise Unextractable(f"corrupt {kind} file: {broken + ': ' if broken else ''}{exc}") from exc
    out = TextBuilder()
    budget = MAX_ROWS
    try:
        for name in book.sheet_names:
            sheet = book.get_sheet_by_name(name)
            first_row = (sheet.start or (0, 0))[0] + 1  # calamine counts from 0, people from 1
            rows = sheet.iter_rows()
            budget -= _add_table(out, name, _numbered(rows, first_row), budget)
            if budget <= 0:
                break
    except PasswordError as exc:
        raise Unextractable(f"encrypted {kind} file (needs a password)") from exc
    except CalamineError as exc:
        raise Unextractable(f"corrupt {kind} file: {exc}") from exc
    finally:
        book.close()
    return out.build()


def extract_delimited(data: bytes, name: str) -> tuple[Extracted, str]:
    """A .csv or .tsv file (UTF-8, cp932 or UTF-16 as Excel writes them) and its encoding."""
    try:
        decoded = decode(data)
    except UndecodableError as exc:
        raise Unextractable(f"cannot decode: {exc}") from exc
    text = decoded.text
    if PurePath(name).suffix.lower() in (".tsv", ".tab"):
        delimiter = "\t"
    else:
        try:
            delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    out = TextBuilder()
    try:
        _add_table(out, None, ((n, row) for n, row in enumerate(reader, start=1)), MAX_ROWS)
    except csv.Error as exc:
        raise Unextractable(f"malformed CSV: {exc}") from exc
    return out.build(), decoded.encoding


def _numbered(rows: Iterable[list], first: int) -> Iterator[tuple[int, list]]:
    return ((first + i, row) for i, row in enumerate(rows))


def _add_table(out: TextBuilder, name: str | None, rows: Iterator[tuple[int, list]], budget: int) -> int:
    """The rows of one sheet as records; how many rows it read."""
    header: list[str] | None = None
    read = 0
    for number, row in rows:
        if read >= budget:
            break
        read += 1
        cells = [_cell(value) for value in row]
        if not any(cells):
            continue
        if header is None:  # the first non-empty row: a header, or the first record
            if name is not None:
                out.heading(name, 1)
            header = _as_header(cells) or []
            if header:
                out.part(number)
                out.paragraph(" | ".join(c for c in cells if c), kind="row")
                continue
        out.part(number)
        if header:
            pairs = [f"{header[i] if i < len(header) and header[i] else f'#{i + 1}'}: {c}" for i, c in enumerate(cells) if c]
            out.paragraph(" | ".join(pairs), kind="row")
        else:
            out.paragraph(" | ".join(c for c in cells if c), kind="row")
    return read


def _as_header(cells: list[str]) -> list[str] | None:
    """The cells as column names when they look like a header: at least two, all text (not
    numbers or dates), none repeated."""
    named = [c for c in cells if c]
    if len(named) < 2 or len(set(named)) != len(named):
        return None
    if any(_looks_numeric(c) for c in named):
        return None
    return [c.replace("\n", " ") for c in cells]


def _looks_numeric(text: str) -> bool:
    try:
        float(text.replace(",", ""))
        return True
    except ValueError:
        return text[:4].isdigit() and text[4:5] in ("-", "/")  # a date


def _cell(value: object) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ""
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.10g}"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="minutes") if (value.hour, value.minute, value.second) != (0, 0, 0) else value.date().isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    text = str(value).strip()
    return text[:MAX_CELL_CHARS]
