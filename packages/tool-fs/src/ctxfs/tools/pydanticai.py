"""The tools as a pydantic-ai toolset (``ctxfs-tools[pydantic-ai]``).

::

    from pydantic_ai import Agent
    from ctxfs.tools.pydanticai import CtxfsToolset

    agent = Agent("openai:gpt-5", deps_type=Context, toolsets=[CtxfsToolset()])
    await agent.run("Fix the typo in README.md", deps=fs.context(owner="agent-1"))

The run's ``deps`` is the agent's :class:`~ctxfs.core.Context` (or pass ``context=`` to find it in
the deps). Each step lists the tools of its offer (:meth:`FsToolset.offer`: plugins are asked once
per step), and its calls run under that offer through :meth:`FsToolset.execute`. The model reads the
result's text, then any image (``BinaryContent``); the structured data is the tool return's
``metadata``. Failures are results the model reads, not exceptions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from pydantic_core import SchemaValidator, core_schema

from ctxfs.tools.extras import needs_extra

with needs_extra(
    "pydantic-ai", module=__name__, distribution="pydantic-ai", packages=("pydantic_ai",)
):
    from pydantic_ai import BinaryContent, RunContext, ToolReturn
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool

from ctxfs.core import Context
from ctxfs.tools.offers import Offer
from ctxfs.tools.toolset import FsToolset

__all__ = ["CtxfsToolset"]

_ANY_ARGUMENTS: Final = SchemaValidator(core_schema.dict_schema(core_schema.str_schema()))
"""pydantic-ai checks only that arguments are an object; ``FsToolset`` validates them."""


def _deps_context(run: RunContext[Any]) -> Context:
    if not isinstance(run.deps, Context):
        raise TypeError(
            "CtxfsToolset needs the run's deps to be a ctxfs Context, or a context= function"
        )
    return run.deps


class CtxfsToolset(AbstractToolset[Any]):
    """The ctxfs file tools for a pydantic-ai agent.

    Args:
        toolset: The tools and their options (default: ``FsToolset()``).
        context: Finds the ctxfs context in a run (default: the run's ``deps``).
        id: The toolset's id among the agent's toolsets.
        max_retries: Retries pydantic-ai allows a tool whose arguments are no JSON object
            (the tool checks the rest itself, and says what is wrong in its result).

    """

    def __init__(
        self,
        toolset: FsToolset | None = None,
        *,
        context: Callable[[RunContext[Any]], Context] = _deps_context,
        id: str | None = "ctxfs",
        max_retries: int = 3,
    ) -> None:
        self.toolset = toolset if toolset is not None else FsToolset()
        self.context = context
        self._id = id
        self.max_retries = max_retries

    @property
    def id(self) -> str | None:
        """The toolset's id among the agent's toolsets."""
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The tools offered in this step (exposure plugins may hide some)."""
        context = self.context(ctx)
        offer = await self.toolset.offer(context)
        return {
            tool.name: OfferedTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=tool.name,
                    description=tool.description,
                    parameters_json_schema=tool.input_schema,
                ),
                max_retries=self.max_retries,
                args_validator=_ANY_ARGUMENTS,
                offer=offer,
            )
            for tool in await self.toolset.tools(context, offer=offer)
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> ToolReturn:
        """Run the call under the step's offer; the model reads the text and sees the images."""
        offer = tool.offer if isinstance(tool, OfferedTool) else None
        result = await self.toolset.execute(self.context(ctx), name, tool_args, offer=offer)
        images = [BinaryContent(part.data, media_type=part.media_type) for part in result.media]
        value = [result.text, *images] if images else result.text
        return ToolReturn(return_value=value, metadata=result.structured)


@dataclass(kw_only=True)
class OfferedTool(ToolsetTool[Any]):
    """A tool as listed in one step, with that step's offer (its calls run under it)."""

    offer: Offer
