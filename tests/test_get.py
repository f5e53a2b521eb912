"""`oboyu get`: the text of indexed files (Markdown, a PDF, a .docx, a mail, a name that is not
UTF-8) with line numbers, heading paths and pages; ranges, chunk ids, globs and folders; the size
cap; and the rule that only indexed files inside their indexed folder are read. One small folder
indexed once for the module, read by the real command."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import Done, oboyu_in_process, run_oboyu
from office_files import docx_bytes, eml_iso2022jp
from pdfs import make_pdf

from oboyu.errors import OboyuError
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.retrieve import Request, indexed_real_path, inside_its_root, parse

MEETING = "\n".join([
    "# 週次ミーティング", "",
    "## 議事録の書き方",
    "会議の議事録は、決定事項と担当者と期限を最初にまとめる。",
    "発言の記録は要点だけにして、翌日までに共有フォルダに置く。", "",
    "## 次回の予定",
    "次回は十二月の第一月曜日に開く。",
    "議題は予算と採用の二つ。",
]) + "\n"
SJIS_NAME = os.fsdecode("メモ".encode("cp932") + b".txt")  # as an old archive names it: not UTF-8


@dataclass
class Indexed:
    root: Path
    outside: Path
    db: Path
    env: dict[str, str]


@pytest.fixture
def oboyu(indexed: Indexed, capfd: pytest.CaptureFixture[str]):
    """`oboyu COMMAND --db INDEX ARGS` run by the command's own main() in this process (a child
    process costs 0.7 s of imports a call): exit status, stdout and stderr as a person sees them."""
    def run(command: str, *args: str) -> Done:
        return oboyu_in_process(capfd, command, "--db", str(indexed.db), *args)
    return run


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, cache_dir: Path) -> Indexed:
    base = tmp_path_factory.mktemp("get")
    root = base / "docs"
    notes = root / "notes"
    notes.mkdir(parents=True)
    (notes / "meeting.md").write_text(MEETING, encoding="utf-8")
    (notes / "plan.txt").write_text("引っ越しの計画\n\n段ボールを二十箱用意する。\n", encoding="utf-8")
    (notes / "escape.txt").write_text("端末を乗っ取る文字列 \x1b]0;owned\x07 を含むメモ\n", encoding="utf-8")
    (root / "report.pdf").write_bytes(make_pdf([["Quarterly report", "Sales rose in March."],
                                                ["Costs", "Costs fell by a tenth in April."]]))
    (root / "minutes.docx").write_bytes(docx_bytes("議事録", [("決定事項", ["新しい会計システムを四月に導入する。"]),
                                                           ("宿題", ["佐藤さんが見積もりを集める。"])]))
    (root / "mail.eml").write_bytes(eml_iso2022jp("忘年会のお知らせ", "忘年会は十二月二十日に開きます。"))
    with open(os.fsencode(root) + b"/" + os.fsencode(SJIS_NAME), "w", encoding="utf-8") as handle:
        handle.write("古いアーカイブの予定表\n")
    (root / "changing.txt").write_text("索引の後で書き換えるファイル\n", encoding="utf-8")
    outside = base / "secret.txt"
    outside.write_text("outside the root: password=hunter2\n", encoding="utf-8")
    os.symlink(outside, root / "link.txt")
    db = base / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder, follow_symlinks=True).index([root])
    env = dict(os.environ, OBOYU_CACHE_DIR=str(cache_dir), OBOYU_DB=str(db))
    env.pop("NO_COLOR", None)
    return Indexed(root, outside, db, env)


def test_a_markdown_file_numbered_with_its_heading_paths(indexed: Indexed, oboyu, monkeypatch: pytest.MonkeyPatch) -> None:
    meeting = indexed.root / "notes" / "meeting.md"
    whole = oboyu("get", str(meeting))
    assert whole.returncode == 0, whole.stderr
    lines = whole.stdout.splitlines()
    assert lines[0] == f"==> {meeting}:1-9 <=="
    assert "4  会議の議事録は、決定事項と担当者と期限を最初にまとめる。" in lines
    assert "\x1b" not in whole.stdout  # piped: no colour, no hyperlink
    marks = [line.strip() for line in lines if "──" in line]
    assert "── 週次ミーティング > 議事録の書き方" in marks and "── 週次ミーティング > 次回の予定" in marks
    # each heading marked at its own line (a user trial: marks sat where the passage after it began)
    full = json.loads(oboyu("get", str(meeting), "--json").stdout)[0]
    text_lines = full["text"].split("\n")
    assert [text_lines[h["line"] - 1] for h in full["headings"]] == ["# 週次ミーティング", "## 議事録の書き方", "## 次回の予定"]

    # a range from mid-section says which section it is in; :LINE:COUNT, :START-END (as query prints)
    ranges = oboyu("get", f"{meeting}:8:2", f"{meeting}:5-5", f"{meeting}:7", "--json")
    assert ranges.returncode == 0, ranges.stderr
    first, second, third = json.loads(ranges.stdout)
    assert (first["start_line"], first["end_line"], first["total_lines"]) == (8, 9, 9)
    assert first["text"] == "次回は十二月の第一月曜日に開く。\n議題は予算と採用の二つ。"
    assert first["headings"] == [{"line": 8, "heading": "週次ミーティング > 次回の予定"}]
    assert (second["start_line"], second["end_line"], second["text"]) == (5, 5, "発言の記録は要点だけにして、翌日までに共有フォルダに置く。")
    assert second["headings"][0]["heading"] == "週次ミーティング > 議事録の書き方"
    assert (third["start_line"], third["end_line"]) == (7, 9) and not third["truncated"] and not third["stale"]
    assert set(first) >= {"path", "request", "file_type", "total_lines", "truncated", "parts", "text"}

    # relative to the working directory, -l caps each file, --no-line-numbers gives the text as it is
    monkeypatch.chdir(indexed.root)
    plain = oboyu("get", "--no-line-numbers", "-l", "3", str(Path("notes") / "meeting.md"))
    assert plain.stdout == "# 週次ミーティング\n\n## 議事録の書き方\n"
    assert "lines 1-3 of 9 shown" in plain.stderr and f"{meeting}:4" in plain.stderr


def test_pdf_docx_and_mail_give_their_extracted_text_with_pages(indexed: Indexed, oboyu) -> None:
    root = indexed.root
    done = oboyu("get", str(root / "report.pdf"), str(root / "minutes.docx"), str(root / "mail.eml"), "--json")
    assert done.returncode == 0, done.stderr
    pdf, docx, mail = json.loads(done.stdout)
    assert [p["location"] for p in pdf["parts"]] == ["p. 1", "p. 2"]
    pdf_lines = pdf["text"].split("\n")
    assert pdf_lines[pdf["parts"][1]["line"] - 1].startswith("Costs")
    assert "Sales rose in March." in pdf["text"] and pdf["file_type"] == "pdf"
    assert "新しい会計システムを四月に導入する。" in docx["text"]
    docx_lines = docx["text"].split("\n")
    assert [docx_lines[h["line"] - 1] for h in docx["headings"]][-2:] == ["決定事項", "宿題"]
    assert "忘年会は十二月二十日に開きます。" in mail["text"] and "忘年会のお知らせ" in mail["text"]

    text = oboyu("get", f"{root / 'report.pdf'}:2")  # from mid-page: the page it is on is said
    assert text.returncode == 0, text.stderr
    assert "── p. 1" in text.stdout and "── p. 2" in text.stdout and "%PDF" not in text.stdout


def test_the_location_query_prints_gets_those_parts(indexed: Indexed, oboyu) -> None:
    """A user trial: `query` printed `マニュアル.docx (¶ 5)`, which `get` did not take; and a range
    starting where ¶ 5 starts was headed `── ¶ 4 · ¶ 5`."""
    pdf, docx = indexed.root / "report.pdf", indexed.root / "minutes.docx"
    page = oboyu("get", f"{pdf} (p. 2)", "--json")
    assert page.returncode == 0, page.stderr
    [got] = json.loads(page.stdout)
    assert got["text"].startswith("Costs") and "Sales" not in got["text"] and got["end_line"] == got["total_lines"]
    both = json.loads(oboyu("get", f"{pdf} (pp. 1-2)", f"{pdf} (p. 1)", "--json").stdout)
    assert "Sales" in both[0]["text"] and "Costs" in both[0]["text"]
    assert "Sales" in both[1]["text"] and "Costs" not in both[1]["text"]
    start = json.loads(oboyu("get", f"{docx} (¶ 2)", "--json").stdout)[0]
    assert [p["location"] for p in start["parts"]][:1] == ["¶ 2"]  # not ¶ 1 before it
    missing = oboyu("get", f"{pdf} (p. 9)")
    assert missing.returncode == 2 and "no part 9 (its parts: 1-2)" in missing.stderr


def test_a_result_chunk_id_gets_its_passage(indexed: Indexed, oboyu) -> None:
    hits = json.loads(oboyu("query", "次回の予定", "--mode", "keyword", "--json").stdout)
    hit = next(h for h in hits if h["path"].endswith("meeting.md"))
    for argument in (hit["chunk_id"], "#" + hit["chunk_id"]):
        got = oboyu("get", argument, "--json")
        assert got.returncode == 0, got.stderr
        [passage] = json.loads(got.stdout)
        assert passage["chunk_id"] == hit["chunk_id"] and passage["path"] == hit["path"]
        assert (passage["start_line"], passage["end_line"]) == (hit["start_line"], hit["end_line"])
    gone = oboyu("get", "0123456789abcdef")
    assert gone.returncode == 2 and "no passage with this chunk id" in gone.stderr and gone.stderr.count("\n") == 1


def test_globs_folders_and_the_size_cap_say_what_they_left_out(indexed: Indexed, oboyu) -> None:
    notes = indexed.root / "notes"
    every = oboyu("get", str(notes / "*.md"), str(notes), "--json")
    assert every.returncode == 0, every.stderr
    assert [Path(f["path"]).name for f in json.loads(every.stdout)] == ["meeting.md", "escape.txt", "plan.txt"]
    assert [f["request"] for f in json.loads(every.stdout)] == [str(notes / "*.md"), str(notes), str(notes)]
    deep = json.loads(oboyu("get", str(indexed.root / "**" / "p*.txt"), "--json").stdout)
    assert [Path(f["path"]).name for f in deep] == ["plan.txt"]

    capped = oboyu("get", str(notes / "meeting.md"), str(notes / "plan.txt"), "--max-bytes", "100", "--json")
    assert capped.returncode == 0, capped.stderr
    meeting, plan = json.loads(capped.stdout)
    assert meeting["truncated"] and len(meeting["text"].encode()) <= 100 and meeting["end_line"] == 3
    assert "left_out" in plan and "text" not in plan and "--max-bytes" in plan["left_out"]
    assert f"left out {notes / 'plan.txt'}" in capped.stderr
    # a first line longer than the cap: only its start, said so (a file of one 225 KB line was said
    # as "lines 1-1 of 1 shown" with a next line to go on from that did not exist)
    part = oboyu("get", str(notes / "meeting.md"), "--max-bytes", "10", "--json")
    (cut,) = json.loads(part.stdout)
    assert cut["line_cut"] and cut["end_line"] == 1 and len(cut["text"].encode()) <= 10
    assert "only the first 10 bytes of line 1 shown (--max-bytes)" in part.stderr and ":2` goes on" in part.stderr
    assert "lines 1-1" not in part.stderr

    nothing = oboyu("get", str(notes / "*.pdf"))
    assert nothing.returncode == 1 and "no indexed file there" in nothing.stderr


def test_only_indexed_files_inside_their_folder_and_one_line_errors(indexed: Indexed, oboyu) -> None:
    root = indexed.root
    link = oboyu("get", str(root / "link.txt"))
    assert link.returncode == 2 and "resolves outside its indexed folder" in link.stderr
    assert "hunter2" not in link.stdout + link.stderr
    outside = oboyu("get", str(indexed.outside))
    assert outside.returncode == 2 and "not an indexed file" in outside.stderr and "oboyu status" in outside.stderr
    assert "hunter2" not in outside.stdout
    for argument, says in ((f"{root / 'notes/meeting.md'}:40", "past the end"), (f"{root / 'notes/meeting.md'}:0", "from 1"),
                           (f"{root / 'notes/meeting.md'}:5-2", "ends before it starts"), (str(root / "nowhere.md"), "no such file"),
                           (f"{root / 'notes/meeting.md'}:abc", "'abc' is not a line"),
                           (f"{root / 'notes/meeting.md'}:2:", "'2:' is not a line")):
        bad = oboyu("get", argument)
        assert bad.returncode == 2 and says in bad.stderr, (argument, bad.stderr)
        assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    # one bad argument among good ones: the good are printed, the bad said, exit 2
    mixed = oboyu("get", str(root / "notes/plan.txt"), str(indexed.outside))
    assert mixed.returncode == 2 and "段ボール" in mixed.stdout


def test_names_not_utf8_control_characters_and_a_file_changed_since(indexed: Indexed, oboyu) -> None:
    sjis = os.fsdecode(os.fsencode(indexed.root) + b"/" + os.fsencode(SJIS_NAME))
    shown = run_oboyu(indexed.env, "get", sjis)  # the real command: the name's bytes through argv
    assert shown.returncode == 0, shown.stderr
    assert "\\x83\\x81\\x83\\x82.txt:1-1" in shown.stdout and "古いアーカイブの予定表" in shown.stdout
    [entry] = json.loads(oboyu("get", sjis, "--json").stdout)
    assert os.fsencode(entry["path"]) == os.fsencode(sjis)
    # the name as `query` printed it, copied by a person (a user trial's `get` of it said "no such file")
    printed = oboyu("get", f"{indexed.root}/\\x83\\x81\\x83\\x82.txt:1")
    assert printed.returncode == 0 and "古いアーカイブの予定表" in printed.stdout, printed.stderr
    assert oboyu("get", f"{indexed.root}/\\x83\\x81\\x83\\x83.txt").returncode == 2  # no such name, printed or not

    escape = oboyu("get", str(indexed.root / "notes" / "escape.txt"))
    assert "\x1b" not in escape.stdout and "␛]0;owned␇" in escape.stdout

    changing = indexed.root / "changing.txt"
    changing.write_text("索引の後で書き換えたファイル\n二行目\n", encoding="utf-8")
    stale = oboyu("get", str(changing), "--json")
    assert json.loads(stale.stdout)[0]["stale"] and "changed since it was indexed" in stale.stderr


def test_the_shared_rule_and_the_request_syntax(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    inside = root / "a.md"
    inside.write_text("x", encoding="utf-8")
    (tmp_path / "out.md").write_text("y", encoding="utf-8")
    os.symlink(tmp_path / "out.md", root / "away.md")
    roots = {str(inside): str(root), str(root / "away.md"): str(root)}
    assert indexed_real_path(str(inside), roots.get) == str(inside)
    assert indexed_real_path(str(root / "x" / ".." / "a.md"), roots.get) == str(inside)
    for path, says in ((str(root / "away.md"), "outside"), (str(tmp_path / "out.md"), "not an indexed file"),
                       ("a.md", "absolute"), ("", "invalid"), (f"{inside}\x00", "invalid")):
        with pytest.raises(OboyuError, match=says):
            indexed_real_path(path, roots.get)
    assert inside_its_root(str(inside), str(root)) and not inside_its_root(str(root / "away.md"), str(root))
    assert not inside_its_root(str(inside), None)

    cwd = str(tmp_path)
    assert parse("n.md:3:2", cwd) == Request("n.md:3:2", f"{cwd}/n.md", first=3, last=4)
    assert parse("n.md:3-9", cwd) == Request("n.md:3-9", f"{cwd}/n.md", first=3, last=9)
    assert parse("0123456789abcdef", cwd).chunk_id == "0123456789abcdef"
    (tmp_path / "odd:7").write_text("a name with a colon", encoding="utf-8")
    assert parse("odd:7", cwd) == Request("odd:7", f"{cwd}/odd:7")  # a name that exists is taken whole
    with pytest.raises(OboyuError, match="COUNT"):
        parse("n.md:3:0", cwd)
    pattern = parse("*.md:2", "/tmp/[x]")  # a `[` in the working folder's name is no pattern
    assert pattern.glob and pattern.path == "/tmp/[[]x]/*.md" and pattern.first == 2


def test_a_file_skipped_or_left_out_says_why_it_has_no_text(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: a binary file and a hidden one inside an indexed folder were "not an indexed
    file; `oboyu index FOLDER` adds one", though the folder was indexed."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# メモ\n\n本文。\n", encoding="utf-8")
    (notes / ".private.md").write_text("# 隠し\n\n本文。\n", encoding="utf-8")
    (notes / "data.txt").write_bytes(b"x\x00y" * 100)
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    for name, says in (("data.txt", "skipped when indexed: binary file"), (".private.md", "left out by the walk of notes")):
        done = run_oboyu(oboyu_env, "get", str(notes / name))
        assert done.returncode == 2 and says in done.stderr and "adds one" not in done.stderr, done.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="a name's raw bytes: Linux keeps them as given")
def test_a_name_s_byte_and_a_c1_character_print_apart(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: a name holding the byte 0x9b (not UTF-8) and one holding U+009B printed alike,
    so `get` of the printed name found neither. A C1 character prints as \\u009b, the byte as \\x9b."""
    notes = tmp_path / "notes"
    notes.mkdir()
    with open(os.fsencode(notes) + b"/c1\x9bname.txt", "wb") as file:
        file.write("バイトの名前のメモ。\n".encode())
    (notes / "c1\x9bname.txt").write_text("制御文字の名前のメモ。\n", encoding="utf-8")
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    for printed, says in (("c1\\x9bname.txt", "バイト"), ("c1\\u009bname.txt", "制御文字")):
        got = run_oboyu(oboyu_env, "get", f"{notes}/{printed}")
        assert got.returncode == 0 and says in got.stdout and printed in got.stdout, got.stderr


