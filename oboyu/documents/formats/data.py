"""Files whose text sits inside a structure: JSON (its strings, each under its key path),
Jupyter notebooks (Markdown and code cells, not outputs; each cell a part) and RTF (through
striprtf, BSD-3-Clause, with the code page the file declares)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from oboyu.documents.decoding import UndecodableError, decode
from oboyu.documents.extracted import Extracted, Unextractable
from oboyu.documents.formats.builder import TextBuilder
from oboyu.documents.markup import parse_markdown

MAX_JSON_DEPTH = 64
_RTF_CODEPAGE = re.compile(rb"\\ansicpg(\d+)")
# font charsets that striprtf names by Mac codecs Python does not have (mac_japanese, ...: a
# LookupError at the font's first byte), as the Windows charset of the same script
_RTF_FCHARSET = re.compile(rb"\\fcharset(\d+)")
_MAC_FCHARSETS = {b"78": b"128", b"79": b"136", b"80": b"129", b"82": b"177", b"85": b"134", b"86": b"238",
                  b"87": b"204", b"88": b"222", b"89": b"238"}


def _text(data: bytes) -> tuple[str, str]:
    try:
        decoded = decode(data)
    except UndecodableError as exc:
        raise Unextractable(f"cannot decode: {exc}") from exc
    return decoded.text, decoded.encoding


def _load_json(text: str, kind: str):
    try:
        # integers stay as written: int() refuses one of over 4,300 digits (ValueError), and the
        # text is what is indexed anyway
        return json.loads(text, parse_int=str)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise Unextractable(f"malformed {kind}: {exc}") from exc


def extract_json(data: bytes) -> tuple[Extracted, str]:
    """Each string, number or boolean as `key.path: value`, one line each, a paragraph per
    top-level entry."""
    text, encoding = _text(data)
    value = _load_json(text, "JSON")
    out = TextBuilder()
    if isinstance(value, dict):
        entries = list(value.items())
    elif isinstance(value, list):
        entries = [(f"[{i}]", item) for i, item in enumerate(value)]
    else:
        entries = [("", value)]
    for key, item in entries:
        out.paragraph("\n".join(f"{path}: {leaf}" if path else leaf for path, leaf in _leaves(item, str(key), 0)))
    return out.build(), encoding


def _leaves(value, path: str, depth: int) -> Iterator[tuple[str, str]]:
    if depth > MAX_JSON_DEPTH:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]", depth + 1)
    elif isinstance(value, str):
        if value.strip():
            yield path, " ".join(value.split())
    elif value is not None:
        yield path, json.dumps(value)


def extract_notebook(data: bytes) -> tuple[Extracted, str]:
    text, encoding = _text(data)
    notebook = _load_json(text, "notebook")
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):  # nbformat 3 kept cells in worksheets
        sheets = notebook.get("worksheets") if isinstance(notebook, dict) else None
        cells = [c for s in _list(sheets) if isinstance(s, dict) for c in _list(s.get("cells"))]
    out = TextBuilder()
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", cell.get("input", ""))
        source = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else str(source or "")
        if not source.strip():
            continue
        out.part(number)
        if cell.get("cell_type") == "markdown":
            for block in parse_markdown(source).blocks:
                if block.heading_level:
                    out.heading(block.text, block.heading_level)
                else:
                    out.paragraph(block.text, block.kind)
        elif cell.get("cell_type") in ("code", "raw"):
            out.paragraph(source, "code")
    return out.build(), encoding


def _list(value) -> list:
    """A list where the notebook has one; nothing where a damaged one has a number or a string."""
    return value if isinstance(value, list) else []


def extract_rtf(data: bytes) -> tuple[Extracted, str]:
    from striprtf.striprtf import rtf_to_text

    if not data.lstrip().startswith(b"{\\rtf"):
        raise Unextractable("not an RTF file (no {\\rtf header)")
    match = _RTF_CODEPAGE.search(data[:4096])
    codepage = f"cp{int(match.group(1))}" if match else "cp1252"
    try:
        "".encode(codepage)
    except LookupError:
        codepage = "cp1252"
    data = _RTF_FCHARSET.sub(lambda m: b"\\fcharset" + _MAC_FCHARSETS.get(m.group(1), m.group(1)), data)
    try:
        text = rtf_to_text(data.decode("latin-1"), encoding=codepage, errors="replace")
    except (ValueError, IndexError, RecursionError, OverflowError, TypeError) as exc:  # \u99999999999?, \uc with no number
        raise Unextractable(f"malformed RTF: {exc}") from exc
    out = TextBuilder()
    for paragraph in re.split(r"\n\s*\n|\n", text):
        out.paragraph(paragraph)
    return out.build(), codepage
