"""`oboyu query --format text|json|jsonl|csv|md|files|files0`, `--min-score`, and terminal hyperlinks
(OSC 8, on a real pseudo-terminal), against one small folder indexed once for the module."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from conftest import Done, oboyu_in_process

from oboyu.cli.output import file_url, hyperlinks, link
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.search.query import Result
from oboyu.text import visible

NOTES = {
    "meeting.md": "# 週次ミーティング\n\n## 議事録\n議事録は翌日までに共有フォルダにまとめる。決定事項を先に書く。\n\n"
                  "## 次回\n次回の議事録係は佐藤さん。\n",
    "minutes.txt": "定例会の議事録\n\n予算の議事録を残す。*強調* と [リンク] と <tag> と # 記号。\n",
    "garden.md": "# Tomatoes\n\nWater the tomato plants twice a week.\n",
    "line\nbreak.md": "# 改行のある名前\n\n議事録の写し。\n",
}
SJIS_NAME = "議事録".encode("cp932") + b".txt"  # as an old archive names it: not UTF-8


@dataclass
class Indexed:
    root: Path
    db: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, cache_dir: Path) -> Indexed:
    base = tmp_path_factory.mktemp("formats")
    root = base / "notes"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    with open(os.fsencode(root) + b"/" + SJIS_NAME, "w", encoding="utf-8") as handle:
        handle.write("古い議事録の控え\n")
    db = base / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder).index([root])
    env = dict(os.environ, OBOYU_CACHE_DIR=str(cache_dir), OBOYU_DB=str(db))
    env.pop("NO_COLOR", None)
    env.pop("NO_TERM_HYPERLINKS", None)
    return Indexed(root, db, env)


@pytest.fixture
def oboyu(indexed: Indexed, capfd: pytest.CaptureFixture[str]):
    """`oboyu query --db INDEX ARGS` by the command's own main() in this process."""
    def run(*args: str) -> Done:
        return oboyu_in_process(capfd, "query", "--db", str(indexed.db), *args)
    return run


KEYWORD = ("議事録", "--mode", "keyword", "--all")
CSV_HEADER = ("rank", "score", "path", "start_line", "end_line", "location", "heading", "title", "snippet", "chunk_id", "weak",
              "across_languages")


