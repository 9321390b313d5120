"""The stdio wire of ``ctxfs serve``, driven byte by byte over real pipes.

The MCP client always writes one whole line at a time and reads eagerly; these
tests do what it does not: several frames in one write, a frame split across
writes, a reply larger than the pipe's buffer that the client is slow to read,
a line that is not JSON, and a last frame without its newline. Calls overlap, a
cancelled call is never answered, and a malformed call gets the SDK's error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import INVALID_PARAMS

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def frame(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def read_call(request_id: int, path: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "read", "arguments": {"file_path": path, "fresh": True}},  # its text
    }


SLOW_PLUGIN = '''
    import anyio
    from ctxfs.core import hookimpl

    class Slow:
        """Holds a read of ``slow-N.txt`` for N tenths of a second before it is authorized."""

        @hookimpl
        async def ctxfs_authorize(self, ctx, op):
            name = op.path.rsplit("/", 1)[-1]
            if name.startswith("slow-"):
                await anyio.sleep(int(name[5:].split(".")[0]) / 10)

    SLOW = Slow()
'''


@pytest.fixture
def started(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``ctxfs serve`` on a small workspace, before the client's first message.

    A plugin holds a read of ``slow-10.txt`` for 1 s, of ``slow-30.txt`` for 3 s.
    """
    root = tmp_path / "ws"
    root.mkdir()
    (root / "small.txt").write_text("one\ntwo\n")
    (root / "big.txt").write_text("".join(f"line {n:06d} {'x' * 90}\n" for n in range(900)))
    # Past what fs-local reads on the event loop: its read waits on a worker thread.
    (root / "large.txt").write_text("".join(f"{n:07d}\n" for n in range(40_000)))
    for tenths in (10, 30):
        (root / f"slow-{tenths}.txt").write_text("slow\n")
    (tmp_path / "slowplugin.py").write_text(textwrap.dedent(SLOW_PLUGIN))
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(root),
         "--plugin", "slowplugin:SLOW"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])},
    )  # fmt: skip
    yield process
    stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill a server started over pipes and close its pipes."""
    process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        assert stream is not None
        stream.close()


@pytest.fixture
def server(started: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """The server after the initialize handshake."""
    send(started, frame(INITIALIZE))
    assert reply(started)["id"] == 0
    send(started, frame(INITIALIZED))
    return started


def reply(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.endswith(b"\n"), f"no whole reply; stderr: {stderr_of(process)}"
    message: dict[str, Any] = json.loads(line)
    return message


def stderr_of(process: subprocess.Popen[bytes]) -> str:
    process.kill()
    assert process.stderr is not None
    return process.stderr.read().decode(errors="replace")


def send(process: subprocess.Popen[bytes], data: bytes) -> None:
    assert process.stdin is not None
    process.stdin.write(data)
    process.stdin.flush()


def test_frames_in_one_write_and_a_line_that_is_not_json(
    server: subprocess.Popen[bytes],
) -> None:
    send(
        server, frame(read_call(1, "small.txt")) + b"{not json\n" + frame(read_call(2, "small.txt"))
    )
    replies = {message["id"]: message for message in (reply(server) for _ in range(3))}
    assert set(replies) == {1, 2, None}
    assert replies.pop(None)["error"]["code"] == -32700  # the spec's parse error, id null
    for message in replies.values():
        assert message["result"]["structuredContent"]["content"] == "one\ntwo\n"


def test_a_frame_split_across_writes(server: subprocess.Popen[bytes]) -> None:
    data = frame(read_call(3, "small.txt"))
    for start in range(0, len(data), 7):
        send(server, data[start : start + 7])
        time.sleep(0.002)
    assert reply(server)["result"]["content"][0]["text"].startswith("1 one\n2 two\n")


def test_a_reply_larger_than_the_pipe_reaches_a_slow_reader_whole(
    server: subprocess.Popen[bytes],
) -> None:
    send(server, frame(read_call(4, "big.txt")) + frame(read_call(5, "small.txt")))
    time.sleep(0.5)  # the server fills the pipe and must wait for room, then go on
    replies = {message["id"]: message for message in (reply(server), reply(server))}
    assert set(replies) == {4, 5}  # both, in whichever order they were done
    content = replies[4]["result"]["structuredContent"]["content"]
    assert len(content) > 1 << 16
    assert content.splitlines() == [f"line {n:06d} {'x' * 90}" for n in range(900)]


def test_a_last_frame_without_newline_is_served_then_the_server_exits(
    server: subprocess.Popen[bytes],
) -> None:
    send(server, frame(read_call(6, "small.txt")).rstrip(b"\n"))
    assert server.stdin is not None
    server.stdin.close()
    assert reply(server)["id"] == 6
    assert server.wait(timeout=10) == 0


def test_a_handshake_after_a_line_that_is_not_json_is_served(
    started: subprocess.Popen[bytes],
) -> None:
    # The first line decides how the connection is served; a broken one must not end it.
    send(started, b"{not json\n" + frame(INITIALIZE) + frame(INITIALIZED))
    assert reply(started)["error"]["code"] == -32700  # answered, then the handshake is served
    assert reply(started)["result"]["protocolVersion"] == "2025-11-25"
    send(started, frame(read_call(7, "small.txt")))
    assert reply(started)["result"]["structuredContent"]["content"] == "one\ntwo\n"


def test_a_client_that_closes_before_its_first_message_ends_the_server(
    started: subprocess.Popen[bytes],
) -> None:
    assert started.stdin is not None
    started.stdin.close()
    assert started.wait(timeout=60) == 0  # (its start-up included: a loaded machine is slow)


def test_requests_sent_before_the_client_closes_are_all_answered(
    server: subprocess.Popen[bytes],
) -> None:
    # The reads are still running when stdin reaches its end; they are answered, then it exits.
    send(server, frame(read_call(8, "large.txt")) + frame(read_call(9, "small.txt")))
    assert server.stdin is not None
    server.stdin.close()
    replies = {message["id"]: message for message in (reply(server), reply(server))}
    assert replies[8]["result"]["structuredContent"]["total_lines"] == 40_000
    assert replies[9]["result"]["structuredContent"]["content"] == "one\ntwo\n"
    assert server.wait(timeout=10) == 0


def test_a_request_the_client_cancelled_does_not_hold_up_the_exit(
    server: subprocess.Popen[bytes],
) -> None:
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 10, "reason": "no longer needed"},
    }
    send(server, frame(read_call(10, "large.txt")) + frame(cancel))
    assert server.stdin is not None
    server.stdin.close()
    # A cancelled request may never be answered; the server must not wait for it (30 s).
    assert server.wait(timeout=10) == 0


def cancel(request_id: int) -> dict[str, Any]:
    params = {"requestId": request_id, "reason": "not needed"}
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


def test_a_slow_call_does_not_hold_up_the_next(server: subprocess.Popen[bytes]) -> None:
    send(server, frame(read_call(11, "slow-10.txt")) + frame(read_call(12, "small.txt")))
    first, second = reply(server), reply(server)
    assert (first["id"], second["id"]) == (12, 11)
    assert first["result"]["structuredContent"]["content"] == "one\ntwo\n"
    assert second["result"]["structuredContent"]["content"] == "slow\n"


def test_a_cancelled_call_is_never_answered_and_the_server_serves_on(
    server: subprocess.Popen[bytes],
) -> None:
    send(server, frame(read_call(13, "slow-30.txt")) + frame(cancel(13)))
    send(server, frame(read_call(14, "small.txt")))
    assert reply(server)["id"] == 14
    started = time.monotonic()
    assert server.stdin is not None
    server.stdin.close()  # the cancelled call is not waited for, and never answered
    assert server.wait(timeout=10) == 0
    assert time.monotonic() - started < 2.5  # it would have run 3 s
    assert server.stdout is not None
    assert server.stdout.read() == b""


@pytest.mark.parametrize("request_id", [{"x": 1}, [1], None, 1.5, True])
def test_a_cancel_naming_no_request_is_ignored_and_the_server_serves_on(
    server: subprocess.Popen[bytes], request_id: object
) -> None:
    notification = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
    send(server, frame({**notification, "params": {"requestId": request_id}}))
    send(server, frame(read_call(18, "small.txt")))
    assert reply(server)["result"]["structuredContent"]["content"] == "one\ntwo\n"


@pytest.mark.parametrize(
    "params",
    [{"arguments": {}}, {"name": 7}, {"name": "read", "arguments": []}],
    ids=["no name", "a number for a name", "a list for arguments"],
)
def test_a_malformed_call_gets_the_sdks_error_and_the_server_reads_on(
    server: subprocess.Popen[bytes], params: dict[str, Any]
) -> None:
    send(server, frame({"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": params}))
    answer = reply(server)
    assert answer["id"] == 15
    assert answer["error"]["code"] == INVALID_PARAMS
    send(server, frame(read_call(16, "small.txt")))
    assert reply(server)["result"]["structuredContent"]["content"] == "one\ntwo\n"


def test_a_call_sent_with_the_handshake_is_served(started: subprocess.Popen[bytes]) -> None:
    send(started, frame(INITIALIZE) + frame(INITIALIZED) + frame(read_call(17, "small.txt")))
    assert reply(started)["id"] == 0
    answer = reply(started)
    assert answer["id"] == 17
    assert answer["result"]["structuredContent"]["content"] == "one\ntwo\n"


SLOW_READS = """
import anyio
from ctxfs.core import hookimpl

class Slow:
    @hookimpl
    async def ctxfs_authorize(self, ctx, op):
        await anyio.sleep(2)

SLOW = Slow()
"""


@pytest.mark.slow
def test_a_client_gone_during_a_call_ends_the_server_quietly(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "slow_reads.py").write_text(SLOW_READS)
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("one\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "plugin"), "CTXFS_STATE_DIR": str(tmp_path)}
    command = ["serve", "--root", str(tmp_path / "root"), "--plugin", "slow_reads:SLOW"]
    server = subprocess.Popen(
        [sys.executable, "-m", "ctxfs.tools.cli", *command],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert server.stdin is not None
    assert server.stdout is not None
    assert server.stderr is not None
    call = {"name": "read", "arguments": {"file_path": "a.txt"}}
    for message in (INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                              "params": call}):  # fmt: skip
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()
        if message is INITIALIZE:
            server.stdout.readline()
    time.sleep(0.5)  # the call is running
    server.stdout.close()  # the client is gone (its host was killed)
    server.stdin.close()
    assert server.wait(timeout=60) == 141  # as any program whose reader went away
    assert server.stderr.read() == b""
    server.stderr.close()
