"""What ``ctxfs serve`` offers, as real clients list and call it: sizes, strictness, selection."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from ctxfs.tools.cli import main
from tests.tools.conftest import DEFAULT_TOOLS

if TYPE_CHECKING:
    from agents.mcp import MCPServerStdioParams

pytestmark = pytest.mark.anyio

REFERENCE_CHARS = 7_972
"""The reference MCP server's 14 tools as listed (``@modelcontextprotocol/server-filesystem``
2026.8.31; ``benchmarks/definitions.py`` measures both again)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's client runs its transports on asyncio


def command(root: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(root), *options]


def serve(root: Path, *options: str) -> StdioServerParameters:
    """``ctxfs serve --root *root* *options*`` over stdio, its observations in this process."""
    executable, *args = command(root, "--observations", "memory://", *options)
    return StdioServerParameters(command=executable, args=args, env=dict(os.environ))


def listed(tool: Any) -> str:
    """What a model is shown of an MCP tool: name, description and input schema, compact."""
    shown = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
    return json.dumps(shown, separators=(",", ":"))


async def refused(client: Client, name: str, arguments: dict[str, Any]) -> bool:
    """Whether the server refuses to call *name*: a protocol error, or an error result."""
    try:
        result = await client.call_tool(name, arguments)
    except MCPError:
        return True
    return result.is_error and "offered" in str(result.content)  # (unknown, or not offered)


async def test_the_default_definitions_cost_no_more_than_the_reference_servers(
    workspace: Path,
) -> None:
    async with Client(serve(workspace), mode="legacy") as client:
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == DEFAULT_TOOLS
    assert sum(len(listed(tool)) for tool in tools) <= REFERENCE_CHARS
    assert not {"$defs", "$ref"} & {key for tool in tools for key in _keys(tool.input_schema)}


async def test_every_tool_passes_the_agents_sdk_strict_conversion(workspace: Path) -> None:
    # The SDK loads here, not at collection, which every worker does: it takes seconds.
    from agents import Agent, FunctionTool, RunContextWrapper  # noqa: PLC0415
    from agents.mcp import MCPServerStdio  # noqa: PLC0415

    executable, *args = command(workspace, "--observations", "memory://")
    params: MCPServerStdioParams = {"command": executable, "args": args, "env": dict(os.environ)}
    async with MCPServerStdio(params=params, name="ctxfs") as server:
        agent = Agent(
            name="a", mcp_servers=[server], mcp_config={"convert_schemas_to_strict": True}
        )
        tools = await agent.get_mcp_tools(RunContextWrapper(context=None))
    strict = [t.name for t in tools if isinstance(t, FunctionTool) and t.strict_json_schema]
    assert strict == DEFAULT_TOOLS


async def test_a_subset_is_listed_and_only_it_can_be_called(workspace: Path) -> None:
    async with Client(serve(workspace, "--tools", "read, edit,grep"), mode="legacy") as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["read", "edit", "grep"]
        assert not (await client.call_tool("read", {"file_path": "notes.md"})).is_error
        assert await refused(client, "write", {"file_path": "new.md", "content": "x\n"})
    assert not (workspace / "new.md").exists()


async def test_prefixed_names_are_listed_and_callable(workspace: Path) -> None:
    options = ("--tool-prefix", "fs_", "--tools", "read,write")
    async with Client(serve(workspace, *options), mode="legacy") as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["fs_read", "fs_write"]
        written = await client.call_tool("fs_write", {"file_path": "new.md", "content": "x\n"})
        assert not written.is_error
        read = await client.call_tool("fs_read", {"file_path": "new.md"})
        assert read.structured_content is not None
        assert read.structured_content["content"] == "x\n"
        assert await refused(client, "write", {"file_path": "other.md", "content": "y\n"})
        assert await refused(client, "fs_edit", {"file_path": "new.md", "old_string": "x"})
    assert not (workspace / "other.md").exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [(("--tools", "read,reed"), "'reed'"), (("--tool-prefix", "fs prefix"), "'fs prefix'")],
)
def test_a_tool_selection_no_client_can_use_is_a_usage_error(
    workspace: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...], named: str
) -> None:
    assert main(["serve", "--root", str(workspace), *options]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("ctxfs: ")
    assert named in line


def _keys(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        return set(schema) | {key for value in schema.values() for key in _keys(value)}
    if isinstance(schema, list):
        return {key for item in schema for key in _keys(item)}
    return set()