def test_every_format_lists_the_same_results(indexed: Indexed, oboyu) -> None:
    as_json = oboyu(*KEYWORD, "--json")
    assert as_json.returncode == 0, as_json.stderr
    results = json.loads(as_json.stdout)
    assert len(results) >= 4
    assert json.loads(oboyu(*KEYWORD, "--format", "json").stdout) == results

    lines = oboyu(*KEYWORD, "--format", "jsonl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == results

    rows = list(csv.reader(io.StringIO(oboyu(*KEYWORD, "--format", "csv").stdout)))
    assert rows[0] == list(CSV_HEADER)
    assert [row[2] for row in rows[1:]] == [visible(r["path"]) for r in results]
    assert [float(row[1]) for row in rows[1:]] == [r["score"] for r in results]
    assert [row[9] for row in rows[1:]] == [r["chunk_id"] for r in results]
    assert {row[11] for row in rows[1:]} == {"false"}  # keyword mode is never across languages
    assert "␊" in "".join(row[2] for row in rows[1:])  # a newline in a name stays inside its cell, shown

    markdown = oboyu(*KEYWORD, "--format", "md").stdout
    items = [line for line in markdown.splitlines() if line.startswith("- ")]
    assert len(items) == len(results)
    minutes = next(r for r in results if r["path"].endswith("minutes.txt"))
    assert f"- `{minutes['path']}:{minutes['start_line']}`" in markdown
    assert "\\*強調\\*" in markdown and "\\[リンク\\]" in markdown and "\\<tag>" in markdown  # renders as written
    meeting = next(r for r in results if r["path"].endswith("meeting.md"))
    assert f"`{meeting['path']}:{meeting['start_line']}` 週次ミーティング > 議事録" in markdown

    chunks = oboyu(*KEYWORD, "--chunks", "-k", "50", "--format", "files")
    files = chunks.stdout.splitlines()
    assert len(files) == len(set(files)) and str(indexed.root / "meeting.md") in files
    assert len(json.loads(oboyu(*KEYWORD, "--chunks", "-k", "50", "--json").stdout)) > len(files)

    text = oboyu(*KEYWORD)
    assert f"{meeting['path']}:{meeting['start_line']}-{meeting['end_line']}" in text.stdout and "\x1b" not in text.stdout


def test_min_score_is_a_threshold_on_the_confidence(oboyu) -> None:
    scores = [r["score"] for r in json.loads(oboyu(*KEYWORD, "--json").stdout)]
    assert len(set(scores)) > 1, scores
    cut = sorted(set(scores))[-2]
    above = json.loads(oboyu(*KEYWORD, "--json", "--min-score", str(cut)).stdout)
    assert [r["score"] for r in above] == [s for s in scores if s >= cut] and above
    # a user trial: ranks 1, 2, 3, 4, 6 where a result was left out; the rank is the place as listed
    assert [r["rank"] for r in above] == list(range(1, len(above) + 1))
    listed = json.loads(oboyu(*KEYWORD, "--json", "--all").stdout)
    assert [r["rank"] for r in listed] == list(range(1, len(listed) + 1))
    assert oboyu(*KEYWORD, "--format", "files", "--min-score", str(cut)).stdout.count("\n") == len({r["path"] for r in above})

    top = max(scores)
    assert top < 1, scores  # words alone never make a result certain
    none = oboyu(*KEYWORD, "--json", "--min-score", "1")
    assert none.returncode == 1 and json.loads(none.stdout) == [] and "reaches --min-score 1" in none.stderr
    assert none.stderr.count("\n") == 1 and f"confidence {top:.2f}" in none.stderr
    header_only = oboyu(*KEYWORD, "--format", "csv", "--min-score", "1")
    assert header_only.returncode == 1 and header_only.stdout.splitlines() == [",".join(CSV_HEADER)]


def test_bad_combinations_are_one_line_errors(oboyu) -> None:
    for args, says in ((("--json", "--format", "csv"), "--json is --format json"),
                       (("--stdin", "--format", "md"), "--stdin always writes"),
                       (("--explain", "--format", "files"), "--explain shows in --format text"),
                       (("--min-score", "1.5"), "1.5"),
                       (("--min-score", "nan"), "nan is not a number from 0 to 1"),  # FloatRange let it through
                       (("--type", ",,"), "the file types ',,' name none"),  # it searched everything (a user trial)
                       # a fuzzing trial: these filtered nothing, or `../` as text files, silently
                       (("--type", "../"), "unknown file type '../'"),
                       (("--since", ""), "not a date: ''"),
                       (("--path", ""), "is not a usable pattern (it is empty)"),
                       (("--path", "!"), "is not a usable pattern (it is empty)"),
                       (("--format", "xml"), "xml")):
        done = oboyu(*(() if "--stdin" in args else ("議事録",)), *args)
        assert done.returncode == 2 and says in done.stderr, (args, done.stderr)
        assert done.stderr.count("\n") == 1


def test_files_gives_the_exact_bytes_of_a_name_when_piped(indexed: Indexed) -> None:
    done = subprocess.run([sys.executable, "-m", "oboyu.cli", "query", "議事録", "--mode", "keyword", "--all",
                           "--format", "files"], env=indexed.env, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    names = done.stdout.split(b"\n")[:-1]
    assert os.fsencode(indexed.root) + b"/" + SJIS_NAME in names  # an editor opens it as it is
    assert os.fsencode(indexed.root / "line␊break.md") in names  # a newline would make two names: shown
    assert os.fsencode(indexed.root / "line\nbreak.md") not in done.stdout


def test_files0_hands_every_name_to_xargs_0_as_it_is(indexed: Indexed) -> None:
    """NUL-ended names through a real `xargs -0`: the newline's file and the Shift_JIS one are
    opened by their own names, which one a line cannot do."""
    query = [sys.executable, "-m", "oboyu.cli", "query", "議事録", "--mode", "keyword", "--all", "--format", "files0"]
    done = subprocess.run(query, env=indexed.env, capture_output=True, timeout=600)
    assert done.returncode == 0 and done.stdout.endswith(b"\0"), done.stderr
    names = done.stdout.split(b"\0")[:-1]
    assert os.fsencode(indexed.root / "line\nbreak.md") in names and os.fsencode(indexed.root) + b"/" + SJIS_NAME in names
    each = 'for name; do test -f "$name" || exit 1; printf x; done'  # an x for each name that is a file
    listed = subprocess.run(["xargs", "-0", "sh", "-c", each, "sh"], input=done.stdout, capture_output=True, timeout=60)
    assert listed.returncode == 0 and listed.stdout == b"x" * len(names), listed


def test_hyperlinks_only_where_a_terminal_wants_them(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for name in ("NO_COLOR", "NO_TERM_HYPERLINKS", "KITTY_WINDOW_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert hyperlinks(Terminal()) and not hyperlinks(io.StringIO())
    for name, value in (("TERM", "dumb"), ("TERM", "linux"), ("NO_COLOR", "1"), ("NO_TERM_HYPERLINKS", "1")):
        with monkeypatch.context() as changed:
            changed.setenv(name, value)
            assert not hyperlinks(Terminal()), (name, value)

    host = socket.gethostname()
    assert file_url("/tmp/a b/メモ.md", 12) == f"file://{host}/tmp/a%20b/%E3%83%A1%E3%83%A2.md"  # no line: not kitty
    assert file_url("/tmp/\x1b]0;x\x07.md") == f"file://{host}/tmp/%1B%5D0%3Bx%07.md"  # nothing raw reaches the terminal
    assert file_url(os.fsdecode(b"/tmp/\x83\x81.txt")) == f"file://{host}/tmp/%83%81.txt"  # the name's own bytes
    monkeypatch.setenv("TERM", "xterm-kitty")
    assert file_url("/tmp/a.md", 12) == f"file://{host}/tmp/a.md#12"
    assert link("a.md:3", "file://h/a.md") == "\x1b]8;;file://h/a.md\x1b\\a.md:3\x1b]8;;\x1b\\"


def on_terminal(env: dict[str, str], *args: str) -> str:
    """What `oboyu ARGS` writes to a pseudo-terminal (a person's terminal, to the command)."""
    master, slave = os.openpty()
    child = subprocess.Popen([sys.executable, "-m", "oboyu.cli", *args], stdin=subprocess.DEVNULL, stdout=slave,
                             stderr=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = bytearray()
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
    child.wait(timeout=600)
    os.close(master)
    return out.decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_results_link_to_their_file_on_a_terminal(indexed: Indexed) -> None:
    host = socket.gethostname()
    meeting = indexed.root / "meeting.md"
    kitty = on_terminal(indexed.env | {"TERM": "xterm-kitty"}, "query", "次回の議事録係", "--mode", "keyword")
    assert f"\x1b]8;;file://{host}{meeting}#" in kitty and f"{meeting}:" in kitty
    get = on_terminal(indexed.env | {"TERM": "xterm-256color"}, "get", str(meeting))
    assert f"\x1b]8;;file://{host}{meeting}\x1b\\" in get and "週次ミーティング" in get
    plain = on_terminal(indexed.env | {"TERM": "xterm-256color", "NO_COLOR": "1"}, "get", str(meeting))
    assert "\x1b" not in plain and "週次ミーティング" in plain


def made_result(rank: int, confidence: float, likely: bool, weak: bool = False, folder: Path | None = None) -> Result:
    """A result of file `rank`.md in `folder`, made there (the text output marks a file not on disk)."""
    path = folder / f"{rank}.md" if folder else Path(f"/notes/{rank}.md")
    if folder:
        path.write_text(f"passage {rank}\n", encoding="utf-8")
    return Result(rank=rank, confidence=confidence, path=str(path), start_line=1, end_line=2, heading="",
                  title=None, snippet=f"passage {rank}", chunk_id=f"{rank:016x}", likely=likely, weak=weak)


def test_unlikely_results_beside_a_good_match_are_set_apart_in_their_rank_order(tmp_path: Path) -> None:
    """A user trial: beside a 0.83 answer, nine files at 0.004 looked like the answer's peers. They
    stay (the right answer is sometimes among them), after a divider, in rank order."""
    from oboyu.cli.output import UNLIKELY_DIVIDER, write_results
    from oboyu.search.query import unlikely_from

    results = [made_result(1, 0.83, True, folder=tmp_path), made_result(2, 0.004, False, folder=tmp_path),
               made_result(3, 0.31, True, folder=tmp_path), made_result(4, 0.004, False, folder=tmp_path),
               made_result(5, 0.003, False, folder=tmp_path)]
    assert unlikely_from(results) == 3  # after the last likely one: the order is never changed
    # none likely (a good match told by the question's tokens, its confidences all under the line): all set apart
    assert unlikely_from(results[1:2]) == 0 and unlikely_from(results[3:]) == 0
    assert unlikely_from([replace(r, weak=True) for r in results[3:]]) == 0  # no good match: nothing shown to set apart
    out = io.StringIO()
    write_results(results, "text", out=out, env={})
    lines = out.getvalue().splitlines()
    assert lines.index(f"    {UNLIKELY_DIVIDER}") == lines.index(f" 4. 0.004  {tmp_path}/4.md:1-2") - 1
    assert sum(UNLIKELY_DIVIDER in line for line in lines) == 1
    alone = io.StringIO()
    write_results(results[3:], "text", out=alone, env={})  # none over the line: the divider comes first
    assert alone.getvalue().splitlines()[0] == f"    {UNLIKELY_DIVIDER}"
    weak = io.StringIO()
    write_results([replace(r, weak=True) for r in results[3:]], "text", out=weak, env={})  # --all, no good match
    assert UNLIKELY_DIVIDER not in weak.getvalue()


def test_across_languages_scores_read_as_untold_where_people_read_them(tmp_path: Path) -> None:
    """Beside "how sure each is cannot be told", a user trial read 0.024 as a verdict: the text and
    the app print `?`; CSV and JSON keep the number and say why it is not to be read."""
    from rich.console import Console

    from oboyu.cli.output import write_results
    from oboyu.tui.widgets import result_prompt

    across = [replace(made_result(rank, 0.024 / rank, True, folder=tmp_path), across_languages=True) for rank in (1, 2)]
    text = io.StringIO()
    write_results(across, "text", out=text, env={})
    assert [line for line in text.getvalue().splitlines() if line[2:4] == ". "] == \
        [f" 1.     ?  {tmp_path}/1.md:1-2", f" 2.     ?  {tmp_path}/2.md:1-2"]
    sheet = io.StringIO()
    write_results(across + [made_result(3, 0.5, True)], "csv", out=sheet, env={})
    rows = list(csv.reader(io.StringIO(sheet.getvalue())))
    assert [(row[1], row[-1]) for row in rows] == [("score", "across_languages"), ("0.024", "true"), ("0.012", "true"),
                                                  ("0.5", "false")]
    shown = io.StringIO()  # a script reading `likely` is not told yes (a user trial): null, cannot be told
    write_results(across + [made_result(3, 0.5, True)], "json", out=shown, env={})
    assert [(r["likely"], r["across_languages"]) for r in json.loads(shown.getvalue())] == \
        [(None, True), (None, True), (True, False)]
    plain = io.StringIO()
    write_results([made_result(1, 0.024, True)], "text", out=plain, env={})
    assert " 1. 0.024  /notes/1.md:1-2  (missing)" in plain.getvalue()  # not on disk: marked
    for result, score in ((across[0], "?"), (made_result(1, 0.024, True), "0.024")):
        console = Console(width=60, record=True, file=io.StringIO())
        console.print(result_prompt(result))
        assert console.export_text().splitlines()[0].split()[-1] == score
