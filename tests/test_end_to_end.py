"""Index a small tree of real files with the `oboyu` command and search it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_oboyu as oboyu

FILES = {
    "notes/meeting.md": ("utf-8", """---
title: 週次ミーティング
---
# 週次ミーティング

## 議事録の書き方
会議の議事録は、決定事項と担当者と期限を最初にまとめる。
発言の記録は要点だけにして、翌日までに共有フォルダに置く。
"""),
    "notes/recipe.txt": ("cp932", "カレーライスの作り方\n\n玉ねぎを飴色になるまで炒め、肉と人参とじゃがいもを加えて煮込む。\nルーを溶かして、弱火で十分ほど煮る。\n"),
    "notes/travel.txt": ("euc_jp", "京都旅行の計画\n\n清水寺と金閣寺を巡り、夜は祇園を散歩する予定。\n二日目は嵐山の竹林と天龍寺へ行く。\n"),
    "notes/tax.md": ("utf-8", "# 確定申告\n\n医療費の領収書と源泉徴収票を準備して、三月十五日までに税務署へ提出する。\n"),
    "docs/server.html": ("utf-8", """<!doctype html><html><head><title>Server runbook</title>
<script>console.log("backup backup backup")</script></head><body>
<h1>Database server</h1><h2>Backups</h2>
<p>The PostgreSQL database is backed up every night at 02:00 with pg_dump.
Restore a backup with pg_restore into a fresh database.</p></body></html>"""),
    "docs/garden.md": ("utf-8", "# Growing tomatoes\n\nWater tomato plants deeply twice a week and stake them as they grow.\nPinch off the side shoots to get larger fruit.\n"),
}

QUERIES = [
    ("会議の議事録をまとめる方法", "notes/meeting.md"),
    ("カレーのレシピ", "notes/recipe.txt"),
    ("京都でお寺を巡る旅行", "notes/travel.txt"),
    ("税金の申告に必要な書類", "notes/tax.md"),
    ("how do I restore the database from a backup", "docs/server.html"),
    ("watering tomato plants", "docs/garden.md"),
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for rel, (encoding, text) in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode(encoding))
    (root / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4)
    (root / "notes" / "binary.txt").write_bytes(b"\x00\x01\x02 not text \x00")
    return root


def test_index_then_query_finds_the_right_file_first(tree: Path, oboyu_env: dict) -> None:
    result = oboyu(oboyu_env, "index", str(tree))
    assert result.returncode == 0, result.stderr
    assert "6 added" in result.stderr and "binary file" in result.stderr
    for query, expected in QUERIES:
        result = oboyu(oboyu_env, "query", query, "--json", "-k", "3")
        assert result.returncode == 0, result.stderr
        hits = json.loads(result.stdout)
        assert hits[0]["path"] == str(tree / expected), (query, hits[0]["path"])
        assert set(hits[0]) >= {"path", "score", "start_line", "end_line", "heading", "snippet", "chunk_id"}

    hits = json.loads(oboyu(oboyu_env, "query", "議事録", "--json").stdout)
    meeting = next(h for h in hits if h["path"].endswith("meeting.md"))
    assert meeting["heading"] == "週次ミーティング > 議事録の書き方"
    assert (meeting["start_line"], meeting["end_line"]) == (7, 8)

    status = json.loads(oboyu(oboyu_env, "status", "--json").stdout)
    assert status["documents"] == 6 and status["chunks"] >= 6 and status["bytes"] > 0
    assert status["model"].startswith("intfloat/multilingual-e5-small@")
    assert set(status) >= {"db", "model", "provider", "documents", "chunks", "bytes"}

    exact = json.loads(oboyu(oboyu_env, "query", "pg_restore", "--mode", "keyword", "--json").stdout)
    assert [h["path"] for h in exact] == [str(tree / "docs/server.html")]
    assert exact[0]["mode"] == "keyword" and exact[0]["ranks"] == {"keyword": 1}
    assert "pg_restore" in [exact[0]["snippet"][a:b] for a, b in exact[0]["matches"]]
    hybrid = json.loads(oboyu(oboyu_env, "query", "議事録", "--json").stdout)
    assert hybrid[0]["mode"] == "hybrid" and set(hybrid[0]["ranks"]) == {"vector", "keyword", "lead", "lead_words"}
    passages = json.loads(oboyu(oboyu_env, "query", "カレー", "--json", "--chunks", "-k", "50").stdout)
    files = json.loads(oboyu(oboyu_env, "query", "カレー", "--json", "-k", "50").stdout)
    assert len({h["path"] for h in files}) == len(files) <= len(passages)

    human = oboyu(oboyu_env, "query", "カレー")
    assert human.returncode == 0
    assert f"{tree / 'notes/recipe.txt'}:1-" in human.stdout


def test_reindexing_is_stable_and_follows_changes(tree: Path, oboyu_env: dict) -> None:
    assert oboyu(oboyu_env, "index", str(tree)).returncode == 0
    first = json.loads(oboyu(oboyu_env, "query", "カレー", "--json", "-k", "50").stdout)
    again = oboyu(oboyu_env, "index", str(tree))
    assert "0 added, 0 changed, 0 removed, 0 renamed, 6 unchanged" in again.stderr
    assert json.loads(oboyu(oboyu_env, "query", "カレー", "--json", "-k", "50").stdout) == first

    (tree / "notes" / "tax.md").write_text("# 確定申告\n\n今年はe-Taxでオンライン提出した。\n", encoding="utf-8")
    (tree / "docs" / "garden.md").unlink()
    changed = oboyu(oboyu_env, "index", str(tree))
    assert "0 added, 1 changed, 1 removed, 0 renamed, 4 unchanged" in changed.stderr
    hits = json.loads(oboyu(oboyu_env, "query", "e-Taxでオンライン提出", "--json", "-k", "50").stdout)
    paths = [h["path"] for h in hits]
    assert not any(p.endswith("garden.md") for p in paths)
    tax = [h for h in hits if h["path"].endswith("tax.md")]
    assert len(tax) == 1 and "e-Tax" in tax[0]["snippet"]


def test_exit_codes_and_one_line_errors(tmp_path: Path, oboyu_env: dict) -> None:
    missing = oboyu(oboyu_env, "query", "anything")
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    assert oboyu(oboyu_env, "index", str(empty)).returncode == 0
    none = oboyu(oboyu_env, "query", "anything", "--json")
    assert none.returncode == 1 and json.loads(none.stdout) == []
    by_root = oboyu(oboyu_env, "query", "anything", "--json", "--root", "empty")
    assert by_root.returncode == 1 and json.loads(by_root.stdout) == []
    unknown_root = oboyu(oboyu_env, "query", "anything", "--root", "nowhere")
    assert unknown_root.returncode == 2 and unknown_root.stderr.count("\n") == 1
    assert "'nowhere' is not an indexed folder (indexed: empty)" in unknown_root.stderr

    bad = oboyu(oboyu_env, "index", str(tmp_path / "does-not-exist"))
    assert bad.returncode == 2 and "no such file" in bad.stderr and "Traceback" not in bad.stderr

    not_index = tmp_path / "other.duckdb"
    not_index.write_bytes(b"this is not a database")
    broken = oboyu(oboyu_env, "status", "--db", str(not_index))
    assert broken.returncode == 2 and "Traceback" not in broken.stderr


def test_usage_errors_are_one_line(oboyu_env: dict) -> None:
    result = oboyu(oboyu_env, "query", "x", "-k", "0")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("oboyu: error:")


def test_each_command_is_found_by_its_name_and_listed_in_the_help(oboyu_env: dict) -> None:
    import click

    from oboyu.cli.main import COMMANDS, cli

    context = click.Context(cli)
    for name in COMMANDS:  # each imported only when it runs: a wrong module or function shows here
        command = cli.get_command(context, name)
        assert command is not None and command.name == name, name
    assert cli.get_command(context, "serach") is None
    listed = oboyu(oboyu_env, "--help").stdout
    assert all(f"  {name} " in listed for name in COMMANDS), listed
    unknown = oboyu(oboyu_env, "serach", "x")  # a user trial's guesses: a typo, and `search`
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "No such command 'serach'; did you mean `oboyu query`?" in unknown.stderr
    assert "did you mean `oboyu status`?" in oboyu(oboyu_env, "statu").stderr
    assert "did you mean" not in oboyu(oboyu_env, "xyzzy").stderr
    for group in ("models", "cache"):  # a group alone: its help as written (a trial's read as one "error" line)
        alone = oboyu(oboyu_env, group)
        assert alone.returncode == 0 and alone.stdout.startswith("Usage: ") and "␊" not in alone.stdout
        assert f" {group} [OPTIONS] COMMAND" in alone.stdout and "Commands:" in alone.stdout and not alone.stderr
    script = str(Path(sys.executable).with_name("oboyu"))  # completion is the installed command's (its name)
    completion = {**oboyu_env, "_OBOYU_COMPLETE": "bash_complete", "COMP_CWORD": "2"}
    typo = subprocess.run([script], env={**completion, "COMP_WORDS": "oboyu statu "}, capture_output=True, text=True)
    assert typo.returncode == 0 and not typo.stderr, typo.stderr  # completing after a typo stays quiet
    found = subprocess.run([script], env={**completion, "COMP_WORDS": "oboyu qu", "COMP_CWORD": "1"},
                           capture_output=True, text=True)
    assert "plain,query" in found.stdout.split()


def test_stdin_batch_and_explain(tree: Path, oboyu_env: dict) -> None:
    assert oboyu(oboyu_env, "index", str(tree), "--quiet").returncode == 0
    batch = subprocess.run(
        [sys.executable, "-m", "oboyu.cli", "query", "--stdin", "-k", "1"],
        input="カレーのレシピ\n\nwatering tomato plants\n", env=oboyu_env, capture_output=True, text=True, timeout=300,
    )
    assert batch.returncode == 0, batch.stderr
    lines = [json.loads(line) for line in batch.stdout.splitlines()]
    # one answer a line, the blank line's empty, so answers stay aligned with questions
    assert [hits[0]["path"] if hits else None for hits in lines] == [
        str(tree / "notes/recipe.txt"), None, str(tree / "docs/garden.md")]
    assert json.loads(batch.stderr.strip().splitlines()[-1]) == {"line": 2, "error": "the query is empty"}
    explained = oboyu(oboyu_env, "query", "カレー", "--explain", "-k", "1")
    assert "[hybrid: vector rank 1 score " in explained.stdout and "keyword rank 1 score " in explained.stdout
    assert oboyu(oboyu_env, "query").returncode == 2
