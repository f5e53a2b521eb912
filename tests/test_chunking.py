import itertools

from oboyu.documents.chunking import MAX_TOKENS, Chunker, split_sentences
from oboyu.documents.extract import extract
from oboyu.models.embedding import Embedder


def test_sentence_split_japanese_and_english() -> None:
    text = "今日は晴れ。明日は雨！本当？「はい。」と答えた。Hello world. Version 1.2 is out! Next"
    sentences = [text[s:e] for s, e in split_sentences(text)]
    assert sentences == ["今日は晴れ。", "明日は雨！", "本当？", "「はい。」と答えた。", "Hello world.", "Version 1.2 is out!", "Next"]


def test_chunks_respect_headings_size_and_lines(embedder: Embedder) -> None:
    body = "\n".join(f"これは{i}番目の文で、検索のテストに使う長めの文章です。" for i in range(120))
    last = "最後の段落は見出しBの下にあり、一つの文だけで独立した意味を持つように十分な長さで書かれている。"
    text = f"# 見出しA\n\n{body}\n\n## 小見出しB\n\n{last}\n"
    chunker = Chunker(embedder.count_tokens, embedder.split_by_tokens, target_tokens=128)
    chunks = chunker.chunk(extract(text, "markdown"))
    assert len(chunks) > 5
    assert {c.heading for c in chunks} == {"見出しA", "見出しA > 小見出しB"}
    lines = text.split("\n")
    for c in chunks:
        assert text[c.start_char : c.end_char] == c.text
        assert embedder.count_tokens([c.text])[0] <= 128 + 40
        assert lines[c.start_line - 1].strip() and c.text.startswith(lines[c.start_line - 1].strip()[:5])
    first_section = [c for c in chunks if c.heading == "見出しA"]
    # one sentence of overlap between neighbours
    for a, b in itertools.pairwise(first_section):
        assert b.start_char < a.end_char
    expected_line = lines.index(last) + 1
    assert chunks[-1].text == last and chunks[-1].start_line == chunks[-1].end_line == expected_line


def test_a_section_too_short_to_mean_anything_joins_the_next(embedder: Embedder) -> None:
    decisions = "来期の予算案は原案どおり承認され、四月から新しい勤怠システムを全社で導入することが決まった。"
    text = f"# 議事録\n\n## 出席者\n\n田中、佐藤\n\n## 決定事項\n\n{decisions}\n\n## 次回\n\n五月十日\n"
    chunks = Chunker(embedder.count_tokens, embedder.split_by_tokens).chunk(extract(text, "markdown"))
    # the attendees join the decisions, and the last short section joins the one before it
    assert len(chunks) == 1
    assert chunks[0].heading == "議事録 > 出席者"
    assert chunks[0].text.startswith("田中、佐藤") and chunks[0].text.endswith("五月十日")
    assert text[chunks[0].start_char : chunks[0].end_char] == chunks[0].text


def test_a_huge_line_is_cut_at_token_boundaries(embedder: Embedder) -> None:
    text = "あ" * 50_000 + "🍣" * 3000
    chunks = Chunker(embedder.count_tokens, embedder.split_by_tokens).chunk(extract(text, "text"))
    assert "".join(c.text for c in chunks) == text
    counts = embedder.count_tokens([c.text for c in chunks])
    # even pieces: a piece counted alone can take a token more, and was cut again into 440 and 1
    assert max(counts) <= MAX_TOKENS and min(counts) >= MAX_TOKENS // 2


def test_a_long_line_of_clauses_is_cut_between_them(embedder: Embedder) -> None:
    """A user trial's one-line 96 KB log became 95 passages, 40 of them one to three characters
    (値, 、, 09) that came first for any query, nonsense included."""
    clauses = [f"項目{i}は値{i * 7}である" for i in range(3000)]
    text = "ログ出力:" + "、".join(clauses) + "。最後に、金庫の暗証番号は4071です。"
    chunks = Chunker(embedder.count_tokens, embedder.split_by_tokens).chunk(extract(text, "text"))
    counts = embedder.count_tokens([c.text for c in chunks])
    assert max(counts) <= MAX_TOKENS and min(counts) >= 32
    assert all(text[c.start_char : c.end_char] == c.text for c in chunks)
    assert all(c.text.endswith(("、", "。", "である")) for c in chunks)  # between clauses, never inside a word
    assert all(a.start_char < b.start_char <= a.end_char for a, b in itertools.pairwise(chunks))  # nothing skipped
    assert chunks[0].start_char == 0 and chunks[-1].end_char == len(text)


def test_line_numbers_with_classic_mac_line_ends(embedder: Embedder) -> None:
    text = "first para.\r\rsecond para.\r\rthird.\r"
    chunks = Chunker(embedder.count_tokens, embedder.split_by_tokens, target_tokens=4).chunk(extract(text, "text"))
    assert [(c.text, c.start_line) for c in chunks] == [("first para.", 1), ("second para.", 3), ("third.", 5)]


def test_a_file_of_headings_only_still_gets_a_chunk(embedder: Embedder) -> None:
    chunker = Chunker(embedder.count_tokens, embedder.split_by_tokens)
    text = "# 買い物リスト\n\n## 野菜\n\n## 果物\n"
    (chunk,) = chunker.chunk(extract(text, "markdown"))
    assert chunk.text == text[chunk.start_char : chunk.end_char] == "# 買い物リスト\n\n## 野菜\n\n## 果物"
    assert (chunk.start_line, chunk.end_line) == (1, 5)
    assert chunker.chunk(extract("", "markdown")) == []


def test_a_passage_of_punctuation_alone_is_left_out(embedder: Embedder) -> None:
    """Its vector lies near every query's: a file holding only 、 was the good match of asdf qwer."""
    chunker = Chunker(embedder.count_tokens, embedder.split_by_tokens)
    assert chunker.chunk(extract("、", "text")) == []
    assert chunker.chunk(extract("---\n\n* * *\n", "markdown")) == []
    assert [c.text for c in chunker.chunk(extract("09", "text"))] == ["09"]
