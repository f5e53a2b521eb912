"""A description of each indexed folder (`oboyu index --describe`, `oboyu describe`): set, shown
by `status`, changed and cleared without indexing, refused with a one-line reason when it is not
one short line, carried by every result (`query --json`, MCP) and upgraded into an index of
schema 7; against two small folders indexed once for the module."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import Done, oboyu_in_process, run_oboyu

from oboyu.index.schema import SCHEMA_VERSION
from oboyu.index.store import Store
from oboyu.mcp.server import OboyuTools
from oboyu.models.embedding import Embedder

DESCRIBED = "会議の議事録と日報 (2024年から)"


@dataclass
class Indexed:
    notes: Path
    garden: Path
    db: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, model_dir: Path) -> Indexed:
    base = tmp_path_factory.mktemp("descriptions")
    notes, garden = base / "notes", base / "garden"
    (notes / "sub").mkdir(parents=True)
    garden.mkdir()
    (notes / "meeting.md").write_text("# 会議\n\n議事録は翌日までに共有フォルダにまとめる。\n", encoding="utf-8")
    (notes / "sub" / "daily.txt").write_text("日報: 議事録の共有を確認した。\n", encoding="utf-8")
    (garden / "tomato.txt").write_text("議事録ではない: トマトに週二回水をやる。\n", encoding="utf-8")
    db = base / "index.duckdb"
    env = dict(os.environ, OBOYU_CACHE_DIR=str(cache_dir), OBOYU_DB=str(db))
    for args in ((str(notes), "--describe", DESCRIBED), (str(garden),)):  # as a person runs it
        done = run_oboyu(env, "index", "-q", *args)
        assert done.returncode == 0, done.stderr
    return Indexed(notes, garden, db, env)


@pytest.fixture
def oboyu(indexed: Indexed, capfd: pytest.CaptureFixture[str]):
    """`oboyu ARGS --db INDEX` by the command's own main() in this process (no child's start-up)."""
    def run(*args: str) -> Done:
        return oboyu_in_process(capfd, *args, "--db", str(indexed.db))
    return run


def described(oboyu) -> dict[str, str | None]:
    done = oboyu("status", "--json")
    assert done.returncode == 0, done.stderr
    return {root["name"]: root["description"] for root in json.loads(done.stdout)["roots"]}


def test_status_shows_the_description_given_when_indexing(indexed: Indexed, oboyu) -> None:
    oboyu("describe", "notes", DESCRIBED)  # as the fixture left it, whatever ran before
    assert described(oboyu) == {"notes": DESCRIBED, "garden": None}
    text = oboyu("status").stdout.splitlines()
    at = next(i for i, line in enumerate(text) if line.lstrip().startswith("notes "))
    assert text[at + 1].strip() == DESCRIBED  # on the line under its folder
    assert not any(line.strip() == "None" for line in text)  # a folder without one shows nothing


def indexing_state(db: Path) -> tuple[list, str | None]:
    """When each file was indexed, and the generation that long-lived readers reload on."""
    with Store(db, read_only=True) as store:
        return store.con.execute("SELECT path, indexed_at FROM documents ORDER BY path").fetchall(), store.get_meta("generation")


def test_describe_changes_and_clears_it_without_indexing(indexed: Indexed, oboyu) -> None:
    before = indexing_state(indexed.db)
    done = oboyu("describe", "garden", "家庭菜園のメモ")
    assert done.returncode == 0 and "described garden" in done.stderr and "家庭菜園のメモ" in done.stderr
    assert described(oboyu)["garden"] == "家庭菜園のメモ"
    by_path = oboyu("describe", str(indexed.garden), "  spaces kept as given ")  # a path names it too
    assert by_path.returncode == 0 and described(oboyu)["garden"] == "  spaces kept as given "
    cleared = oboyu("describe", "garden", "")
    assert cleared.returncode == 0 and "cleared the description of garden" in cleared.stderr
    assert described(oboyu)["garden"] is None
    assert oboyu("describe", "garden", "   ").returncode == 0 and described(oboyu)["garden"] is None
    assert indexing_state(indexed.db) == before  # nothing was indexed again, no reader reloads


def test_index_sets_changes_and_clears_it_on_an_indexed_folder(indexed: Indexed, oboyu) -> None:
    def index(*args: str) -> None:  # nothing changed on disk: no model loads, nothing is embedded
        done = oboyu("index", "-q", str(indexed.garden), *args)
        assert done.returncode == 0, done.stderr

    index("--describe", "野菜")
    assert described(oboyu)["garden"] == "野菜"
    index("--name", "vegetables")
    assert described(oboyu) == {"notes": DESCRIBED, "vegetables": "野菜"}  # a new name keeps the description
    index()
    assert described(oboyu)["vegetables"] == "野菜"  # and an update leaves it as it is
    index("--name", "garden", "--describe", "")
    assert described(oboyu) == {"notes": DESCRIBED, "garden": None}


def test_a_bad_description_is_a_one_line_error(indexed: Indexed, oboyu) -> None:
    refused = {
        ("describe", "notes", "一行目\n二行目"): "one line",
        ("describe", "notes", "a\u2028b"): "one line",
        ("describe", "notes", "x" * 501): "at most 500 characters; this one has 501",
        ("describe", "notes", "\x1b]0;title\x07"): "control character U+001B",
        ("describe", "nowhere", "x"): "'nowhere' is not an indexed folder (indexed: garden, notes)",
        ("index", str(indexed.notes), "--describe", "a\nb"): "one line",
        ("index", str(indexed.notes / "sub"), "--describe", "x"): "--describe describes a folder indexed on its own",
        ("index", str(indexed.notes), str(indexed.garden), "--describe", "x"): "--describe goes with exactly one PATH",
        # a name is typed back (--root, remove): a user trial's `a\nb` was listed as `a␊b`
        ("index", str(indexed.notes), "--name", "a\nb"): "control character U+000A",
        ("index", str(indexed.notes), "--name", "c\x1b[31md"): "control character U+001B",
        ("index", str(indexed.notes), "--name", " "): "a folder's name cannot be empty",
    }
    for args, reason in refused.items():
        done = oboyu(*args)
        assert done.returncode == 2 and reason in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert oboyu("describe", "notes", "y" * 500).returncode == 0  # the limit itself is fine
    assert described(oboyu)["notes"] == "y" * 500
    oboyu("describe", "notes", DESCRIBED)


def test_a_byte_that_is_not_utf8_is_stored_valid(indexed: Indexed, oboyu) -> None:
    # a command-line byte that is not UTF-8 reaches Python as a lone surrogate: kept as U+FFFD
    done = run_oboyu(indexed.env, "describe", "garden", os.fsdecode(b"caf\xe9 notes"))
    assert done.returncode == 0, done.stderr
    assert described(oboyu)["garden"] == "caf\ufffd notes"
    oboyu("describe", "garden", "")


def test_results_carry_their_folder_and_its_description(indexed: Indexed, oboyu) -> None:
    oboyu("describe", "notes", DESCRIBED)
    oboyu("describe", "garden", "")
    done = oboyu("query", "議事録", "--mode", "keyword", "--all", "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    found = {Path(r["path"]).name: (r["folder"], r["folder_description"]) for r in map(json.loads, done.stdout.splitlines())}
    assert found == {"meeting.md": ("notes", DESCRIBED), "daily.txt": ("notes", DESCRIBED), "tomato.txt": ("garden", None)}
    as_json = json.loads(oboyu("query", "議事録", "--mode", "keyword", "--all", "--json").stdout)
    assert {(r["folder"], r["folder_description"]) for r in as_json} == {("notes", DESCRIBED), ("garden", None)}


def test_mcp_search_and_status_carry_it_and_see_a_change(indexed: Indexed, embedder: Embedder, oboyu) -> None:
    oboyu("describe", "notes", DESCRIBED)
    oboyu("describe", "garden", "")
    tools = OboyuTools(indexed.db, embedder)

    def folders() -> dict[str, tuple[str, str | None]]:
        hits = tools.search("議事録", mode="keyword")["results"]  # from memory (the LiveIndex)
        return {Path(h["path"]).name: (h["folder"], h["folder_description"]) for h in hits}

    assert folders()["meeting.md"] == ("notes", DESCRIBED) and folders()["tomato.txt"] == ("garden", None)
    roots = {r["name"]: r for r in tools.status()["roots"]}
    assert roots["notes"]["description"] == DESCRIBED and roots["notes"]["path"] == str(indexed.notes)
    assert roots["garden"]["description"] is None
    generation = tools.live.resident.generation
    oboyu("describe", "garden", "畑")  # another process changes it while the server runs
    assert folders()["tomato.txt"] == ("garden", "畑")
    assert tools.live.resident.generation == generation  # read anew without reloading the index
    filtered = tools.search("議事録", mode="keyword", type="txt")["results"]  # ranked in SQL
    assert {h["folder_description"] for h in filtered} == {DESCRIBED, "畑"}
    oboyu("describe", "garden", "")


def test_an_index_of_schema_7_is_upgraded(indexed: Indexed, tmp_path: Path, oboyu) -> None:
    old = tmp_path / "old.duckdb"
    shutil.copy(indexed.db, old)
    with Store(old) as store:  # the shape version 7 wrote: no description column
        store.con.execute("ALTER TABLE roots DROP COLUMN description")
        store.con.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    status = json.loads(run_oboyu(indexed.env, "status", "--json", "--db", str(old)).stdout)  # read-only: upgraded first
    assert {r["name"]: r["description"] for r in status["roots"]} == {"notes": None, "garden": None}
    with Store(old, read_only=True) as store:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION) == "10"
        assert store.integrity_problems() == []
    with Store(old) as store:
        store.describe_root(store.roots_named(["notes"])[0], "upgraded")
    with Store(old, read_only=True) as store:
        assert {r.name: r.description for r in store.roots()} == {"notes": "upgraded", "garden": None}


def test_the_app_lists_it_beside_its_folder(indexed: Indexed, embedder: Embedder, oboyu) -> None:
    from textual.widgets import DataTable

    from oboyu.modes import Mode
    from oboyu.tui.app import OboyuApp

    oboyu("describe", "notes", DESCRIBED)
    oboyu("describe", "garden", "")
    seen: dict[str, list[str]] = {}

    async def run() -> None:
        app = OboyuApp(indexed.db, embedder, mode=Mode.KEYWORD)
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.press("ctrl+o")
            table = app.screen.query_one("#roots", DataTable)
            for _ in range(600):
                if table.row_count == 2:
                    break
                await pilot.pause(0.05)
            seen["columns"] = [str(column.label) for column in table.columns.values()]
            seen["rows"] = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]

    asyncio.run(run())
    assert seen["columns"][-1] == "Description"
    assert seen["rows"] == ["", DESCRIBED]  # garden, notes: by path
