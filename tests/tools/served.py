"""``ctxfs serve --transport http`` in a subprocess, and clients that send its tokens."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdef"}
"""What :func:`token_file` writes: principal -> token."""
CRLF = b"alpha\r\nbeta\r\n"
"""The workspace's ``notes.md``."""
LEGACY = "2025-06-18"
"""A handshake-era protocol version."""


def where_they_wait(pid: int) -> str:
    """What the kernel says of *pid* and its descendants: state, signals, threads, wait channel."""
    lines, pending = [], [pid]
    while pending:
        process = Path(f"/proc/{pending.pop()}")
        try:
            status = dict(
                line.split(":\t", 1) for line in (process / "status").read_text().splitlines()
            )
            tasks = sorted(task.name for task in (process / "task").iterdir())
            wchan = (process / "wchan").read_text()
            for task in tasks:
                pending += map(int, (process / "task" / task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
        shown = ("State", "SigPnd", "ShdPnd", "SigBlk", "SigCgt")
        lines.append(
            f"{process.name}: threads {tasks}, wchan {wchan}, "
            + ", ".join(f"{key} {status.get(key, '?')}" for key in shown)
        )
    return "\n".join(lines)


def running(pid: int) -> bool:
    """Whether process *pid* runs (neither gone nor a zombie)."""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def eventually(check: Callable[[], bool], seconds: float = 20) -> bool:
    """Whether *check* comes true within *seconds* (polled)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def token_file(directory: Path) -> Path:
    path = directory / "tokens"
    lines = ["# principal token", *(f"{who} {token}" for who, token in TOKENS.items())]
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)
    return path


@dataclass
class Served:
    """A running server: its endpoint, and what it said on stderr at start."""

    url: str
    process: subprocess.Popen[str]
    banner: list[str]
    """The ``serving`` line and the one after it."""
    said: str = ""
    """What it wrote on stderr after the banner, once stopped (the block has ended)."""

    def next_line(self) -> str:
        """The next line the server writes on stderr."""
        assert self.process.stderr is not None
        return self.process.stderr.readline().rstrip("\n")


@contextmanager
def serve_http(
    *options: str, host: str = "127.0.0.1", env: Mapping[str, str] | None = None
) -> Iterator[Served]:
    """Run ``ctxfs serve --transport http *options`` until the block ends (stdout must stay empty)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--transport", "http",
         "--host", host, "--port", str(port), *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"ctxfs serve did not start: {process.communicate()[1]}")
            time.sleep(0.05)
    banner: list[str] = []
    while not any("serving" in line for line in banner[:-1]):  # that line and the next
        line = process.stderr.readline()
        if not line:
            break
        banner.append(line.rstrip("\n"))
    served = Served(url=f"http://{host}:{port}/mcp", process=process, banner=banner)
    try:
        yield served
    finally:
        out, said = stopped(process)
        served.said = said
    assert out == "", "nothing but MCP may reach stdout"
    assert "killed workers" not in said, said  # (they should have ended when told)


def stopped(process: subprocess.Popen[str]) -> tuple[str, str]:
    """Stop a ``ctxfs serve`` with SIGTERM; what it wrote then on stdout and stderr."""
    process.terminate()
    try:
        out, said = process.communicate(timeout=20)  # (its requests in flight get 10 s)
    except subprocess.TimeoutExpired:
        waiting = where_they_wait(process.pid)
        try:  # a supervisor kills its workers 15 s after the stop
            said = process.communicate(timeout=30)[1][-2000:]
        except subprocess.TimeoutExpired:
            process.kill()
            said = "(and it did not end 50 s after it)\n" + process.communicate()[1][-2000:]
        pytest.fail(f"ctxfs serve did not stop within 20 s: {said}\n{waiting}")
    return out, said


@asynccontextmanager
async def client(
    url: str, token: str | None = None, *, mode: str | None = None
) -> AsyncIterator[Client]:
    """An ``mcp`` client of *url* sending *token* (current protocol unless *mode*), connected."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport) if mode is None else Client(transport, mode=mode) as connected:
            yield connected


def post(
    url: str, message: dict[str, Any], *, token: str | None = None, **headers: str
) -> httpx2.Response:
    """One raw JSON-RPC POST (no client library in between)."""
    sent = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **({} if token is None else {"Authorization": f"Bearer {token}"}),
        **{name.replace("_", "-"): value for name, value in headers.items()},
    }
    return httpx2.post(url, content=json.dumps(message), headers=sent, timeout=30)


def read_in_session(url: str, token: str, session: str, path: str) -> httpx2.Response:
    """A raw ``read`` of *path* in handshake-era session *session*."""
    read = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read", "arguments": {"file_path": path}}}  # fmt: skip
    return post(url, read, token=token, mcp_session_id=session, mcp_protocol_version=LEGACY)


def initialize(number: int = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0", "id": number, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}},
    }  # fmt: skip


async def stale_conflict(first: Client, second: Client) -> None:
    """Both read; the second edits; the first's edit is refused stale, with its code and the
    diff; the first's corrected edit then passes without a read."""
    for each in (first, second):
        assert not (await each.call_tool("read", {"file_path": "notes.md"})).is_error
    edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
    assert not (await second.call_tool("edit", edit)).is_error
    refused = await first.call_tool("edit", {**edit, "old_string": "alpha"})
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "stale"
    assert refused.content[0].text.startswith("Error [stale]")  # type: ignore[union-attr]
    assert "-beta\n+gamma" in refused.structured_content["error"]["details"]["diff"]
    # the diff shown whole counts as a read: the corrected edit needs none
    assert not (await first.call_tool("edit", {**edit, "old_string": "alpha"})).is_error
