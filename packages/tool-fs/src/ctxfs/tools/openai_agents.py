"""The tools as OpenAI Agents SDK tools (``ctxfs-tools[openai-agents]``).

::

    from agents import Agent, Runner
    from ctxfs.tools.openai_agents import tools

    ctx = fs.context(owner="agent-1")
    agent = Agent(name="coder", model="gpt-5", tools=tools(ctx))
    await Runner.run(agent, "Fix the typo in README.md")

:func:`tools` makes one ``FunctionTool`` per tool the configuration offers, bound to the agent's
:class:`~ctxfs.core.Context`; :func:`apply_patch_tool` gives the SDK's hosted ``apply_patch`` an
editor that runs each operation through ctxfs under the same checks.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from ctxfs.tools.extras import needs_extra

with needs_extra(
    "openai-agents", module=__name__, distribution="openai-agents", packages=("agents",)
):
    from agents import (
        AgentBase,
        ApplyPatchOperation,
        ApplyPatchResult,
        ApplyPatchTool,
        FunctionTool,
        RunContextWrapper,
        ToolOutputImage,
        ToolOutputText,
    )
    from agents.tool_context import ToolContext

from ctxfs.core import Context
from ctxfs.tools.builtin.patch_call import answer_patch_call
from ctxfs.tools.definitions import ToolDefinition
from ctxfs.tools.offers import Offer
from ctxfs.tools.providers import openai_strict
from ctxfs.tools.toolset import FsToolset

__all__ = ["CtxfsEditor", "apply_patch_tool", "tools"]

_MOVE_TO = "*** Move to: "
"""The V4A line that starts an update moving the file (the SDK passes it as ``move_to``)."""


def tools(
    ctx: Context, toolset: FsToolset | None = None, *, hosted_apply_patch: bool = False
) -> list[FunctionTool | ApplyPatchTool]:
    """The ctxfs file tools for an ``Agent``, bound to the agent's context *ctx*.

    One ``FunctionTool`` per tool of the list made once (:meth:`FsToolset.fixed`),
    strict where the arguments allow, enabled while the step's offer (:meth:`FsToolset.offer`) holds
    it. A call returns the result's text, then its images (``ToolOutputImage``); a failure is such a
    result too (the error code and the next action), never raised.

    Args:
        ctx: The agent's context: its owner is who must have read a file before changing it.
        toolset: The tools and their options (default: ``FsToolset()``).
        hosted_apply_patch: Offer the SDK's hosted ``apply_patch`` (:func:`apply_patch_tool`,
            what GPT models are trained on) in place of the ``apply_patch`` function (never
            both: they share a name).

    """
    toolset = toolset if toolset is not None else FsToolset()
    offered = toolset.listed(ctx, toolset.fixed(ctx))
    patch_function = toolset.options.tool_prefix + "apply_patch"
    step_offer = _StepOffer(toolset, ctx)
    return [
        apply_patch_tool(ctx, toolset)
        if hosted_apply_patch and definition.name == patch_function
        else _function_tool(ctx, toolset, definition, step_offer)
        for definition in offered
    ]


class _StepOffer:
    """The step's offer, worked out once for the ``is_enabled`` checks the SDK runs together.

    The SDK asks every tool at once when it lists the agent's tools; the first ask starts the
    offer, and those made before it is done share it. An offer every asker gave up on is
    cancelled: the next ask starts another.
    """

    def __init__(self, toolset: FsToolset, ctx: Context) -> None:
        self.toolset, self.ctx = toolset, ctx
        self._pending: asyncio.Future[Offer] | None = None
        self._askers: Counter[asyncio.Future[Offer]] = Counter()

    async def names(self) -> set[str]:
        """The names the step offers, as models call them."""
        pending = self._pending
        if pending is None:
            self._pending = pending = asyncio.ensure_future(self.toolset.offer(self.ctx))
            pending.add_done_callback(self._done)
        self._askers[pending] += 1
        try:
            offer = await asyncio.shield(pending)
        finally:
            self._askers[pending] -= 1
            if not self._askers[pending]:
                del self._askers[pending]
                if not pending.done():  # (every asker was cancelled)
                    self._done(pending)
                    pending.cancel()
        return {self.toolset.options.tool_prefix + tool for tool in offer.offered}

    def _done(self, pending: asyncio.Future[Offer]) -> None:
        if self._pending is pending:
            self._pending = None  # the next listing is another step's
        if pending.done() and not pending.cancelled():
            pending.exception()  # (retrieved: every asker may have been cancelled)


def _function_tool(
    ctx: Context, toolset: FsToolset, definition: ToolDefinition, step_offer: _StepOffer
) -> FunctionTool:
    name, schema = definition.name, definition.input_schema

    async def invoke(run: ToolContext[Any], arguments: str) -> str | list[Any]:
        """The result as the SDK takes a tool's output: the text, then any images."""
        del run
        result = await toolset.execute(ctx, name, arguments)
        if not result.media:
            return result.text
        images = [ToolOutputImage(image_url=part.data_url) for part in result.media]
        return [ToolOutputText(text=result.text), *images]

    async def offered(run: RunContextWrapper[Any], agent: AgentBase) -> bool:
        del run, agent
        return name in await step_offer.names()

    return FunctionTool(
        name=name,
        description=definition.description,
        params_json_schema=openai_strict(schema) if definition.strict else schema,
        on_invoke_tool=invoke,
        strict_json_schema=definition.strict,
        is_enabled=offered,
    )


def apply_patch_tool(ctx: Context, toolset: FsToolset | None = None) -> ApplyPatchTool:
    """The SDK's hosted ``apply_patch`` tool, its operations run through ctxfs in *ctx*.

    Each operation is one ``ctx.fs.apply_patch`` with the checks of every change (an update of a
    file changed since the owner read it is refused ``stale``). A refused operation changes nothing
    and is the SDK's ``failed`` result, whose output holds the error code and the next action. It
    runs while the step offers the ``apply_patch`` function, so offer it in its place:
    ``tools(ctx, hosted_apply_patch=True)``.

    Args:
        ctx: The agent's context.
        toolset: The tools and their options (default: ``FsToolset()``).

    """
    return ApplyPatchTool(editor=CtxfsEditor(ctx, toolset if toolset is not None else FsToolset()))


class CtxfsEditor:
    """An ``ApplyPatchEditor`` that runs each operation as a ``ctx.fs.apply_patch``.

    Every method returns an ``ApplyPatchResult`` (``completed`` or ``failed``, with the text); it
    never raises but for cancellation.
    """

    def __init__(self, ctx: Context, toolset: FsToolset) -> None:
        self.ctx = ctx
        self.toolset = toolset

    async def create_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        """Create a file; the diff is its lines, each after a ``+``."""
        return await self.apply(operation)

    async def update_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        """Change a file by the hunks of a V4A diff (and move it to ``move_to``, if given)."""
        return await self.apply(operation)

    async def delete_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        """Delete a file."""
        return await self.apply(operation)

    async def apply(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        """Run *operation* as the Responses API's ``apply_patch_call`` it stands for."""
        call: dict[str, Any] = {"type": operation.type, "path": operation.path}
        if operation.type != "delete_file":
            moved = operation.type == "update_file" and operation.move_to
            head = f"{_MOVE_TO}{operation.move_to}\n" if moved else ""
            call["diff"] = head + (operation.diff or "")
        answer = await answer_patch_call(self.toolset, self.ctx, {"operation": call})
        return ApplyPatchResult(status=answer["status"], output=answer["output"])
