"""The MCP server's stdio wire: its input lines made such that the SDK's parser takes them, the
protocol's file descriptor kept from everything else in the process, and an answer to a line that
is no message (the SDK drops it without a word, so a client waited)."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from oboyu.text import valid_text


def with_valid_strings(value: Any, text: Callable[[str], str] = valid_text) -> Any:
    """`value` with each string (keys too, at any depth) passed through `text`."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {with_valid_strings(key, text): with_valid_strings(item, text) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [with_valid_strings(item, text) for item in value]
    return value


def _clamped_int(digits: str) -> int:
    """A JSON integer; one longer than the SDK's parser takes (some 4,300 digits) clamped to 64 bits."""
    if len(digits) <= 4000:
        return int(digits)
    return -(2**63) if digits.startswith("-") else 2**63 - 1


def repaired_line(line: str) -> str:
    """A line of the protocol as the SDK's JSON parser takes it. That parser refuses a string
    with a lone surrogate (`"\\ud800"`, as JavaScript writes half an emoji) and an integer of
    thousands of digits, and the SDK then drops the request unanswered, so that the client waits
    for ever. Such a line is written anew: lone surrogates as U+FFFD, the integer clamped."""
    from mcp_types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        return line
    except ValueError:  # pydantic's ValidationError
        pass
    try:
        message = json.loads(line, parse_int=_clamped_int, parse_float=lambda f: max(-1e308, min(1e308, float(f))))
    except (ValueError, RecursionError):
        return line  # not JSON at all: `answer_unreadable_lines` says so
    return json.dumps(with_valid_strings(message), ensure_ascii=False)


class RepairedLines:
    """The protocol's input lines, each through `repaired_line` (what stdio_server iterates)."""

    def __init__(self, lines: Any):
        self.lines = lines

    def __aiter__(self) -> Any:
        return self._each()

    async def _each(self) -> Any:
        async for line in self.lines:
            if line.strip():  # a blank line is no message, nor an error to answer (some clients send them)
                yield repaired_line(line)


def protocol_stdin() -> RepairedLines:
    """The protocol's input from fd 0, which then points at the null device as the SDK's own
    stdio leaves it, so that nothing else in the process, nor a child, reads the protocol."""
    import anyio

    try:
        wire: BinaryIO = os.fdopen(os.dup(0), "rb", closefd=False)  # never closed: a worker may still read it
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        wire = sys.stdin.buffer
    return RepairedLines(anyio.wrap_file(io.TextIOWrapper(wire, encoding="utf-8", errors="replace")))


async def answer_unreadable_lines(wire: Any, to_server: Any, out: Any) -> None:
    """Messages from the wire to the server; a line that is none gets JSON-RPC's error reply
    (-32700 for one that is not JSON, -32600 for JSON that is no message), where the SDK's stdio
    passes the server an exception that it drops without a word, so a client waited."""
    from mcp.shared.message import SessionMessage
    from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
    from pydantic import ValidationError

    async with to_server:
        async for item in wire:
            if not isinstance(item, Exception):
                await to_server.send(item)
                continue
            not_json = isinstance(item, ValidationError) and any(e["type"] == "json_invalid" for e in item.errors())
            error = (ErrorData(code=PARSE_ERROR, message="Parse error: the line is not JSON") if not_json else
                     ErrorData(code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message MCP knows"))
            await out.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error)))
