from pathlib import Path

import pytest

from oboyu.documents.extract import extract
from oboyu.documents.extracted import split_lines
from oboyu.documents.filetypes import file_type_for

MARKDOWN = """---
title: "会議メモ"
tags: [a, b]
---
# 週次ミーティング

今日の議題は三つ。
二行目の段落。

## 決定事項
- 資料を作る

```python
# not a heading
print(1)
```

Setext Heading
--------------
本文です。
"""


def test_markdown_structure() -> None:
    doc = extract(MARKDOWN, "markdown")
    assert doc.title == "会議メモ"
    headings = [(b.heading_level, b.text, b.start_line) for b in doc.blocks if b.heading_level]
    assert headings == [(1, "週次ミーティング", 5), (2, "決定事項", 10), (2, "Setext Heading", 18)]
    code = [b for b in doc.blocks if b.kind == "code"]
    assert len(code) == 1 and "# not a heading" in code[0].text
    para = next(b for b in doc.blocks if b.text.startswith("今日"))
    assert (para.start_line, para.end_line) == (7, 8)
    for block in doc.blocks:
        if block.kind != "heading":
            assert doc.text[block.start_char : block.end_char] == block.text


def test_markdown_title_falls_back_to_first_h1() -> None:
    assert extract("intro\n\n# 見出し\n\nbody\n", "markdown").title == "見出し"


def test_html_keeps_only_visible_text() -> None:
    html = """<html><head><title>テスト</title><style>p { color: red }</style>
<script>var secret = "do not index";</script></head>
<body><h1>見出し</h1><p>最初の段落。<b>太字</b>も含む。</p>
<noscript>no script text</noscript><p>second&nbsp;para &amp; more</p></body></html>"""
    doc = extract(html, "html")
    assert doc.title == "テスト"
    joined = "\n".join(b.text for b in doc.blocks)
    assert "secret" not in joined and "color" not in joined and "no script" not in joined
    assert "最初の段落。太字も含む。" in joined
    assert "second para & more" in joined
    # lines are those of the text shown (previews and `read` show the page's text, not its markup)
    assert doc.blocks[0].heading_level == 1 and doc.blocks[0].start_line == 1
    assert doc.text.split("\n")[doc.blocks[1].start_line - 1] == "最初の段落。太字も含む。"


def test_rst_headings_by_adornment() -> None:
    rst = "=====\nTitle\n=====\n\nIntro.\n\nSection\n-------\nBody.\n\nSub\n~~~\nMore.\n"
    doc = extract(rst, "rst")
    assert [(b.heading_level, b.text) for b in doc.blocks if b.heading_level] == [(1, "Title"), (2, "Section"), (3, "Sub")]
    assert doc.title == "Title"


def test_file_types() -> None:
    assert file_type_for(Path("a.MD")) == "markdown"
    assert file_type_for(Path("a.htm")) == "html"
    assert file_type_for(Path("a.py")) == "code"
    assert file_type_for(Path("a.png")) is None
    assert file_type_for(Path("memo.txt ")) == "text"  # a trailing space (a fuzzing trial: "add .txt  to file_types")


def test_html_without_head_end_tag_and_svg_titles() -> None:
    doc = extract("<html><head><title>Page</title><body><p>hello</p><svg><title>icon</title></svg><p>world</p>", "html")
    assert doc.title == "Page"
    assert [b.text for b in doc.blocks] == ["hello", "world"]


def test_markdown_fences_rules_and_front_matter_lookalikes() -> None:
    doc = extract("---\n\nnot front matter\n\n---\n\n```\ncode\n```python\nstill code\n```\n\nafter\n", "markdown")
    assert doc.title is None
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("text", "not front matter"),
        ("code", "```\ncode\n```python\nstill code\n```"),
        ("text", "after"),
    ]


def test_lines_end_at_cr_lf_and_crlf_only() -> None:
    assert split_lines("a\r\nb\rc\n\x0cd\n") == ["a", "b", "c", "\x0cd"]
    doc = extract("first.\r\rsecond.\r\n\r\nthird.\n", "text")
    assert [(b.text, b.start_line) for b in doc.blocks] == [("first.", 1), ("second.", 3), ("third.", 5)]


def test_utf16_without_a_bom_or_cut_after_an_odd_byte_is_read() -> None:
    """A fuzzing trial: UTF-16 without a byte-order mark was skipped as binary (its ASCII leaves
    NULs), and UTF-16 with one and a stray last byte lost the whole file."""
    import codecs
    import random

    from oboyu.documents.extract import extract_file
    from oboyu.documents.extracted import Unextractable

    text = "# 買い物メモ\n\n牛乳と卵、それから食パン。\n週末は　市場へ行く。\nEnglish words too.\n"
    for encoding in ("utf-16-le", "utf-16-be"):
        extracted, said = extract_file(text.encode(encoding), "markdown", "memo.md")
        assert "食パン" in extracted.text and said == f"{encoding} (no byte-order mark)"
    extracted, said = extract_file(codecs.BOM_UTF16_LE + text.encode("utf-16-le") + b"x", "text", "memo.txt")
    assert "市場へ行く" in extracted.text and said == "utf-16-le (invalid bytes replaced)"
    noise = random.Random(5).randbytes(4000) + b"\0" * 8  # NULs, and no text in either byte order
    with pytest.raises(Unextractable, match="binary file"):
        extract_file(noise, "text", "blob")