def test_a_file_whose_folder_moved_says_what_to_do(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial moved an indexed folder: `get` of a result said only "No such file or directory"."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# メモ\n\n本文。\n", encoding="utf-8")
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    chunk = json.loads(run_oboyu(oboyu_env, "query", "メモ", "--json", "--mode", "keyword").stdout)[0]["chunk_id"]
    notes.rename(tmp_path / "moved")
    done = run_oboyu(oboyu_env, "get", chunk)
    assert done.returncode == 2 and f"its folder {notes} is missing" in done.stderr, done.stderr
    assert f"`oboyu remove {notes}` drops" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_moved_folder_s_results_are_marked_and_its_new_place_shown_first(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial moved an indexed folder: `query` listed the old paths unmarked, and once the
    new place was indexed, the old path first with the new one as its copy."""
    notes, moved = tmp_path / "notes", tmp_path / "moved"
    notes.mkdir()
    (notes / "a.md").write_text("# 庭のメモ\n\nトマトの苗を植えた。\n", encoding="utf-8")
    (notes / "b.md").write_text("# 台所のメモ\n\n味噌を買う。\n", encoding="utf-8")
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    notes.rename(moved)
    asked = ("query", "トマト", "--mode", "keyword")
    before = run_oboyu(oboyu_env, *asked)
    assert before.returncode == 0 and f"{notes / 'a.md'}:3-3  (missing)" in before.stdout, before.stdout
    assert "one of these files is no longer where it was indexed" in before.stderr, before.stderr
    indexed = run_oboyu(oboyu_env, "index", str(moved))
    assert indexed.returncode == 0 and (f"notes ({notes}) is missing, and {moved} holds all its files: "
                                        "if it moved, `oboyu remove notes` drops") in indexed.stderr, indexed.stderr
    after = run_oboyu(oboyu_env, *asked)
    first = after.stdout.splitlines()[:3]
    assert first[0].endswith(f"{moved / 'a.md'}:3-3") and first[2].strip() == f"same as {notes / 'a.md'}", after.stdout
    assert "no longer where" not in after.stderr
    assert run_oboyu(oboyu_env, "remove", "notes").returncode == 0
    assert "is missing" not in run_oboyu(oboyu_env, "index", str(moved)).stderr


@pytest.mark.skipif(sys.platform == "win32", reason="Windows names hold no newline nor tab")
def test_a_name_with_a_newline_or_a_tab_is_got_by_a_glob_and_as_printed(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: `get 'folder/**'` left out `new\nline.md`, and its name as `query` printed it
    (`new␊line.md`) was "no such file". A tab printed as blank space, which a copy makes spaces."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "new\nline.md").write_text("# ペンギン\n\nペンギンの観察記録。\n", encoding="utf-8")
    (notes / "tab\tname[1].md").write_text("# カワウソ\n\nカワウソの観察記録。\n", encoding="utf-8")
    (notes / "plain.md").write_text("# メモ\n\n普通のメモ。\n", encoding="utf-8")
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    every = run_oboyu(oboyu_env, "get", f"{notes}/**", "--json")
    assert every.returncode == 0
    assert {Path(e["path"]).name for e in json.loads(every.stdout)} == {"new\nline.md", "tab\tname[1].md", "plain.md"}
    printed = run_oboyu(oboyu_env, "get", f"{notes}/new␊line.md:3")
    assert printed.returncode == 0 and "ペンギンの観察記録" in printed.stdout, printed.stderr
    found = run_oboyu(oboyu_env, "query", "カワウソ", "--mode", "keyword", "-k", "1")
    assert found.returncode == 0 and f"{notes}/tab␉name[1].md:" in found.stdout and "\t" not in found.stdout, found.stdout
    got = run_oboyu(oboyu_env, "get", f"{notes}/tab␉name[1].md")  # a glob character too
    assert got.returncode == 0 and "カワウソの観察記録" in got.stdout, got.stderr


def test_a_name_typed_in_the_other_unicode_form_is_found(tmp_path: Path, oboyu_env: dict) -> None:
    """A user trial: a file named in NFD (as macOS writes names) could not be got by the same
    name typed in NFC (as a keyboard gives it)."""
    import unicodedata

    notes = tmp_path / "notes"
    notes.mkdir()
    decomposed = notes / unicodedata.normalize("NFD", "ガイド.md")
    decomposed.write_text("# ガイド\n\n使い方の説明。\n", encoding="utf-8")
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    typed = str(notes / unicodedata.normalize("NFC", "ガイド.md"))
    assert typed != str(decomposed)
    done = run_oboyu(oboyu_env, "get", typed, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["path"] == str(decomposed)


def test_a_chunk_id_inside_a_long_line_gets_only_its_passage(tmp_path: Path, embedder: Embedder) -> None:
    """A user trial: `get` of a passage of a one-line 96 KB log printed the whole line. Only the
    passage is shown now, on its line's number; an indented line keeps its indent."""
    from oboyu.retrieve import find, read

    notes = tmp_path / "notes"
    notes.mkdir()
    line = "ログ:" + "、".join(f"項目{i}は値{i * 7}である" for i in range(400)) + "。"
    (notes / "log.txt").write_text(f"見出し\n{line}\n    字下げした行の文。\n", encoding="utf-8")
    db = tmp_path / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder).index([notes])
        chunks = store.con.execute("SELECT id, text, start_line FROM chunks ORDER BY ordinal").fetchall()
        assert len(chunks) > 3
        for cid, text, start_line in chunks:
            [excerpt] = read(find(store, [cid]).targets)
            assert excerpt.start_line == start_line
            assert excerpt.text == text
        assert max(len(text) for _, text, _ in chunks) < len(line) // 3
    from oboyu.retrieve import _only_the_passage

    code = ["x = 1", "    def f():", "        return 1  # one", "y = 2"]
    assert _only_the_passage(code[1:3], "def f():\r\n        return 1") == ["    def f():", "        return 1"]
    assert _only_the_passage(code[1:3], "changed since") == code[1:3]


def test_each_part_is_placed_on_its_line() -> None:
    """`get` of a file of many parts (a CSV's rows) counts each part's line on from the one
    before (a fuzzing trial: 500,000 rows took 158 s counted from the start every time)."""
    from oboyu.documents.extracted import Extracted
    from oboyu.documents.viewing import _part_lines

    rows = [f"row {i}" + "\n" * (i % 3) for i in range(200)]
    text, parts, offset = "", [], 0
    for number, row in enumerate(rows, start=1):
        parts.append((offset, number))
        text += row + "\n"
        offset = len(text)
    lines = _part_lines(Extracted(text, parts=parts), "csv")
    assert [line for line, _ in lines] == [text.count("\n", 0, at) + 1 for at, _ in parts]
    assert lines[1][1] != lines[2][1]  # each part named by its own number
