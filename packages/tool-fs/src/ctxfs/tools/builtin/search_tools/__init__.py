"""``search_tools``: find the tools that are offered only on request (deferred)."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, Field

from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Offering, Step, Tool, ToolArgs

__all__ = ["SEARCH_TOOLS", "SearchToolsArgs", "SearchToolsData", "SearchToolsTool", "ToolSummary"]


class SearchToolsArgs(ToolArgs):
    """Arguments of ``search_tools``."""

    query: str


class ToolSummary(BaseModel):
    """One tool found, as the model needs it to call it through ``call_tool``."""

    name: str
    owner: str
    description: str
    arguments: dict[str, str] = Field(description="Each argument and its description.")
    required: list[str]


class SearchToolsData(ResultData):
    """The data of a ``search_tools`` result."""

    tools: list[ToolSummary]


class SearchToolsTool(Tool[SearchToolsArgs, SearchToolsData]):
    """Search the deferred tools by name, description, parameters and owner."""

    name = "search_tools"
    offering = Offering.DISCOVERY

    mentions = ("undo", "call_tool")
    summary = "Find more tools (undo, ...) by what they do, for call_tool."

    async def run(self, step: Step, args: SearchToolsArgs) -> SearchToolsData:
        words = [word for word in re.split(r"\W+", args.query.lower()) if word]
        found = []
        for name in step.offer.deferred:
            tool = step.tool(name).definition(step.limits)
            haystack = " ".join(
                [tool.name, tool.description, tool.owner, json.dumps(tool.input_schema)]
            ).lower()
            score = sum(haystack.count(word) for word in words)
            if score or not words:
                found.append((score, tool))
        found.sort(key=lambda item: (-item[0], item[1].name))
        summaries = [
            ToolSummary(
                name=tool.name,
                owner=tool.owner,
                description=tool.description,
                arguments={
                    field: spec.get("description", "")
                    for field, spec in tool.input_schema["properties"].items()
                },
                required=tool.input_schema.get("required", []),
            )
            for _, tool in found
        ]
        return self.data(tools=summaries)

    def render(self, data: SearchToolsData, args: SearchToolsArgs) -> str:
        if not data.tools:
            return "(no tool matches; try other words)"
        lines = [f"{s.name}({', '.join(s.arguments)}): {s.description}" for s in data.tools]
        return "\n".join([*lines, "(run one through call_tool, with its name and arguments)"])


SEARCH_TOOLS = SearchToolsTool()
