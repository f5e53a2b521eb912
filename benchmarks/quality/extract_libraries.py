"""Which library reads each Office format: speed on the same generated files and what each gets
wrong on Japanese text, beside oboyu's own readers. What decided README's "Why these libraries".

    python -m benchmarks.quality.extract_libraries [--files 100] [--rounds 3]

Workbooks: openpyxl (read-only, cached values) against python-calamine. Word documents: python-docx
(paragraphs and tables) against oboyu's lxml reader, and whether each keeps the base text of a
word with a ruby reading (furigana). OpenDocument text: odfpy against oboyu's reader. Prints a
Markdown table: median seconds over --rounds passes, files/s, and the licence each declares.
Needs the test extra (python-docx, openpyxl, odfpy).
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from importlib import metadata

from benchmarks import harness
from benchmarks.corpora import office_files as make
from oboyu.documents.formats.sheets import extract_workbook
from oboyu.documents.formats.word import extract_docx, extract_odt

SENTENCES = ["来期の予算案は原案どおり承認された。", "新しい勤怠システムは四月から全社で使う。", "出張の精算には領収書の原本が必要になる。"]


def openpyxl_text(data: bytes) -> str:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    text = "\n".join(" | ".join(str(v) for v in row if v is not None) for sheet in book.worksheets for row in sheet.iter_rows(values_only=True))
    book.close()
    return text


def calamine_text(data: bytes) -> str:
    return extract_workbook(data, ".xlsx").text


def python_docx_text(data: bytes) -> str:
    import docx

    document = docx.Document(io.BytesIO(data))
    parts = [p.text for p in document.paragraphs]
    parts += [" | ".join(c.text for c in row.cells) for table in document.tables for row in table.rows]
    return "\n".join(parts)


def odfpy_text(data: bytes) -> str:
    from odf import teletype, text
    from odf.opendocument import load

    document = load(io.BytesIO(data))
    return "\n".join(teletype.extractText(p) for p in document.getElementsByType(text.P) + document.getElementsByType(text.H))


def median_seconds(read: Callable[[bytes], str], files: list[bytes], rounds: int) -> float:
    """Median seconds of reading every file, over `rounds` passes."""
    return harness.median(harness.repeat(lambda: [read(data) for data in files], rounds))


def licence(package: str) -> str:
    meta = metadata.metadata(package)
    declared = meta.get("License-Expression") or (meta.get("License") or "").split("\n")[0][:40]
    classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    return declared or " / ".join(classifiers) or "?"


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(3)
    books = [make.xlsx_bytes({"売上": [["日付", "店舗", "売上高", "備考"]] + [[f"2025-04-{d % 28 + 1:02d}", f"店舗{d % 9}", d * 100, rng.choice(SENTENCES)]
                                                                    for d in range(rng.choice([50, 500, 2000]))]}) for _ in range(args.files)]
    documents = [make.docx_bytes("文書", [(f"節{s}", [rng.choice(SENTENCES) * 3 for _ in range(8)]) for s in range(rng.randint(2, 20))],
                                 table=[["項目", "担当"], ["予算", "経理部"]]) for _ in range(args.files)]
    odts = [make.odt_bytes("文書", [rng.choice(SENTENCES) * 3 for _ in range(rng.randint(10, 120))]) for _ in range(args.files)]
    ruby = make.docx_with_ruby("漢字", "かんじ", "の読み方")
    rows = [
        ("xlsx", "openpyxl", licence("openpyxl"), median_seconds(openpyxl_text, books, args.rounds), "no legacy .xls; formulas without a cached value read as None"),
        ("xlsx", "python-calamine", licence("python-calamine"), median_seconds(calamine_text, books, args.rounds), "also .xls, .xlsb, .ods"),
        ("docx", "python-docx", licence("python-docx"), median_seconds(python_docx_text, documents, args.rounds),
         f"ruby base kept: {'漢字の読み方' in python_docx_text(ruby)}; no footnotes"),
        ("docx", "oboyu (lxml)", licence("lxml"), median_seconds(lambda d: extract_docx(d).text, documents, args.rounds),
         f"ruby base kept: {'漢字の読み方' in extract_docx(ruby).text}; footnotes, comments"),
        ("odt", "odfpy", licence("odfpy"), median_seconds(odfpy_text, odts, args.rounds), ""),
        ("odt", "oboyu (lxml)", licence("lxml"), median_seconds(lambda d: extract_odt(d).text, odts, args.rounds), "footnotes, comments, ruby left out"),
    ]
    print(f"{args.files} files per format, median of {args.rounds} rounds\n")
    print(harness.table(["format", "library", "licence", "seconds", "files/s", "notes"],
                        [(fmt, name, lic, f"{seconds:.2f}", f"{args.files / seconds:,.0f}", notes) for fmt, name, lic, seconds, notes in rows],
                        "lllrrl"))


if __name__ == "__main__":
    main()
