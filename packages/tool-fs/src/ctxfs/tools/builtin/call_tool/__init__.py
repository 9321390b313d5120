"""``call_tool``: run a deferred tool, found with ``search_tools``, as a call of its own."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from pydantic import WithJsonSchema

from ctxfs.core import InvalidArgument
from ctxfs.tools.definitions import ToolDefinition
from ctxfs.tools.results import ResultData, ToolResult
from ctxfs.tools.tool import Annotations, Limits, Offering, Step, Tool, ToolArgs

__all__ = ["CALL_TOOL", "CallToolArgs", "CallToolTool"]


class CallToolArgs(ToolArgs):
    """Arguments of ``call_tool``."""

    name: str
    arguments: Annotated[
        dict[str, object] | str,
        WithJsonSchema({"type": "string"}),
    ] = "{}"
    """The tool's arguments: a JSON object, or its text (what strict mode can describe)."""


class CallToolTool(Tool[CallToolArgs, ResultData]):
    """Run a deferred tool: the result is that tool's own, through the same checks."""

    name = "call_tool"
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)
    offering = Offering.DISCOVERY

    mentions = ("search_tools",)
    summary = "Run a tool search_tools found."

    def definition(self, limits: Limits) -> ToolDefinition:
        """Destructive as the tools it may run; in a read-only toolset, reading only."""
        defined = super().definition(limits)
        if not limits.options.read_only:
            return defined
        return dataclasses.replace(defined, read_only=True, destructive=False)

    async def answer(self, step: Step, args: CallToolArgs) -> ToolResult:
        name = args.name  # (as search_tools gives it, or as the model calls tools: prefixed)
        if name not in step.offer.deferred:
            name = name.removeprefix(step.toolset.options.tool_prefix)
        if name not in step.offer.deferred:
            raise InvalidArgument(
                f"call_tool runs only tools found with search_tools; {args.name!r} is not one",
                hint="Search with search_tools and pass one of the names it returns.",
                details={"field": "name", "deferred": list(step.offer.deferred)},
            )
        return await step.run_tool(name, args.arguments)


CALL_TOOL = CallToolTool()
