"""The Claude Agent SDK server, called as Claude Code calls it: over MCP, on its instance.

The SDK has no fake model (it drives the Claude Code CLI), so each test connects the
``mcp`` client to the server instance of the config that ``server`` returns, over the
in-memory streams the SDK's own bridge serves it on, and lists and calls the tools.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, McpSdkServerConfig
from mcp import ClientSession
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.types import CallToolResult, ImageContent, TextContent

from ctxfs.core import ABSENT, Fs, MemoryBackend, NotFound
from ctxfs.core.policies import IntegrationSwitch, StaticIntegrations
from ctxfs.tools import BUILTIN_TOOLS, Exposure, FsToolset, ToolsetOptions
from ctxfs.tools.claude_agent import BUILTIN_FILE_TOOLS, allowed_tools, server
from tests.harnesses.common import run_example
from tests.tools.conftest import DEFAULT_TOOLS
from tests.tools.media import image

pytestmark = pytest.mark.anyio

WRITERS = {tool.name for tool in BUILTIN_TOOLS if tool.writes}


@asynccontextmanager
async def connected(config: McpSdkServerConfig) -> AsyncIterator[ClientSession]:
    """An MCP client session with the config's server, as the SDK serves it to Claude Code."""
    instance = config["instance"]
    assert isinstance(instance, Server)
    async with (
        create_client_server_memory_streams() as (client, served),
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(instance.run, *served, instance.create_initialization_options())
        async with ClientSession(*client) as session:
            await session.initialize()
            yield session
        tasks.cancel_scope.cancel()


def text(result: CallToolResult) -> str:
    """The text the model reads (the first block)."""
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


async def seeded() -> Fs:
    backend = MemoryBackend()
    await backend.write("notes.md", b"alpha\r\nbeta\r\n", expect=ABSENT)
    await backend.write("docs/guide.md", b"# guide\n", expect=ABSENT)
    return Fs(backend, load_entrypoints=False)


async def test_an_edit_after_an_outside_change_is_stale_with_its_hint() -> None:
    fs = await seeded()
    async with connected(server(fs.context(owner="agent"))) as claude:
        read = await claude.call_tool("read", {"file_path": "notes.md"})
        assert not read.is_error
        assert text(read).startswith("1 alpha\n2 beta\n")

        someone = fs.context(owner="someone-else")
        await someone.fs.read("notes.md")
        await someone.fs.edit("notes.md", "alpha", "ALPHA")

        edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
        stale = await claude.call_tool("edit", edit)
        assert stale.is_error
        message, *diff, hint = text(stale).split("\n")
        assert message == (
            "Error [stale]: notes.md has changed since it was last read;"
            " what changed since your version:"
        )
        assert diff == [
            "--- a/notes.md",
            "+++ b/notes.md",
            "@@ -1,2 +1,2 @@",
            "-alpha",
            "+ALPHA",
            " beta",
        ]
        assert hint == (
            "Next: The diff shows what changed since your read; it counts as a read of the"
            " current version: redo your change against it (no read needed)."
        )
        assert (await fs.backend.read("notes.md")).data == b"ALPHA\r\nbeta\r\n"

        redone = await claude.call_tool("edit", edit)  # no read again: the diff counts as one
        assert not redone.is_error, text(redone)
        assert (await fs.backend.read("notes.md")).data == b"ALPHA\r\ngamma\r\n"


async def test_a_read_then_an_edit_and_a_write_change_the_store() -> None:
    fs = await seeded()
    async with connected(server(fs.context(owner="agent"))) as claude:
        await claude.call_tool("read", {"file_path": "notes.md"})
        edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
        edited = await claude.call_tool("edit", edit)
        created = await claude.call_tool("write", {"file_path": "new.md", "content": "one\n"})

    assert not edited.is_error
    assert text(edited).startswith("Edited notes.md: 1 replacement")
    assert [type(block) for block in edited.content] == [TextContent]
    assert text(created) == "Created new.md (1 line, 4 bytes)."
    assert (await fs.backend.read("notes.md")).data == b"alpha\r\ngamma\r\n"
    assert (await fs.backend.read("new.md")).data == b"one\n"


async def test_a_model_mistake_is_an_error_result_not_a_protocol_error() -> None:
    fs = await seeded()
    async with connected(server(fs.context(owner="agent"))) as claude:
        unread = await claude.call_tool(
            "edit", {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
        )
        missing = await claude.call_tool("read", {"file_path": "absent.md"})
        unchecked = await claude.call_tool("read", {"path": "notes.md"})  # the SDK's schema check

    assert unread.is_error
    assert text(unread).startswith("Error [not_observed]: notes.md has not been read")
    assert missing.is_error
    assert text(missing).startswith("Error [not_found]")
    assert unchecked.is_error
    assert text(unchecked).startswith("Input validation error:")
    assert (await fs.backend.read("notes.md")).data == b"alpha\r\nbeta\r\n"


async def test_an_image_read_reaches_the_model_as_an_image_block() -> None:
    fs = await seeded()
    png = image((40, 30))
    await fs.backend.write("logo.png", png, expect=ABSENT)
    async with connected(server(fs.context(owner="agent"))) as claude:
        result = await claude.call_tool("read", {"file_path": "logo.png"})

    assert not result.is_error
    words, picture = result.content
    assert isinstance(words, TextContent)
    assert words.text.startswith("Returned the image logo.png (image/png, 40x30 px,")
    assert isinstance(picture, ImageContent)
    assert picture.mime_type == "image/png"
    assert base64.b64decode(picture.data) == png


async def test_the_listing_carries_schemas_and_hints() -> None:
    fs = await seeded()
    async with connected(server(fs.context(owner="agent"))) as claude:
        tools = {tool.name: tool for tool in (await claude.list_tools()).tools}

    assert list(tools) == DEFAULT_TOOLS
    assert tools["read"].input_schema["required"] == ["file_path"]
    read_hints, delete_hints = tools["read"].annotations, tools["delete"].annotations
    assert read_hints is not None
    assert delete_hints is not None
    assert (read_hints.read_only_hint, read_hints.destructive_hint) == (True, False)
    assert (delete_hints.read_only_hint, delete_hints.destructive_hint) == (False, True)


async def test_read_only_lists_no_writer_and_runs_none() -> None:
    fs = await seeded()
    toolset = FsToolset(ToolsetOptions(read_only=True))
    async with connected(server(fs.context(owner="agent"), toolset)) as claude:
        listed = [tool.name for tool in (await claude.list_tools()).tools]
        refused = await claude.call_tool("write", {"file_path": "x.md", "content": "x"})

    assert listed == [name for name in DEFAULT_TOOLS if name not in WRITERS]
    assert refused.is_error
    assert text(refused) == "Tool 'write' not found"  # the SDK's answer: it lists no writer
    with pytest.raises(NotFound):
        await fs.backend.read("x.md")


async def test_a_tool_a_plugin_hides_in_a_step_is_refused_when_called() -> None:
    integrations = StaticIntegrations(off={"w1": ["docs"]})
    switch = IntegrationSwitch(
        integrations,
        key_of=lambda path: "docs" if path.startswith("docs/") else None,
        keys=["docs"],
    )
    fs = await seeded()
    fs.plugin_manager.register(switch)
    ctx = fs.context(owner="agent", workspace="w1")
    async with connected(server(ctx)) as claude:  # the SDK lists the configured tools
        assert "edit" in [tool.name for tool in (await claude.list_tools()).tools]
        await claude.call_tool("read", {"file_path": "docs/guide.md"})
        edit = {"file_path": "docs/guide.md", "old_string": "guide", "new_string": "x"}
        refused = await claude.call_tool("edit", edit)
        assert refused.is_error
        assert text(refused).startswith("Error [invalid_argument]: tool 'edit' is not offered")
        assert (await fs.backend.read("docs/guide.md")).data == b"# guide\n"

        integrations.switch("docs", on=True, workspace="w1")
        assert not (await claude.call_tool("edit", edit)).is_error
    assert (await fs.backend.read("docs/guide.md")).data == b"# x\n"


@pytest.mark.parametrize(
    "options",
    [
        ToolsetOptions(),
        ToolsetOptions(read_only=True),
        ToolsetOptions(tool_prefix="fs_", exposure={"grep": Exposure.DEFERRED}),
    ],
    ids=["default", "read_only", "prefix_and_deferred"],
)
async def test_allowed_tools_names_the_listed_tools(options: ToolsetOptions) -> None:
    fs = await seeded()
    toolset = FsToolset(options)
    config = server(fs.context(owner="agent"), toolset, name="files")
    async with connected(config) as claude:
        listed = [tool.name for tool in (await claude.list_tools()).tools]

    assert allowed_tools(toolset, name="files") == [f"mcp__files__{name}" for name in listed]
    assert config["name"] == "files"
    ClaudeAgentOptions(
        mcp_servers={"files": config},
        allowed_tools=allowed_tools(toolset, name="files"),
        disallowed_tools=list(BUILTIN_FILE_TOOLS),
    )


async def test_a_deferred_tool_runs_through_call_tool() -> None:
    fs = await seeded()
    toolset = FsToolset(ToolsetOptions(exposure={"grep": Exposure.DEFERRED}))
    async with connected(server(fs.context(owner="agent"), toolset)) as claude:
        listed = [tool.name for tool in (await claude.list_tools()).tools]
        direct = await claude.call_tool("grep", {"pattern": "beta"})
        found = await claude.call_tool(
            "call_tool", {"name": "grep", "arguments": '{"pattern": "beta"}'}
        )
        as_object = await claude.call_tool(  # (as Claude often passes them)
            "call_tool", {"name": "grep", "arguments": {"pattern": "alpha"}}
        )
        as_number = await claude.call_tool("call_tool", {"name": "grep", "arguments": 7})

    assert "grep" not in listed
    assert {"search_tools", "call_tool"} <= set(listed)
    assert direct.is_error
    assert not found.is_error
    assert "notes.md" in text(found)
    assert not as_object.is_error
    assert "notes.md:1" in text(as_object)
    assert as_number.is_error


def test_the_example_runs_offline(tmp_path: Path) -> None:
    printed = run_example("with_claude_agent.py", tmp_path)
    assert printed == (
        f"tools: {', '.join(DEFAULT_TOOLS)}\n1 alpha\n2 beta\n(end of file; lines 1-2 of 2)\n"
    )
