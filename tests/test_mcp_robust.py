"""The MCP server always answers: whatever a client sends as a tool's arguments (lone surrogates,
bad patterns, 10 MB strings, huge or negative numbers, wrong types, missing or unknown
arguments, paths that are not indexed files), each call gets a result or an `isError` reply of
one line that says what to do, within its time cap, and the server's stderr stays quiet."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client import Client

import oboyu.mcp.server as mcp_server
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.mcp.server import OboyuTools, build_server
from oboyu.models.embedding import Embedder

PARAMETERS = {
    "search": ("query", "mode", "k", "path", "type", "since"),
    "read": ("path", "start_line", "end_line"),
    "status": (),
    "index": ("path",),
}


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("robust")
    root = tmp / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "meeting.md").write_text("# 会議\n\n議事録は翌日までに共有フォルダにまとめる。\n\n次回は十二月。\n", encoding="utf-8")
    (root / "sub" / "garden.txt").write_text("Water the tomato plants twice a week.\n", encoding="utf-8")
    os.mkfifo(root / "pipe")  # never indexed; reading or indexing it must not hang
    try:  # a Shift_JIS name from an old archive (Linux keeps it; macOS refuses it)
        with open(os.fsencode(root) + b"/\x82\xa0memo.txt", "wb") as handle:
            handle.write("ゴーヤの水やり当番表".encode())
    except OSError:
        pass
    db = tmp / "index.duckdb"
    with Store(db) as store:
        Indexer(store, embedder).index([root])
    return root, db


def one_line_error(result) -> str:
    assert result.is_error, result.content
    text = result.content[0].text
    assert text and "\n" not in text and len(text) <= 600, text
    assert "unexpected" not in text, text  # a crash, not a refusal
    return text


def answered(result) -> str:
    """A result (its JSON text) or a one-line refusal."""
    if result.is_error:
        return one_line_error(result)
    assert isinstance(result.structured_content, dict), result.content
    return result.content[0].text


def test_bad_arguments_get_a_one_line_error_that_says_what_to_do(notes: tuple[Path, Path], embedder: Embedder) -> None:
    root, db = notes
    meeting = str(root / "meeting.md")
    server = build_server(OboyuTools(db, embedder, allow_index=True))
    refusals = [
        ("search", {"query": "議事録", "path": "[z-a]"}, "is not a usable pattern"),
        ("search", {"query": "議事録", "path": "\\"}, "is not a usable pattern"),
        ("search", {"query": "議事録", "path": "*a*a*a*a*a*a*a*a*a*a*c"}, "wildcards"),  # would backtrack for hours
        ("search", {"query": "議事録", "path": "[z-a]" * 2_000_000}, "path is longer than"),
        ("search", {"query": "x" * 10_000_000}, "query is longer than"),
        ("search", {"query": "x", "mode": "m" * 10_000_000}, "mode is longer than"),
        ("search", {"query": "x", "type": "md," * 3_000_000}, "type is longer than"),
        ("search", {"query": "x", "k": 10**12}, "k must be between 1 and 50"),
        ("search", {"query": "x", "k": 10**30}, "k must be between 1 and 50"),
        ("search", {"query": "x", "k": -1}, "k must be between 1 and 50"),
        ("search", {"query": "x", "k": 0}, "k must be between 1 and 50"),
        ("search", {"query": "x", "k": "ten"}, "k: input should be a valid integer"),
        ("search", {"query": "x", "k": True}, "k: input should be a valid integer"),
        ("search", {"query": "x", "k": "5"}, "k: input should be a valid integer"),
        ("search", {"query": "x", "k": 2.5}, "search takes query"),
        ("search", {"query": "x", "path": 123}, "path: input should be a valid string (got a number)"),
        ("search", {"query": "x", "mode": "nonsense"}, "unknown mode 'nonsense'"),
        ("search", {"query": "x", "type": ["x"]}, "type: input should be a valid string (got a list)"),
        ("search", {"query": "x", "since": "yesterday-ish"}, "not a date"),
        ("search", {"query": None}, "query: input should be a valid string"),
        ("search", {}, "query is missing"),
        ("search", {"query": "x", "top_k": 3}, "takes no argument 'top_k'"),
        ("search", {"query": "   "}, "query is empty"),
        ("read", {"path": meeting, "start_line": -5}, "start_line must be 1 or more"),
        ("read", {"path": meeting, "start_line": 0}, "start_line must be 1 or more"),
        ("read", {"path": meeting, "end_line": -1}, "end_line must be 1 or more"),
        ("read", {"path": meeting, "start_line": 4, "end_line": 2}, "end_line 2 is before start_line 4"),
        ("read", {"path": meeting, "start_line": 10**12}, "past the end"),
        ("read", {"path": meeting, "start_line": "three"}, "start_line: input should be a valid integer"),
        ("read", {"path": 123}, "path: input should be a valid string"),
        ("read", {}, "path is missing"),
        ("read", {"path": ""}, "give a file's absolute path"),  # a trial's empty path got "invalid path" alone
        ("read", {"path": meeting, "lines": "1-3"}, "takes no argument 'lines'"),
        ("read", {"path": meeting + "\ud800"}, "no such file"),  # as meeting.md\ufffd
        ("read", {"path": str(root / "nowhere.md")}, "no such file"),
        ("read", {"path": str(root / "sub")}, "is a folder"),
        ("read", {"path": str(root / "pipe")}, "not an indexed file"),
        ("read", {"path": "/etc/passwd"}, "not an indexed file"),
        ("read", {"path": "notes/meeting.md"}, "absolute"),
        ("read", {"path": "/" + "x" * 10_000_000}, "path is longer than"),
        ("status", {"verbose": True}, "status takes no arguments"),
        ("index", {"path": 123}, "path: input should be a valid string"),
        ("index", {"path": "\ud800"}, "absolute"),
        ("index", {"path": "/tmp"}, "inside an indexed root"),
        ("index", {}, "path is missing"),
        ("search", {"query": "議事録", "path": "\ud800"}, "no indexed file passes the filters"),  # matches no name
        ("index", {"path": str(root / "sub" / "typo")}, "no such file or folder"),  # not "finished", nothing changed
        ("nosuchtool", {}, "the tools are index, read, search, status"),
        ("search", {"query": "議事録", "path": "!"}, "not a usable pattern (it is empty)"),  # it had filtered nothing
    ]
    results = [  # these answer with a result
        ("search", {"query": "議事録\ud800"}, "meeting.md"),  # a lone surrogate, as half an emoji arrives
        ("search", {"query": "議事録", "since": "99999999999999999999d"}, "results"),
        ("search", {"query": "議事録", "since": "9" * 400 + "d"}, "results"),  # past any date: all time
        ("search", {"query": "議事録", "k": 3.0}, "results"),  # JSON Schema's integer: 3.0 is 3
        ("read", {"path": meeting, "end_line": 10**30}, "次回は十二月"),
        ("index", {"path": str(root / "pipe")}, "skipped"),
    ]

    async def session() -> None:
        async with Client(server) as client:
            for name, arguments, said in refusals:
                started = time.monotonic()
                text = one_line_error(await client.call_tool(name, arguments))
                assert said in text, (name, str(arguments)[:80], text)
                assert time.monotonic() - started < 10, (name, str(arguments)[:80])
            for name, arguments, said in results:
                result = await client.call_tool(name, arguments)
                assert not result.is_error and said in result.content[0].text, (name, arguments, result.content)
            found = await client.call_tool("search", {"query": "tomato", "k": 1})
            assert "garden.txt" in found.content[0].text  # the session still answers
            # a file deleted since it was indexed is an update that removes it, not a refusal
            gone = root / "sub" / "gone.md"
            gone.write_text("# 消えるメモ\n\nすぐに消す。\n", encoding="utf-8")
            assert '"added": 1' in (await client.call_tool("index", {"path": str(gone)})).content[0].text
            gone.unlink()
            removed = await client.call_tool("index", {"path": str(gone)})
            assert not removed.is_error and '"removed": 1' in removed.content[0].text, removed.content

            odd = [p for p in os.listdir(os.fsencode(root)) if p.endswith(b"memo.txt")]
            if odd:  # its name is not UTF-8: a result that JSON can hold, and read takes it back
                hits = await client.call_tool("search", {"query": "ゴーヤの水やり当番表", "k": 1})
                assert not hits.is_error, hits.content
                path = hits.structured_content["results"][0]["path"]
                assert path.endswith("memo.txt") and not any("\ud800" <= c <= "\udfff" for c in path)
                shown = await client.call_tool("read", {"path": path})
                assert not shown.is_error and "ゴーヤ" in shown.structured_content["text"], shown.content

    anyio.run(session)


def test_a_call_over_its_time_cap_answers_and_the_session_goes_on(notes: tuple[Path, Path], embedder: Embedder,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root, db = notes
    tools = OboyuTools(db, embedder, allow_index=True)
    server = build_server(tools)
    release = threading.Event()
    real_search = tools.live.search

    def stuck_search(*args, **kwargs):
        release.wait(30)
        return real_search(*args, **kwargs)

    class StuckIndexer:
        def index(self, paths):
            release.wait(30)
            raise AssertionError("abandoned: its answer is not read")

    monkeypatch.setitem(mcp_server.CALL_SECONDS, "search", 0.5)
    monkeypatch.setitem(mcp_server.CALL_SECONDS, "index", 0.5)
    monkeypatch.setattr(mcp_server, "open_indexer", lambda live, embedder: StuckIndexer())

    async def session() -> None:
        async with Client(server) as client:
            monkeypatch.setattr(tools.live, "search", stuck_search)
            started = time.monotonic()
            text = one_line_error(await client.call_tool("search", {"query": "tomato"}))
            assert "took over 0.5 s" in text and time.monotonic() - started < 5
            assert "documents" in answered(await client.call_tool("status", {}))

            stats = await client.call_tool("index", {"path": str(root / "sub")})
            assert not stats.is_error and stats.structured_content["finished"] is False
            assert "still going" in one_line_error(await client.call_tool("index", {"path": str(root / "sub")}))

            monkeypatch.setattr(tools.live, "search", real_search)
            release.set()
            found = await client.call_tool("search", {"query": "tomato", "k": 1})
            assert not found.is_error and "garden.txt" in found.content[0].text

    try:
        anyio.run(session)
    finally:
        release.set()


def test_a_bug_is_an_error_reply_too_with_its_traceback_in_the_log(notes: tuple[Path, Path], embedder: Embedder,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    _, db = notes
    tools = OboyuTools(db, embedder)
    server = build_server(tools)

    def broken() -> dict:
        raise RuntimeError("a bug")

    monkeypatch.setattr(tools, "status", broken)

    async def session() -> None:
        async with Client(server) as client:
            result = await client.call_tool("status", {})
            text = result.content[0].text
            assert result.is_error and "\n" not in text and "a bug" not in text and "log" in text, text

    anyio.run(session)

    def chain(exc: BaseException | None) -> list[BaseException]:
        return [exc, *chain(exc.__cause__)] if exc is not None else []

    assert any(r.exc_info and "a bug" in map(str, chain(r.exc_info[1])) for r in caplog.records)


def test_any_json_arguments_get_a_result_or_a_one_line_error(notes: tuple[Path, Path], embedder: Embedder) -> None:
    """Random JSON values of every type (and strings with lone surrogates, bad patterns, paths
    in and out of the index) for each tool's arguments, over one session."""
    root, db = notes
    server = build_server(OboyuTools(db, embedder, allow_index=True))
    strings = st.text(st.characters(), max_size=12) | st.sampled_from([
        "議事録", "tomato", "[z-a]", "!", "\\", "**/*.md", "*a*a*a*a*c", "sub/", "!sub/", "md,txt", "nope",
        "7d", "2026-01-31", "hybrid", "keyword", "\ud800", "", " ", "x" * 5000,
        str(root), str(root / "meeting.md"), str(root / "pipe"), str(root / "sub"), "/etc/passwd", "../x",
    ])
    numbers = st.integers(-3, 60) | st.integers() | st.sampled_from([10**12, -(10**30), 2**63]) | \
        st.floats(allow_nan=False, allow_infinity=False)
    values = st.recursive(st.none() | st.booleans() | numbers | strings,
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=2),
                          max_leaves=4)
    calls = st.sampled_from(sorted(PARAMETERS)).flatmap(
        lambda name: st.tuples(st.just(name), st.dictionaries(st.sampled_from((*PARAMETERS[name], "extra")), values, max_size=4)))

    with anyio.from_thread.start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(server)) as client:

        @settings(max_examples=150, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(calls)
        def any_call(call: tuple[str, dict]) -> None:
            name, arguments = call
            answered(portal.call(client.call_tool, name, arguments))

        any_call()
        found = portal.call(client.call_tool, "search", {"query": "tomato", "k": 1})
        assert not found.is_error and "garden.txt" in found.content[0].text


def test_stdio_answers_every_bad_call_with_a_quiet_stderr(notes: tuple[Path, Path], oboyu_env: dict, tmp_path: Path) -> None:
    """`oboyu mcp` as a client drives it, JSON lines on a pipe: a lone surrogate as JavaScript
    writes one (`"\\ud800"`) and an integer past what the SDK's JSON parser takes are answered
    (the SDK dropped such a line unanswered, so the client waited for ever), so is a line that is
    not JSON or no message, and refusals leave no traceback, nor any line, on stderr."""
    root, db = notes
    stderr_file = tmp_path / "stderr.txt"
    with open(stderr_file, "w") as stderr:
        server = subprocess.Popen([sys.executable, "-m", "oboyu.cli", "mcp", "--db", str(db)], env=oboyu_env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    replies: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [replies.put(json.loads(line)) for line in server.stdout], daemon=True).start()
    sent = 0

    def call(method: str, params: dict | None = None, raw: str | None = None) -> dict:
        nonlocal sent
        sent += 1
        line = raw or json.dumps({"jsonrpc": "2.0", "id": sent, "method": method, "params": params or {}})
        server.stdin.write(line.encode() + b"\n")
        server.stdin.flush()
        reply = replies.get(timeout=60)
        assert reply.get("id") == sent, reply
        return reply

    def tool(name: str, arguments: dict, raw_arguments: str | None = None) -> dict:
        raw = None
        if raw_arguments is not None:
            raw = f'{{"jsonrpc": "2.0", "id": {sent + 1}, "method": "tools/call", ' \
                  f'"params": {{"name": "{name}", "arguments": {raw_arguments}}}}}'
        return call("tools/call", {"name": name, "arguments": arguments}, raw)["result"]

    try:
        call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        found = tool("search", {"query": "議事録\ud800"})  # json.dumps writes it as \ud800
        assert not found.get("isError") and "meeting.md" in found["content"][0]["text"], found
        huge = tool("search", {}, raw_arguments='{"query": "x", "k": 1' + "0" * 5000 + "}")
        assert huge["isError"] and "between 1 and 50" in huge["content"][0]["text"], huge
        for arguments, said in [({"query": "x", "k": "ten"}, "k: input should be a valid integer"),
                                ({"query": "x", "top_k": 3}, "takes no argument 'top_k'"),
                                ({"query": "x", "path": "[z-a]"}, "not a usable pattern"),
                                ({"query": "x", "mode": "m" * 10_000_000}, "mode is longer than"),
                                ({"query": "x", "type": "\udc80"}, "unknown file type '\ufffd'"),
                                ({}, "query is missing")]:
            refused = tool("search", arguments)
            text = refused["content"][0]["text"]
            assert refused["isError"] and said in text and "\n" not in text and len(text) <= 600, text
        refused = tool("read", {"path": str(root / "meeting.md"), "start_line": -5})
        assert refused["isError"] and "start_line must be 1 or more" in refused["content"][0]["text"]
        found = tool("search", {"query": "tomato", "k": 1})
        assert not found.get("isError") and "garden.txt" in found["content"][0]["text"]
        server.stdin.write(b"\n  \n")  # blank lines: no message, no reply (the next reply is the first error's)
        for line, code in ((b"this is not json", -32700), (b'{"foo": 1}', -32600), (b"[1, 2]", -32600)):
            server.stdin.write(line + b"\n")  # JSON-RPC's error reply, id null: it was dropped unanswered
            server.stdin.flush()
            reply = replies.get(timeout=60)
            assert reply["id"] is None and reply["error"]["code"] == code, (line, reply)
        assert "garden.txt" in tool("search", {"query": "tomato", "k": 1})["content"][0]["text"]  # still serving
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    logged = stderr_file.read_text(errors="replace")
    assert "Traceback" not in logged and "rejected" not in logged and "failed" not in logged, logged
