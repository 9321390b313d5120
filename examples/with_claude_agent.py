"""ctxfs file tools for a Claude Agent SDK agent, as an in-process MCP server.

Run ``python examples/with_claude_agent.py`` (needs ``ctxfs-tools[claude-agent]``). With
ANTHROPIC_API_KEY set, Claude Code edits notes.md through the tools. Without one, the
example calls them as Claude Code does: over MCP, on the server's instance.
"""

import asyncio
import os

import anyio
from claude_agent_sdk import ClaudeAgentOptions, query
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.tools.claude_agent import BUILTIN_FILE_TOOLS, allowed_tools, server


async def main() -> None:
    """Give an agent the tools; without a key, list them and call read over MCP."""
    backend = MemoryBackend()
    await backend.write("notes.md", b"alpha\nbeta\n", expect=ABSENT)
    tools = server(Fs(backend, load_entrypoints=False).context(owner="agent-1"))
    options = ClaudeAgentOptions(
        mcp_servers={"ctxfs": tools},
        allowed_tools=allowed_tools(),
        disallowed_tools=list(BUILTIN_FILE_TOOLS),  # every file access goes through ctxfs
    )
    if os.environ.get("ANTHROPIC_API_KEY"):
        async for message in query(prompt="Replace beta with gamma in notes.md", options=options):
            print(message)
        return
    mcp_server = tools["instance"]
    async with (
        create_client_server_memory_streams() as (client, served),
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(mcp_server.run, *served, mcp_server.create_initialization_options())
        async with ClientSession(*client) as session:
            await session.initialize()
            print("tools:", ", ".join(tool.name for tool in (await session.list_tools()).tools))
            for content in (await session.call_tool("read", {"file_path": "notes.md"})).content:
                print(content.text if content.type == "text" else content.type)
        tasks.cancel_scope.cancel()


asyncio.run(main())
