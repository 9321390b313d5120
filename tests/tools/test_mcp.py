"""``ctxfs serve`` through the real ``mcp`` client: in memory, over stdio and over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.tools.mcpserver import OWNER_META_KEY, McpTools, create_server

pytestmark = pytest.mark.anyio

CRLF = b"alpha\r\nbeta\r\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's client runs its transports on asyncio


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_bytes(CRLF)
    return root


async def memory_server() -> tuple[Any, Fs]:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    await fs.backend.write("notes.md", CRLF, expect=ABSENT)
    return create_server(McpTools(fs)), fs


async def stale_conflict(first: Client, second: Client) -> None:
    """Both read; the second edits; the first's edit is refused stale, with its code."""
    for client in (first, second):
        assert not (await client.call_tool("read", {"file_path": "notes.md"})).is_error
    edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
    assert not (await second.call_tool("edit", edit)).is_error
    refused = await first.call_tool("edit", {**edit, "old_string": "alpha"})
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "stale"
    assert refused.content[0].text.startswith("Error [stale]")  # type: ignore[union-attr]
    again = await first.call_tool("read", {"file_path": "notes.md"})
    assert again.structured_content is not None
    assert again.structured_content["content"] == "alpha\ngamma\n"
    assert not (await first.call_tool("edit", {**edit, "old_string": "alpha"})).is_error


# -- in memory ---------------------------------------------------------------------------------


async def test_tools_carry_schemas_and_annotations() -> None:
    server, _ = await memory_server()
    async with Client(server, raise_exceptions=True) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == ["read", "write", "edit", "list_dir", "glob", "grep"]
    read, edit = tools["read"], tools["edit"]
    assert read.input_schema["required"] == ["file_path"]
    assert read.input_schema["additionalProperties"] is False
    assert read.output_schema is not None
    assert "content" in read.output_schema["required"]
    assert read.annotations is not None
    assert (read.annotations.read_only_hint, read.annotations.destructive_hint) == (True, False)
    assert edit.annotations is not None
    assert (edit.annotations.read_only_hint, edit.annotations.idempotent_hint) == (False, False)


async def test_two_client_sessions_are_two_owners() -> None:
    server, fs = await memory_server()
    async with (
        Client(server, mode="legacy", raise_exceptions=True) as first,
        Client(server, mode="legacy", raise_exceptions=True) as second,
    ):
        await stale_conflict(first, second)
    assert (await fs.backend.read("notes.md")).data == b"gamma\r\ngamma\r\n"


async def test_a_stateless_client_may_name_its_owner() -> None:
    server, _ = await memory_server()
    async with Client(server, raise_exceptions=True) as client:
        edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
        await client.call_tool("read", {"file_path": "notes.md"})
        assert not (await client.call_tool("edit", edit)).is_error  # the server's owner
        named = await client.call_tool(
            "edit",
            {**edit, "old_string": "alpha"},
            meta={OWNER_META_KEY: "b"},  # type: ignore[arg-type]
        )
        assert named.structured_content is not None
        assert named.structured_content["error"]["code"] == "not_observed"


async def test_every_failure_is_an_error_result_with_its_code() -> None:
    server, fs = await memory_server()
    async with Client(server, raise_exceptions=True) as client:
        cases = {
            "not_found": ("read", {"file_path": "missing.md"}),
            "outside_root": ("read", {"file_path": "../etc/passwd"}),
            "invalid_argument": ("edit", {"file_path": "notes.md"}),
            "not_observed": (
                "edit",
                {"file_path": "notes.md", "old_string": "a", "new_string": "b"},
            ),
        }
        for code, (tool, arguments) in cases.items():
            result = await client.call_tool(tool, arguments)
            assert result.is_error, code
            assert result.structured_content is not None
            assert result.structured_content["error"]["code"] == code
            assert result.structured_content["error"]["hint"]
        unknown = await client.call_tool("delete_everything", {})
        assert unknown.is_error
    assert (await fs.backend.read("notes.md")).data == CRLF


# -- a subprocess over stdio -------------------------------------------------------------------


def stdio(root: Path, *options: str) -> StdioServerParameters:
    command = [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(root), *options]
    return StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))


async def test_serve_over_stdio(workspace: Path) -> None:
    async with Client(stdio(workspace)) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["read", "write", "edit", "list_dir", "glob", "grep"]
        result = await client.call_tool("read", {"file_path": "notes.md"})
        assert result.structured_content is not None
        assert result.structured_content["content"] == "alpha\nbeta\n"
        edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
        assert not (await client.call_tool("edit", edit)).is_error
    assert (workspace / "notes.md").read_bytes() == b"alpha\r\ngamma\r\n"


async def test_two_stdio_servers_on_one_root_catch_each_others_changes(workspace: Path) -> None:
    async with Client(stdio(workspace)) as first, Client(stdio(workspace)) as second:
        await stale_conflict(first, second)
    assert (workspace / "notes.md").read_bytes() == b"gamma\r\ngamma\r\n"


async def test_serve_read_only_and_deny(workspace: Path) -> None:
    (workspace / "secret").mkdir()
    (workspace / "secret" / "key").write_text("k")
    async with Client(stdio(workspace, "--read-only", "--deny", "secret")) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["read", "list_dir", "glob", "grep"]
        denied = await client.call_tool("read", {"file_path": "secret/key"})
        assert denied.structured_content is not None
        assert denied.structured_content["error"]["code"] == "denied"


# -- a subprocess over streamable HTTP -----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server(workspace: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(workspace),
         "--transport", "http", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"ctxfs serve did not start: {process.communicate()[1]}")
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=10)
        assert out == "", "nothing but MCP may reach stdout"


async def test_serve_over_http_keeps_sessions_apart(http_server: str, workspace: Path) -> None:
    async with (
        Client(http_server, mode="legacy") as first,
        Client(http_server, mode="legacy") as second,
    ):
        await stale_conflict(first, second)
    async with Client(http_server) as stateless:
        listed = await stateless.call_tool("list_dir", {"path": ""})
        assert listed.structured_content is not None
        assert [entry["name"] for entry in listed.structured_content["entries"]] == ["notes.md"]
    assert (workspace / "notes.md").read_bytes() == b"gamma\r\ngamma\r\n"
