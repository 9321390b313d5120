"""One tool call through pydantic-ai's own agent loop, with a scripted model."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxfs.core import Context
from ctxfs.tools import FsToolset
from ctxfs.tools.pydanticai import CtxfsToolset


async def call_in_agent_loop(
    toolset: FsToolset, ctx: Context, tool: str, arguments: dict[str, Any]
) -> tuple[list[str], list[ToolReturnPart]]:
    """The tools the model was offered, and the returns of its one call of *tool*."""
    offered: list[str] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            offered.extend(tool.name for tool in info.function_tools)
            return ModelResponse(parts=[ToolCallPart(tool, arguments)])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(script), deps_type=Context, toolsets=[CtxfsToolset(toolset)])
    run = await agent.run("call it", deps=ctx)
    returns = [p for m in run.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    return offered, returns
