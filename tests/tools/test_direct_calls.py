"""``tools/call`` answered straight from the wire (:mod:`ctxfs.tools.directcalls`).

Over real pipes, byte by byte, against ``ctxfs serve`` after the initialize
handshake: calls overlap, a cancelled call is never answered, what the SDK's
validators refuse gets the SDK's error, and every answer is the one the SDK
itself gives (a server started without the direct path answers the same).
In process: tracing or middleware of one's own sends every call to the SDK,
and a call still running at the end is answered ``Connection closed``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware
from mcp.shared.message import SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    TextContent,
)
from opentelemetry import trace

from ctxfs.core import Fs, MemoryBackend
from ctxfs.tools.directcalls import DirectCalls
from ctxfs.tools.mcpserver import McpTools, create_server
from ctxfs.tools.tool import Progress
from tests.tools.test_stdio import INITIALIZE, INITIALIZED, frame, read_call, reply, send, stop

SLOW_PLUGIN = """
    import anyio
    from ctxfs.core import hookimpl

    class Slow:
        '''Holds a read of ``slow-N.txt`` for N tenths of a second before it is authorized.'''

        @hookimpl
        async def ctxfs_authorize(self, ctx, op):
            name = op.path.rsplit("/", 1)[-1]
            if name.startswith("slow-"):
                await anyio.sleep(int(name[5:].split(".")[0]) / 10)

    SLOW = Slow()
"""
WITHOUT_DIRECT_CALLS = """
    import sys
    import anyio
    from ctxfs.core import open_fs
    from ctxfs.tools.mcpserver import McpTools, create_server
    from ctxfs.tools.stdio import serve_stdio

    async def main():
        async with open_fs(sys.argv[1]) as fs:
            await serve_stdio(create_server(McpTools(fs, per_session=False)))

    anyio.run(main)
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "small.txt").write_text("one\ntwo\n")
    for tenths in (10, 30):
        (root / f"slow-{tenths}.txt").write_text("slow\n")
    (tmp_path / "slowplugin.py").write_text(textwrap.dedent(SLOW_PLUGIN))
    return root


def _started(command: list[str], root: Path) -> subprocess.Popen[bytes]:
    environment = {**os.environ, "PYTHONPATH": f"{root.parent}{os.pathsep}{os.getcwd()}"}
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=environment,
    )  # fmt: skip


