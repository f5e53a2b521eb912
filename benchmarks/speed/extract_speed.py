"""Extraction speed per format: files/s and MB/s of `extract_file` (what `oboyu index` runs on
each file before chunking), on generated corpora of real files written by the libraries people's
tools use (the tests' builders in tests/office_files.py), Japanese text of varied length.

    python -m benchmarks.speed.extract_speed [--files 300] [--rounds 3]

Prints a Markdown table; each figure is the median of --rounds passes over the whole corpus.
Needs the test extra (python-docx, openpyxl, odfpy, ebooklib, reportlab).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from benchmarks import harness
from benchmarks.corpora import office_files as make
from oboyu.documents.extract import extract_file
from oboyu.documents.filetypes import file_type_for

SENTENCES = [
    "来期の予算案は原案どおり承認された。", "新しい勤怠システムは四月から全社で使う。", "会議室の予約は前日までに済ませること。",
    "取引先への見積書は金曜までに送付する。", "在庫の棚卸しは月末の土曜日に行う。", "健康診断の結果は人事部に提出する。",
    "The quarterly report is due next Friday.", "出張の精算には領収書の原本が必要になる。",
]


def paragraph(rng: random.Random) -> str:
    return "".join(rng.choice(SENTENCES) for _ in range(rng.randint(2, 8)))


def corpus(rng: random.Random, files: int) -> dict[str, Callable[[int], tuple[str, bytes]]]:
    """For each format: a maker of file number i."""

    def docx(i: int) -> tuple[str, bytes]:
        sections = [(f"第{s}節", [paragraph(rng) for _ in range(rng.randint(2, 12))]) for s in range(rng.randint(1, 15))]
        return f"{i}.docx", make.docx_bytes(f"文書{i}", sections, table=[["項目", "担当"], ["予算", "経理部"]])

    def xlsx(i: int) -> tuple[str, bytes]:
        rows = [["日付", "店舗", "売上高", "備考"]] + [[f"2025-04-{d % 28 + 1:02d}", f"店舗{d % 40}", d * 1000, rng.choice(SENTENCES)]
                                               for d in range(rng.choice([20, 100, 500, 2000]))]
        return f"{i}.xlsx", make.xlsx_bytes({"売上": rows, "メモ": [[paragraph(rng)]]})

    def pptx(i: int) -> tuple[str, bytes]:
        return f"{i}.pptx", make.pptx_bytes([(f"スライド{s}", paragraph(rng), rng.choice(SENTENCES)) for s in range(rng.randint(3, 30))])

    def odt(i: int) -> tuple[str, bytes]:
        return f"{i}.odt", make.odt_bytes(f"文書{i}", [paragraph(rng) for _ in range(rng.randint(5, 80))], note="注記")

    def ods(i: int) -> tuple[str, bytes]:
        return f"{i}.ods", make.ods_bytes([["氏名", "部署"]] + [[f"社員{r}", rng.choice(["総務", "経理", "営業"])] for r in range(rng.choice([20, 200, 1000]))])

    def epub(i: int) -> tuple[str, bytes]:
        chapters = [(f"第{c}章", "".join(f"<p>{paragraph(rng)}</p>" for _ in range(rng.randint(5, 40)))) for c in range(rng.randint(2, 12))]
        return f"{i}.epub", make.epub_bytes(f"本{i}", chapters)

    def eml(i: int) -> tuple[str, bytes]:
        return f"{i}.eml", make.eml_iso2022jp(f"件名{i}", "\n\n".join(paragraph(rng) for _ in range(rng.randint(1, 10))))

    def csv(i: int) -> tuple[str, bytes]:
        rows = "\r\n".join(f"社員{r},{rng.choice(['総務', '経理'])},{rng.choice(SENTENCES)}" for r in range(rng.choice([20, 500, 5000])))
        return f"{i}.csv", ("氏名,部署,メモ\r\n" + rows).encode("cp932")

    def pdf(i: int) -> tuple[str, bytes]:
        return f"{i}.pdf", make.pdf_bytes_japanese([rng.choice(SENTENCES) + "\n" + rng.choice(SENTENCES) for _ in range(rng.randint(1, 20))])

    def html(i: int) -> tuple[str, bytes]:
        body = "".join(f"<h2>節{s}</h2><p>{paragraph(rng)}</p>" for s in range(rng.randint(2, 40)))
        page = f"<html><head><title>ページ{i}</title></head><body><nav><a href='/'>ホーム</a></nav><main>{body}</main></body></html>"
        return f"{i}.html", page.encode()

    return {"docx": docx, "xlsx": xlsx, "pptx": pptx, "odt": odt, "ods": ods, "epub": epub, "eml": eml, "csv": csv, "pdf": pdf, "html": html}


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(17)
    print(f"{args.files} files per format, median of {args.rounds} rounds\n")
    print(harness.table_head(["format", "files", "MB", "files/s", "MB/s", "chars extracted"], "lrrrrr"))
    for name, maker in corpus(rng, args.files).items():
        files = [maker(i) for i in range(args.files)]
        size = sum(len(data) for _, data in files)
        passes = [harness.timed(lambda: sum(len(extract_file(data, file_type_for(Path(fname)) or "", fname)[0].text) for fname, data in files))
                  for _ in range(args.rounds)]
        chars, median = passes[-1][0], harness.median(took for _, took in passes)
        print(harness.table_row([name, len(files), f"{size / 1e6:.1f}", f"{len(files) / median:,.0f}", f"{size / 1e6 / median:.1f}", f"{chars:,}"]),
              flush=True)


if __name__ == "__main__":
    main()
