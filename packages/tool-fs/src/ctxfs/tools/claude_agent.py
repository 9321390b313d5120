"""The tools as an in-process MCP server for the Claude Agent SDK (``ctxfs-tools[claude-agent]``).

::

    from claude_agent_sdk import ClaudeAgentOptions, query
    from ctxfs.tools.claude_agent import BUILTIN_FILE_TOOLS, allowed_tools, server

    options = ClaudeAgentOptions(
        mcp_servers={"ctxfs": server(fs.context(owner="agent-1"))},
        allowed_tools=allowed_tools(),
        disallowed_tools=list(BUILTIN_FILE_TOOLS),
    )
    async for message in query(prompt="Fix the typo in README.md", options=options): ...

:func:`server` makes the SDK's in-process server (``create_sdk_mcp_server``), whose tools run
:meth:`FsToolset.execute` in one agent's context. Claude Code names them ``mcp__<server>__<tool>``
after the server's key in ``mcp_servers``; :func:`allowed_tools` lists those names, so that the
agent calls them without asking for permission.

The model reads the result's text (on a failure: the error code and the hint), then any image. The
SDK lists the tools once, so the list is made once (:meth:`FsToolset.fixed`); a tool
an exposure plugin hides in a step is refused with an error result. Arguments the SDK rejects
against the input schema come back as its own ``Input validation error: ...``.

Claude Code's own file tools know nothing of ctxfs: pass :data:`BUILTIN_FILE_TOOLS` as
``disallowed_tools``. ``Bash`` (``PowerShell`` on Windows) reaches files too: disallow it as well,
or pass ``tools=[]`` to take away every built-in tool.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from ctxfs.tools.extras import needs_extra

with needs_extra(
    "claude-agent", module=__name__, distribution="claude-agent-sdk", packages=("claude_agent_sdk",)
):
    from claude_agent_sdk import (
        McpSdkServerConfig,
        SdkMcpTool,
        ToolAnnotations,
        create_sdk_mcp_server,
    )

from ctxfs.core import Context
from ctxfs.tools import __version__
from ctxfs.tools.builtin.call_tool import CALL_TOOL
from ctxfs.tools.definitions import ToolDefinition
from ctxfs.tools.toolset import FsToolset

__all__ = ["BUILTIN_FILE_TOOLS", "allowed_tools", "server"]

BUILTIN_FILE_TOOLS: Final = (
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "Glob",
    "Grep",
    "NotebookEdit",
    "NotebookRead",
    "LS",
)
"""Claude Code's own file tools (with the older names), for ``disallowed_tools``."""


def server(
    ctx: Context, toolset: FsToolset | None = None, *, name: str = "ctxfs"
) -> McpSdkServerConfig:
    """The ctxfs tools of *ctx*'s owner as an SDK MCP server (``mcp_servers={name: ...}``).

    Args:
        ctx: The agent's context: every call runs as its owner, guarded by what it saw.
        toolset: The tools and their options (default: ``FsToolset()``).
        name: The server's name, as it introduces itself to Claude Code.

    Returns:
        The config ``create_sdk_mcp_server`` makes. A call never raises: failures, and calls
        of a tool hidden in that step, are error results.

    """
    toolset = toolset if toolset is not None else FsToolset()
    offered = toolset.listed(ctx, toolset.fixed(ctx))
    tools = [_sdk_tool(ctx, toolset, definition) for definition in offered]
    return create_sdk_mcp_server(name, version=__version__, tools=tools)


def allowed_tools(toolset: FsToolset | None = None, *, name: str = "ctxfs") -> list[str]:
    """The names Claude Code gives the tools of :func:`server`, for ``allowed_tools``.

    Args:
        toolset: The toolset given to :func:`server` (default: ``FsToolset()``).
        name: The server's key in ``ClaudeAgentOptions.mcp_servers``.

    Returns:
        ``mcp__<name>__<tool>`` for each tool the server may list, in its order: the discovery
        tools too, which it lists where a tool may be deferred.

    """
    toolset = toolset if toolset is not None else FsToolset()
    prefix = f"mcp__{name}__{toolset.options.tool_prefix}"
    offer = toolset.configured()
    return [prefix + tool for tool in (*offer.direct, *offer.discovery)]


def _sdk_tool(ctx: Context, toolset: FsToolset, definition: ToolDefinition) -> SdkMcpTool[Any]:
    async def call(arguments: dict[str, Any]) -> dict[str, Any]:
        """The result in the SDK's shape: the text, then each image."""
        result = await toolset.execute(ctx, definition.name, arguments)
        images = [
            {"type": "image", "data": part.base64_data, "mimeType": part.media_type}
            for part in result.media
        ]
        content = [{"type": "text", "text": result.text}, *images]
        return {"content": content, "is_error": result.is_error}

    annotations = ToolAnnotations(
        read_only_hint=definition.read_only,
        destructive_hint=definition.destructive,
        idempotent_hint=definition.idempotent,
        open_world_hint=False,
    )
    return SdkMcpTool(
        name=definition.name,
        description=definition.description,
        input_schema=_input_schema(definition, toolset),
        handler=call,
        annotations=annotations,
    )


def _input_schema(definition: ToolDefinition, toolset: FsToolset) -> dict[str, Any]:
    """*definition*'s input schema, with ``call_tool``'s arguments taken as an object too.

    The SDK checks each call against it, and Claude passes a tool's arguments as an object as
    often as their JSON text (the only form OpenAI's strict mode can describe).
    """
    if definition.name != toolset.options.tool_prefix + CALL_TOOL.name:
        return definition.input_schema
    schema = copy.deepcopy(definition.input_schema)
    schema["properties"]["arguments"]["type"] = ["object", "string"]
    return schema
