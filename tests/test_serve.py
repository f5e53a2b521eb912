"""`oboyu serve` holds an index with its model loaded, and `oboyu query` hands its query there:
the same bytes on stdout and stderr and the same exit status as a query run on its own, for every
output format and option; what the server cannot answer as the command would runs in the asking
process; `oboyu index` writes meanwhile, and the next query sees it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLE_NOTES, run_oboyu
from hypothesis import given, settings
from hypothesis import strategies as st

from oboyu.cli.sockets import json_text, socket_path

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="handoff uses Unix sockets")


@pytest.fixture
def server(tmp_path: Path, oboyu_env: dict) -> Iterator[tuple[dict, subprocess.Popen]]:
    """The example notes indexed and served: the environment (with a private runtime folder) and
    the serving process."""
    shutil.copytree(EXAMPLE_NOTES, tmp_path / "notes")
    runtime = Path(tempfile.mkdtemp(prefix="oboyu-run-"))  # private, and short: a socket's path is at most ~100 bytes
    env = {**oboyu_env, "XDG_RUNTIME_DIR": str(runtime)}
    assert run_oboyu(env, "index", str(tmp_path / "notes"), "-q").returncode == 0
    server = start_server(env)
    try:
        yield env, server
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def served(server: tuple[dict, subprocess.Popen]) -> dict:
    return server[0]


def start_server(env: dict) -> subprocess.Popen:
    # Ctrl+C as a person gives it: a shell's background job (a CI run started with &) ignores it
    server = subprocess.Popen([sys.executable, "-m", "oboyu.cli", "serve"], env=env, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = server.stderr.readline()  # the model loads first
    assert "oboyu: serving" in line, line + server.stderr.read()
    return server


def cannot_run_here(env: dict) -> dict:
    """The environment with a cache dir that cannot be: a query run in its own process fails at
    once, so one that succeeds was answered by the server."""
    return {**env, "OBOYU_CACHE_DIR": os.devnull + "/not-a-folder"}


QUERIES = [
    ("カレーの作り方",),
    ("カレーの作り方", "--format", "json", "-k", "3"),
    ("release the wheel", "--format", "files"),
    ("京都", "--format", "csv", "--explain"),
    ("京都", "--format", "md", "--all", "--mode", "vector"),
    ("changelog", "--mode", "keyword", "--chunks", "--explain"),
    ("旅行", "--path", "*.md", "--since", "30d"),
    ("zzzz qqqq", "--format", "jsonl"),  # no good match: exit 1, said on stderr
    ("議事録", "--min-score", "0.99"),
]


def test_a_served_index_answers_queries_with_the_output_they_give_alone(served: dict) -> None:
    for query in QUERIES:
        alone = run_oboyu({**served, "OBOYU_NO_HANDOFF": "1"}, "query", *query)
        handed = run_oboyu(cannot_run_here(served), "query", *query)
        assert (handed.returncode, handed.stdout, handed.stderr) == (alone.returncode, alone.stdout, alone.stderr), query
    assert run_oboyu(served, "query", "zzzz qqqq").returncode == 1


def test_a_notice_written_before_the_results_comes_before_them_when_handed_off(served: dict) -> None:
    """stdout and stderr on one pipe, as in a terminal: `--since 60000000m` (minutes, not months) says what it means, then the results."""
    def both_streams(env: dict) -> str:
        done = subprocess.run([sys.executable, "-m", "oboyu.cli", "query", "旅行", "--since", "60000000m"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        return done.stdout

    alone, handed = both_streams({**served, "OBOYU_NO_HANDOFF": "1"}), both_streams(cannot_run_here(served))
    assert alone.startswith("oboyu: --since 60000000m: 60000000 minutes ago\n") and "旅行" in alone, alone
    assert handed == alone


def test_a_reader_that_went_away_is_exit_141_not_no_match(served: dict) -> None:
    """A user trial: `oboyu query x | head -1` ended with exit 1, which scripts read as "no match"
    (click's answer to a closed pipe), and with a traceback when a server answered."""
    def into_a_closed_pipe(env: dict) -> subprocess.CompletedProcess:
        read, write = os.pipe()
        os.close(read)  # gone before the first byte: every write fails at once
        try:
            return subprocess.run([sys.executable, "-m", "oboyu.cli", "query", "カレーの作り方", "--all"], env=env,
                                  stdout=write, stderr=subprocess.PIPE, text=True, timeout=600)
        finally:
            os.close(write)

    for env in ({**served, "OBOYU_NO_HANDOFF": "1"}, cannot_run_here(served)):
        done = into_a_closed_pipe(env)
        assert (done.returncode, done.stderr) == (141, ""), done.stderr


def test_what_the_server_cannot_answer_runs_in_the_asking_process(served: dict) -> None:
    local = cannot_run_here(served)
    usage = run_oboyu(local, "query", "x", "--json", "--format", "csv")
    assert usage.returncode == 2 and "--json is --format json" in usage.stderr
    # no reranker is installed: --rerank asks for one, and only the asker's own process says so
    asked = run_oboyu(served, "query", "京都", "--rerank")
    alone = run_oboyu({**served, "OBOYU_NO_HANDOFF": "1"}, "query", "京都", "--rerank")
    assert (asked.returncode, asked.stdout, asked.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    other = run_oboyu(local, "query", "京都", "--db", str(Path(served["OBOYU_DB"]).with_name("other.duckdb")))
    assert other.returncode == 2  # another index: not the server's to answer


def test_an_indexer_writes_while_served_and_the_next_query_sees_it(served: dict, tmp_path: Path) -> None:
    note = tmp_path / "notes" / "garden.md"
    note.write_text("# 家庭菜園\n\nミニトマトの苗は五月の連休に植える。支柱は百五十センチ。\n", encoding="utf-8")
    indexed = run_oboyu(served, "index", "-q")
    assert indexed.returncode == 0, indexed.stderr
    found = run_oboyu(cannot_run_here(served), "query", "ミニトマトの苗を植える時期", "-k", "1", "--format", "files")
    assert found.returncode == 0 and found.stdout.strip() == str(note)


def test_one_server_an_index_and_a_killed_ones_socket_is_taken_over(server: tuple[dict, subprocess.Popen],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    served, first = server
    monkeypatch.setenv("XDG_RUNTIME_DIR", served["XDG_RUNTIME_DIR"])
    second = run_oboyu(served, "serve")
    assert second.returncode == 2 and "another oboyu process answers for it already" in second.stderr
    assert len(second.stderr.strip().splitlines()) == 1
    address = socket_path(Path(served["OBOYU_DB"]))
    assert address is not None and address.exists() and (address.stat().st_mode & 0o777) == 0o600
    first.kill()  # SIGKILL: its socket file stays behind
    first.wait()
    assert address.exists()
    assert run_oboyu(cannot_run_here(served), "query", "京都").returncode == 2  # nobody answers: run here, fails
    replacement = start_server(served)
    try:
        assert run_oboyu(cannot_run_here(served), "query", "京都").returncode == 0
    finally:
        replacement.send_signal(signal.SIGTERM)  # as a service manager stops it: nothing left behind
        assert replacement.wait(timeout=60) == 0
    assert not address.exists() and not address.parent.exists()


def test_the_socket_stays_in_a_private_folder_with_a_path_a_socket_can_have(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = tmp_path / ("deep" * 30)
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    address = socket_path(tmp_path / "index.duckdb", create=True)
    assert address is not None and len(os.fsencode(address)) <= 100
    assert (address.parent.stat().st_mode & 0o777) == 0o700 and address.parent.stat().st_uid == os.getuid()
    short = Path(tempfile.mkdtemp(prefix="oboyu-run-"))
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(short))
        (short / "oboyu").mkdir()
        os.chmod(short / "oboyu", 0o755)  # open to others: nothing is handed off through it
        assert socket_path(tmp_path / "index.duckdb", create=True) is None
    finally:
        shutil.rmtree(short)


def test_the_open_app_answers_queries_on_its_index(tmp_path: Path, oboyu_env: dict, embedder,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from oboyu.tui.app import OboyuApp

    shutil.copytree(EXAMPLE_NOTES, tmp_path / "notes")
    assert run_oboyu(oboyu_env, "index", str(tmp_path / "notes"), "-q").returncode == 0
    runtime = Path(tempfile.mkdtemp(prefix="oboyu-run-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # the app runs in this process
    env = {**oboyu_env, "XDG_RUNTIME_DIR": str(runtime)}
    alone = run_oboyu({**env, "OBOYU_NO_HANDOFF": "1"}, "query", "カレーの作り方", "--format", "json")

    async def run() -> None:
        app = OboyuApp(Path(env["OBOYU_DB"]), embedder)
        async with app.run_test() as pilot:
            await pilot.pause()
            handed = run_oboyu(cannot_run_here(env), "query", "カレーの作り方", "--format", "json")
            assert (handed.returncode, handed.stdout, handed.stderr) == (alone.returncode, alone.stdout, alone.stderr)
        assert not any(runtime.rglob("*.sock")), "the socket goes with the app"

    try:
        asyncio.run(run())
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_a_running_mcp_server_answers_queries_on_its_index(tmp_path: Path, oboyu_env: dict) -> None:
    shutil.copytree(EXAMPLE_NOTES, tmp_path / "notes")
    runtime = Path(tempfile.mkdtemp(prefix="oboyu-run-"))
    env = {**oboyu_env, "XDG_RUNTIME_DIR": str(runtime)}
    assert run_oboyu(env, "index", str(tmp_path / "notes"), "-q").returncode == 0
    alone = run_oboyu({**env, "OBOYU_NO_HANDOFF": "1"}, "query", "release the wheel")
    mcp = subprocess.Popen([sys.executable, "-m", "oboyu.cli", "mcp"], env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(600):  # the model loads, then the socket appears
            if any(runtime.rglob("*.sock")) or mcp.poll() is not None:
                break
            time.sleep(0.1)
        assert any(runtime.rglob("*.sock")), mcp.stderr.read() if mcp.poll() is not None else "no socket"
        handed = run_oboyu(cannot_run_here(env), "query", "release the wheel")
        assert (handed.returncode, handed.stdout, handed.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    finally:
        mcp.stdin.close()  # the MCP client goes away: the server ends, and its socket with it
        mcp.wait(timeout=60)
        mcp.stdout.close()
        mcp.stderr.close()
    assert not any(runtime.rglob("*")), "nothing left in the runtime folder"
    shutil.rmtree(runtime, ignore_errors=True)


def test_a_failure_while_answering_declines_and_prints_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import oboyu.cli.serving as serving
    from oboyu.search.live import LiveIndex

    called = []

    def broken(*args, **kwargs):
        called.append(args)
        raise RuntimeError("a bug")

    monkeypatch.setattr(serving, "answer_warm", broken)
    monkeypatch.delenv("OBOYU_CONFIG", raising=False)
    server = serving.QueryServer(LiveIndex(tmp_path / "index.duckdb"))
    request = {"argv": ["京都", "--mode", "keyword"], "cwd": str(tmp_path), "env": {},
               "index": os.path.realpath(tmp_path / "index.duckdb")}
    assert server._answer_safely(request) is None  # the asker runs it, and says what went wrong
    assert called and capfd.readouterr() == ("", "")
    called.clear()  # asked about another index (its socket's name the same): declined before any work
    assert server._answer_safely({**request, "index": str(tmp_path / "other.duckdb")}) is None and not called
    # asked for the default index, which is another here (the asker's environment names another)
    monkeypatch.setenv("OBOYU_DB", str(tmp_path / "default.duckdb"))
    assert server._answer_safely({**request, "default": True}) is None and not called


# text with lone surrogates too (a name's undecodable bytes, as surrogateescape reads them: U+DC80
# to U+DCFF), which st.text() never makes
ANY_TEXT = st.lists(st.sampled_from(["\udc80", "\udcff"]) | st.characters(exclude_categories=("Cs",)), max_size=20).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), st.one_of(ANY_TEXT, st.booleans(), st.lists(ANY_TEXT),
                                            st.dictionaries(st.text(), ANY_TEXT))))
def test_a_request_is_json_as_the_server_reads_it(asked: dict) -> None:
    """The asking side writes its JSON itself (json's import is a sixth of its time): whatever
    text it holds, lone surrogates and characters past U+FFFF included, reads back the same."""
    written = json_text(asked)
    assert written.isascii() and json.loads(written) == asked


def test_ctrl_c_is_said_in_one_line_before_the_entry_point_s_imports() -> None:
    """A Ctrl+C 8 to 40 ms after `oboyu` started printed a traceback from inside the hand-off's
    imports (socket, threading). The entry point now takes SIGINT before them: an import hook
    looks at the handler the moment `socket` is asked for; an ignored SIGINT stays ignored."""
    script = ("import signal, sys\nseen = []\nclass Look:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name == 'socket': seen.append(getattr(signal.getsignal(signal.SIGINT), '__name__', 'ignored'))\n"
              "sys.meta_path.insert(0, Look())\nsys.modules.pop('socket', None)\n"
              "if sys.argv[1] == 'ignored': signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
              "import oboyu.cli.entry\nprint(seen[0], getattr(signal.getsignal(signal.SIGINT), '__name__', 'ignored'))")
    for sigint, expected in (("default", "leave_now leave_now"), ("ignored", "ignored ignored")):
        done = subprocess.run([sys.executable, "-S", "-c", script, sigint], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(EXAMPLE_NOTES.parents[1])})
        assert done.returncode == 0 and done.stdout.split() == expected.split(), done.stderr


def test_the_asking_side_loads_nothing_heavy_and_finds_the_default_index(tmp_path: Path) -> None:
    """A handed-off query's time is mostly Python's start and its imports: the asking side loads
    none of json, pathlib, re, typing, hashlib, platformdirs (25 of its 60 ms, with platformdirs'
    13) where the default index's place is plain, and names it as oboyu.paths does."""
    script = ("import sys\nfrom oboyu.cli import handoff\nhandoff.handed_off(['query', 'x'])\n"
              "print(' '.join(sorted(m for m in ('json', 'pathlib', 're', 'typing', 'hashlib', 'platformdirs') "
              "if m in sys.modules)))\nprint(handoff.default_index())")
    for data_home in (None, "", str(tmp_path / "data")):
        env = {k: v for k, v in os.environ.items() if k not in ("OBOYU_DB", "XDG_DATA_HOME", "PYTHONPATH")}
        if data_home is not None:
            env["XDG_DATA_HOME"] = data_home
        # -S: site's own imports (an editable install's finder loads pathlib) are not the command's;
        # platformdirs, asked where the place is not plain, is in site-packages
        alone = ["-S"] if data_home is None else []
        done = subprocess.run([sys.executable, *alone, "-c", script], env={**env, "PYTHONPATH": str(EXAMPLE_NOTES.parents[1])},
                              capture_output=True, text=True, timeout=60)
        loaded, default = done.stdout.splitlines()
        assert done.returncode == 0, done.stderr
        if data_home is None:  # the plain case; with XDG_DATA_HOME set, platformdirs says (its rules are many)
            assert loaded == "", loaded
        if sys.platform.startswith("linux") or sys.platform == "darwin":
            expected = subprocess.run([sys.executable, "-c", "from oboyu.paths import default_db_path; print(default_db_path())"],
                                      env=env, capture_output=True, text=True, timeout=60).stdout.strip()
            assert default == expected, (data_home, default, expected)
