"""How far a workbook's sheets spread, checked before python-calamine reads them. calamine holds a
sheet as the grid from its first value to its last, 32 bytes a cell, and a failed allocation
aborts the process (there is no exception to catch): a fuzzing trial's sheet with values at A1 and
XFD1048576 asked for 549 GB and ended every later run. .xlsx and .xlsm only: .xlsb and .ods
are binary or positioned otherwise, and not checked.

Two steps. First a bound from the rows' and cells' references, searched as bytes (about a quarter
of the reading time of a 100,000-row sheet: 1.3-1.7 s of 5.6-5.8 s, on a loaded machine): enough where every row and cell carries its reference (as
Excel, LibreOffice and the usual libraries write them) and the bound is small. Otherwise the exact
span of the cells that hold a value, with positions implied where a reference is left out (as
calamine counts them; lxml's iterparse, a row at a time): a used range that runs to the last row
(a formatted empty cell at Z1000000) is no reason to refuse a sheet.
"""

from __future__ import annotations

import re
import zipfile

from lxml import etree

from oboyu.documents.extracted import Unextractable
from oboyu.documents.formats.containers import ZIP_ERRORS

MAX_SPANNED_CELLS = 20_000_000  # about 640 MB of calamine's grid
_SCAN_BYTES = 1 << 20
# references, from a literal start the regex engine finds fast: `<c r="XFD1048576"`, `<row r="12"`
_CELL_COLUMN = re.compile(rb'r="([A-Z]{1,3})[0-9]{1,7}"')
_ROW_NUMBER = re.compile(rb'r="([0-9]{1,7})"')
# a row or cell written otherwise than `<row r="..."` / `<c r="...">`: its position may be implied
_BARE = (b"<c>", b"<c/>", b"<row>", b"<row/>")
_OTHER_SPACE = re.compile(rb"<(?:c|row)[\t\r\n]")
_PREFIXED = re.compile(rb"<\w+:(?:worksheet|c|row)[\s>/]")  # a prefix is declared once, at the root
_REFERENCE = re.compile(r"([A-Z]{1,3})([0-9]{1,7})")


def check_spans(archive: zipfile.ZipFile, kind: str) -> None:
    """Refuse a workbook one of whose sheets spans more than MAX_SPANNED_CELLS."""
    for entry in archive.infolist():
        if not (entry.filename.startswith("xl/worksheets/") and entry.filename.endswith(".xml")):
            continue
        try:
            bound = _referenced_bound(archive, entry)
            if bound is not None and bound[0] * bound[1] <= MAX_SPANNED_CELLS:
                continue
            height, width = _value_span(archive, entry)
        except (*ZIP_ERRORS, etree.XMLSyntaxError) as exc:
            raise Unextractable(f"corrupt {kind} file: {entry.filename}: {exc or type(exc).__name__}") from exc
        if height * width > MAX_SPANNED_CELLS:
            raise Unextractable(f"a sheet of this {kind} file spans {height:,} rows × {width:,} columns (over "
                                f"{MAX_SPANNED_CELLS:,} cells: too large to read)")


def _referenced_bound(archive: zipfile.ZipFile, entry: zipfile.ZipInfo) -> tuple[int, int] | None:
    """(rows, columns) between the least and greatest reference, empty cells included: never
    less than calamine's grid. None where some row or cell may have no reference."""
    rows: list[int] = []
    columns: set[bytes] = set()
    carry = b""
    with archive.open(entry) as stream:
        while True:
            chunk = stream.read(_SCAN_BYTES)
            window = carry + chunk
            cut = window.rfind(b"<") if chunk else -1
            window, carry = (window[:cut], window[cut:]) if cut > 0 else (window, b"")  # no tag cut in two
            if not rows and not columns and _PREFIXED.search(window):
                return None
            if (any(bare in window for bare in _BARE) or _OTHER_SPACE.search(window)
                    or window.count(b"<c ") != window.count(b'<c r="') or window.count(b"<row ") != window.count(b'<row r="')):
                return None
            columns.update(_CELL_COLUMN.findall(window))
            found = [int(number) for number in _ROW_NUMBER.findall(window)]
            rows = [min(rows + found), max(rows + found)] if found else rows
            if not chunk:
                break
    if not rows or not columns:
        return (len(rows), len(columns))
    numbers = [_column_number(letters.decode()) for letters in columns]
    return rows[-1] - rows[0] + 1, max(numbers) - min(numbers) + 1


def _value_span(archive: zipfile.ZipFile, entry: zipfile.ZipInfo) -> tuple[int, int]:
    """(rows, columns) from the first cell holding a value to the last, as calamine places them:
    by a reference, else one on from the row or cell before."""
    first_row = first_column = None
    last_row = last_column = 0
    row_number = 0
    with archive.open(entry) as stream:
        for _, row in etree.iterparse(stream, events=("end",), tag="{*}row", resolve_entities=False, no_network=True):
            row_number = _row_of(row.get("r")) or row_number + 1
            column = 0
            for cell in row:
                if not isinstance(cell.tag, str) or etree.QName(cell).localname != "c":
                    continue
                place = _REFERENCE.fullmatch(cell.get("r") or "")
                column, at_row = (_column_number(place[1]), int(place[2])) if place else (column + 1, row_number)
                if any(isinstance(child.tag, str) and etree.QName(child).localname in ("v", "is") for child in cell):
                    first_row = at_row if first_row is None else min(first_row, at_row)
                    first_column = column if first_column is None else min(first_column, column)
                    last_row, last_column = max(last_row, at_row), max(last_column, column)
            row.clear()
            while row.getprevious() is not None:  # rows read are dropped: memory stays a row's
                del row.getparent()[0]
    if first_row is None or first_column is None:
        return 0, 0
    return last_row - first_row + 1, last_column - first_column + 1


def _row_of(reference: str | None) -> int | None:
    return int(reference) if reference and reference.isdigit() else None


def _column_number(letters: str) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - 64
    return number
