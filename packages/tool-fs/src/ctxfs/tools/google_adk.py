"""The tools as a Google ADK toolset (``ctxfs-tools[google-adk]``).

::

    from google.adk.agents import LlmAgent
    from ctxfs.tools import google_adk

    ctx = fs.context(owner="agent-1")
    agent = LlmAgent(name="coder", model="gemini-2.5-flash", tools=[google_adk.toolset(ctx)])

The toolset is bound to one agent's :class:`~ctxfs.core.Context`. ADK lists a toolset once per
invocation (one ``Runner.run_async``), so that is the step: each listing works out the step's offer
(:meth:`FsToolset.offer`: plugins vote), and the tools' calls run under it through
:meth:`FsToolset.execute`. A tool declares its JSON schema as it is. The model reads
:func:`function_response`: failures are responses, never exceptions, and an image a ``read`` returns
is a part of the response (``FunctionResponse.parts``).
"""

from __future__ import annotations

from typing import Any

from ctxfs.tools.extras import needs_extra

with needs_extra("google-adk", module=__name__, distribution="google-adk", packages=("google",)):
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.base_toolset import BaseToolset
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types

from ctxfs.core import Context
from ctxfs.tools.definitions import ToolDefinition
from ctxfs.tools.offers import Offer
from ctxfs.tools.results import ToolResult
from ctxfs.tools.toolset import FsToolset

__all__ = ["CtxfsToolset", "OfferedTool", "function_response", "toolset"]


def toolset(ctx: Context, toolset: FsToolset | None = None) -> CtxfsToolset:
    """The ctxfs file tools of *ctx*'s agent, as an ADK toolset (see :class:`CtxfsToolset`)."""
    return CtxfsToolset(ctx, toolset)


class CtxfsToolset(BaseToolset):
    """The ctxfs file tools, bound to one agent's context, as a Google ADK toolset.

    Args:
        ctx: The agent's context: its calls read and edit as this owner.
        toolset: The tools and their options (default: ``FsToolset()``).

    """

    def __init__(self, ctx: Context, toolset: FsToolset | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self.toolset = toolset if toolset is not None else FsToolset()

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The tools offered in this step (exposure plugins may hide some), each with the offer."""
        offer = await self.toolset.offer(self.ctx)
        return [
            OfferedTool(definition, offer, ctx=self.ctx, toolset=self.toolset)
            for definition in await self.toolset.tools(self.ctx, offer=offer)
        ]

    async def close(self) -> None:
        """Release nothing: the context and its store stay the caller's to close."""


class OfferedTool(BaseTool):
    """One ctxfs tool as listed in a step, in *ctx*; its calls run under the step's *offer*."""

    def __init__(
        self, definition: ToolDefinition, offer: Offer, *, ctx: Context, toolset: FsToolset
    ) -> None:
        super().__init__(name=definition.name, description=definition.description)
        self.definition = definition
        self.offer = offer
        self.ctx = ctx
        self.toolset = toolset

    def _get_declaration(self) -> types.FunctionDeclaration:
        """The declaration ADK sends the model: the arguments' JSON schema as it is."""
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=self.definition.input_schema,
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any]:
        """Run the call under the step's offer; never raises for a failure (it is the response)."""
        result = await self.toolset.execute(self.ctx, self.definition.name, args, offer=self.offer)
        return function_response(result)


def function_response(result: ToolResult) -> dict[str, Any]:
    """*result* as the function response an ADK tool returns.

    ``{"result": text}`` on success; ``{"error": text, "code": code, "hint": hint}`` on failure (the
    text holds the code and the hint too). An image is an inline ``types.Part`` under ``"images"``;
    ADK moves it to ``FunctionResponse.parts``.
    """
    error = result.data.error
    response: dict[str, Any]
    if result.is_error and error is not None:
        response = {"error": result.text, "code": str(error.code), "hint": error.hint}
    else:
        response = {"result": result.text}
    if result.media:
        response["images"] = [
            types.Part.from_bytes(data=part.data, mime_type=part.media_type)
            for part in result.media
        ]
    return response