@pytest.fixture
def served(root: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``ctxfs serve`` (with the slow plugin) after the initialize handshake."""
    command = [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(root),
               "--plugin", "slowplugin:SLOW"]  # fmt: skip
    process = _started(command, root)
    send(process, frame(INITIALIZE))
    assert reply(process)["id"] == 0
    send(process, frame(INITIALIZED))
    yield process
    stop(process)


def cancel(request_id: int) -> dict[str, Any]:
    params = {"requestId": request_id, "reason": "not needed"}
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


def test_a_slow_call_does_not_hold_up_the_next(served: subprocess.Popen[bytes]) -> None:
    send(served, frame(read_call(1, "slow-10.txt")) + frame(read_call(2, "small.txt")))
    first, second = reply(served), reply(served)
    assert (first["id"], second["id"]) == (2, 1)
    assert first["result"]["structuredContent"]["content"] == "one\ntwo\n"
    assert second["result"]["structuredContent"]["content"] == "slow\n"


def test_a_cancelled_call_is_never_answered_and_the_server_serves_on(
    served: subprocess.Popen[bytes],
) -> None:
    send(served, frame(read_call(3, "slow-30.txt")) + frame(cancel(3)))
    send(served, frame(read_call(4, "small.txt")))
    assert reply(served)["id"] == 4
    started = time.monotonic()
    assert served.stdin is not None
    served.stdin.close()  # the cancelled call is not waited for, and never answered
    assert served.wait(timeout=10) == 0
    assert time.monotonic() - started < 2.5  # it would have run 3 s
    assert served.stdout is not None
    assert served.stdout.read() == b""


@pytest.mark.parametrize(
    "params",
    [{"arguments": {}}, {"name": 7}, {"name": "read", "arguments": []}],
    ids=["no name", "a number for a name", "a list for arguments"],
)
def test_what_the_sdk_refuses_gets_the_sdks_error(
    served: subprocess.Popen[bytes], params: dict[str, Any]
) -> None:
    send(served, frame({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}))
    answer = reply(served)
    assert answer["id"] == 5
    assert answer["error"]["code"] == INVALID_PARAMS
    send(served, frame(read_call(6, "small.txt")))
    assert reply(served)["result"]["structuredContent"]["content"] == "one\ntwo\n"


def test_a_call_sent_before_the_handshake_was_answered_is_served(root: Path) -> None:
    process = _started(
        [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(root)], root
    )
    try:
        send(process, frame(INITIALIZE) + frame(INITIALIZED) + frame(read_call(7, "small.txt")))
        assert reply(process)["id"] == 0
        answer = reply(process)
        assert answer["id"] == 7
        assert answer["result"]["structuredContent"]["content"] == "one\ntwo\n"
    finally:
        stop(process)


def test_each_answer_is_the_one_the_sdk_gives(root: Path) -> None:
    (root / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    (root / "unread.txt").write_text("one\n")
    calls = [
        read_call(10, "small.txt"),
        read_call(11, "crlf.txt"),
        read_call(12, "missing.txt"),
        {"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "id": 14, "method": "tools/call",
         "params": {"name": "edit", "arguments": {"file_path": "unread.txt", "old_string": "one",
                                                  "new_string": "1"}}},
    ]  # fmt: skip
    answers: list[list[dict[str, Any]]] = []
    for command in (
        [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(root)],
        [sys.executable, "-c", textwrap.dedent(WITHOUT_DIRECT_CALLS), str(root)],
    ):
        process = _started(command, root)
        try:
            send(process, frame(INITIALIZE))
            assert reply(process)["id"] == 0
            send(process, frame(INITIALIZED))
            answered = []
            for call in calls:
                send(process, frame(call))
                answered.append(reply(process))
            answers.append(answered)
        finally:
            stop(process)
    assert answers[0] == answers[1]
    assert answers[0][3]["result"]["isError"] is True
    assert answers[0][4]["result"]["structuredContent"]["error"]["code"] == "not_observed"


# -- in process ------------------------------------------------------------------------------


class Recorded:
    """A DirectCalls with a recording output, on a server over a memory store."""

    def __init__(self, calls: Any, answer: Any = None) -> None:
        self.sent: list[Any] = []
        tools = McpTools(Fs(MemoryBackend(), load_entrypoints=False), per_session=False)
        self.server = create_server(tools)
        self.direct = DirectCalls(answer or tools.call_direct, self.record, self.server, calls)
        init = JSONRPCRequest(jsonrpc="2.0", id=0, method="initialize", params={})
        assert not self.direct.received(init)
        self.direct.answered(
            JSONRPCResponse(jsonrpc="2.0", id=0, result={"protocolVersion": "2025-11-25"})
        )

    async def record(self, message: SessionMessage) -> None:
        self.sent.append(message.message)


def call(request_id: int, name: str = "list_dir") -> JSONRPCRequest:
    params = {"name": name, "arguments": {"path": ""}}
    return JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params)


@pytest.mark.anyio
async def test_calls_wait_for_the_sdks_answer_to_initialize() -> None:
    async with anyio.create_task_group() as calls:
        tools = McpTools(Fs(MemoryBackend(), load_entrypoints=False), per_session=False)

        async def ignored(message: SessionMessage) -> None:
            del message

        direct = DirectCalls(tools.call_direct, ignored, create_server(tools), calls)
        assert not direct.received(call(1))  # no handshake yet: the SDK's gate answers it
        init = JSONRPCRequest(jsonrpc="2.0", id=0, method="initialize", params={})
        assert not direct.received(init)
        assert not direct.received(call(2))  # not answered yet
        direct.answered(JSONRPCError(jsonrpc="2.0", id=0, error=ErrorData(code=-1, message="no")))
        assert not direct.received(call(3))  # refused: the gate stays shut
        ok = JSONRPCResponse(jsonrpc="2.0", id=0, result={"protocolVersion": "2025-11-25"})
        direct.answered(ok)
        assert direct.received(call(4))


@pytest.mark.anyio
async def test_tracing_or_middleware_of_ones_own_sends_calls_to_the_sdk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with anyio.create_task_group() as calls:
        recorded = Recorded(calls)
        assert recorded.direct.received(call(1))

        class Configured(trace.TracerProvider):
            def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
                return trace.NoOpTracer()

        with monkeypatch.context() as patched:
            patched.setattr(trace, "get_tracer_provider", Configured)
            assert not recorded.direct.received(call(2))

        class Audit(ServerMiddleware[Any]):
            async def __call__(
                self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
            ) -> HandlerResult:
                return await call_next(ctx)

        recorded.server.middleware.append(Audit())
        assert not recorded.direct.received(call(3))
    assert [message.id for message in recorded.sent] == [1]


@pytest.mark.anyio
async def test_a_call_running_at_the_end_is_answered_connection_closed() -> None:
    started = anyio.Event()

    async def forever(params: CallToolRequestParams, progress: Progress | None) -> CallToolResult:
        started.set()
        await anyio.sleep_forever()
        return CallToolResult(content=[TextContent(type="text", text="never")])

    async with anyio.create_task_group() as calls:
        recorded = Recorded(calls, forever)
        assert recorded.direct.received(call(8))
        await started.wait()
        await recorded.direct.stop()
    (closed,) = recorded.sent
    assert isinstance(closed, JSONRPCError)
    assert (closed.id, closed.error.code) == (8, CONNECTION_CLOSED)


@pytest.mark.anyio
async def test_progress_is_reported_against_the_callers_token() -> None:
    async def reporting(params: CallToolRequestParams, progress: Progress | None) -> CallToolResult:
        assert progress is not None
        await progress(1, 2, "half way")
        return CallToolResult(content=[TextContent(type="text", text="done")])

    async with anyio.create_task_group() as calls:
        recorded = Recorded(calls, reporting)
        request = call(9)
        assert request.params is not None
        request.params["_meta"] = {"progressToken": "tok"}
        assert recorded.direct.received(request)
    note, done = recorded.sent
    assert isinstance(note, JSONRPCNotification)
    assert note.method == "notifications/progress"
    assert note.params == {"progressToken": "tok", "progress": 1, "total": 2, "message": "half way"}
    assert isinstance(done, JSONRPCResponse)
    assert done.result["content"] == [{"type": "text", "text": "done"}]
