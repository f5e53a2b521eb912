"""Presentations: .pptx through python-pptx (MIT; shapes, groups, tables and speaker notes as
PowerPoint lays them out) and .odp from its OpenDocument XML. Each slide is a part (`slide 3`),
headed by its title, its shapes in reading order (top to bottom, left to right), then its notes."""

from __future__ import annotations

import io

from lxml import etree

from oboyu.documents.extracted import Extracted, Unextractable
from oboyu.documents.formats.builder import TextBuilder
from oboyu.documents.formats.containers import ZIP_ERRORS, broken_part, local_name, open_zip
from oboyu.documents.formats.word import OFFICE, TABLE, TEXT, core_title, odf_content, odf_text

PRESENTATION = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"


def extract_pptx(data: bytes) -> Extracted:
    from pptx import Presentation
    from pptx.exc import PythonPptxError

    archive = open_zip(data, ".pptx")  # the checks; python-pptx opens its own copy
    out = TextBuilder(core_title(archive, "docProps/core.xml", ".pptx"))
    try:  # python-pptx reads parts as it goes: a damaged one surfaces anywhere below
        _add_slides(out, Presentation(io.BytesIO(data)))
    # PythonPptxError: a package it cannot find, or a part without an element the schema requires
    except (PythonPptxError, KeyError, AttributeError, etree.XMLSyntaxError, *ZIP_ERRORS) as exc:
        broken = broken_part(archive) if isinstance(exc, etree.XMLSyntaxError) else None
        raise Unextractable(f"corrupt .pptx file: {broken + ': ' if broken else ''}{exc or type(exc).__name__}") from exc
    return out.build()


def _add_slides(out: TextBuilder, deck) -> None:
    for number, slide in enumerate(deck.slides, start=1):
        out.part(number)
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text.strip() if title_shape is not None and title_shape.has_text_frame else ""
        out.heading(title or f"slide {number}", 1)
        for shape in sorted(_shapes(slide.shapes), key=_reading_order):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    out.paragraph(" | ".join(c.text.replace("\n", " ").strip() for c in row.cells if c.text.strip()), kind="row")
            elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                out.paragraph(shape.text_frame.text)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                out.paragraph(f"[notes] {notes}")


def _shapes(shapes):
    """Every shape, the members of groups included."""
    from pptx.shapes.group import GroupShape

    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _reading_order(shape) -> tuple[int, int]:
    return (shape.top or 0, shape.left or 0)


def extract_odp(data: bytes) -> Extracted:
    root, title = odf_content(data, ".odp")
    out = TextBuilder(title)
    body = root.find(f"{OFFICE}body/{OFFICE}presentation")
    for number, page in enumerate(body.iter(f"{DRAW}page") if body is not None else [], start=1):
        out.part(number)
        frames = [f for f in page if local_name(f) == "frame"]
        titles = [f for f in frames if f.get(f"{PRESENTATION}class") == "title"]
        heading = " ".join(odf_text(p) for f in titles for p in f.iter(f"{TEXT}p")).strip()
        out.heading(heading or page.get(f"{DRAW}name") or f"slide {number}", 1)
        for frame in frames:
            if frame in titles:
                continue
            table = frame.find(f"{TABLE}table")
            if table is not None:
                for row in table.iter(f"{TABLE}table-row"):
                    cells = [" ".join(odf_text(p) for p in c.iter(f"{TEXT}p")) for c in row.iter(f"{TABLE}table-cell")]
                    out.paragraph(" | ".join(c for c in cells if c), kind="row")
            else:
                out.paragraph("\n".join(odf_text(p) for p in frame.iter(f"{TEXT}p", f"{TEXT}h")))
        for notes in page.iter(f"{PRESENTATION}notes"):
            text = "\n".join(odf_text(p) for p in notes.iter(f"{TEXT}p"))
            if text.strip():
                out.paragraph(f"[notes] {text}")
    return out.build()
