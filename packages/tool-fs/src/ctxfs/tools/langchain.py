"""The tools as LangChain tools (``ctxfs-tools[langchain]``).

::

    from langgraph.prebuilt import ToolNode
    from ctxfs.tools.langchain import tools

    fs_tools = tools(fs.context(owner="agent-1"))
    model = model.bind_tools(fs_tools)  # and ToolNode(fs_tools) runs the model's calls

Each tool of the list made once (:meth:`FsToolset.fixed`) is a :class:`CtxfsTool` bound
to the agent's context, with the tool's JSON schema as its ``args_schema``; its calls run through
:meth:`FsToolset.execute`. Sync calls (``invoke``) all run on one event loop the tool set owns
(:class:`SyncLoop`), so stores bound to a loop (Redis, SQLite) see one loop however many calls come;
async calls (``ainvoke``) run on the caller's loop. Where a context's stores are bound to a loop,
make its calls all sync or all async.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from functools import partial
from typing import Any, Literal, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

from ctxfs.tools.extras import needs_extra

with needs_extra(
    "langchain", module=__name__, distribution="langchain-core", packages=("langchain_core",)
):
    from langchain_core.messages.content import (
        ImageContentBlock,
        TextContentBlock,
        create_image_block,
        create_text_block,
    )
    from langchain_core.tools import BaseTool, ToolException
    from langchain_core.tools.base import ToolExceptionHandlerOutput

from ctxfs.core import Context
from ctxfs.tools.definitions import ToolDefinition
from ctxfs.tools.providers import nullable_optionals
from ctxfs.tools.results import ToolResult
from ctxfs.tools.toolset import FsToolset

__all__ = ["CtxfsTool", "SyncLoop", "tools"]

T = TypeVar("T")

Content = str | list[TextContentBlock | ImageContentBlock]
"""What the model reads: the text, or the text and the images as content blocks."""


def tools(ctx: Context, toolset: FsToolset | None = None) -> list[BaseTool]:
    """The tools of *toolset*'s fixed list (default ``FsToolset()``), bound to *ctx*.

    Named as models call them (with the tool prefix), the discovery pair included while some tool
    may be deferred (:meth:`FsToolset.fixed`). A tool a plugin hides in a step fails its calls with
    an error result. The tools share one :class:`SyncLoop` for their sync calls.
    """
    toolset = toolset if toolset is not None else FsToolset()
    loop = SyncLoop()
    return [
        CtxfsTool.of(definition, ctx=ctx, toolset=toolset, loop=loop)
        for definition in toolset.listed(ctx, toolset.fixed(ctx))
    ]


class CtxfsTool(BaseTool):
    """One ctxfs tool for LangChain, bound to one agent's context.

    ``invoke`` and ``ainvoke`` with a model's tool call return a ``ToolMessage``: its content is
    what the model reads, its ``artifact`` the result's structured data, and its ``status``
    ``"error"`` for an error result (whose text holds the code and the hint; there is no artifact
    then). Invoked with the arguments alone, they return the content. Failures are never exceptions
    out of the tool. Its ``metadata`` says whether the tool is ``read_only``, ``destructive`` and
    ``idempotent`` (for a human-in-the-loop step).
    """

    ctx: Context
    """The agent's context: whose reads and edits the calls are."""
    toolset: FsToolset
    """The toolset that lists and runs the tool."""
    loop: SyncLoop
    """The event loop the sync calls run on."""
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool | str | Callable[[ToolException], ToolExceptionHandlerOutput] | None = (
        True  # an error result reaches the model as its text, with status="error"
    )

    @classmethod
    def of(
        cls, definition: ToolDefinition, *, ctx: Context, toolset: FsToolset, loop: SyncLoop
    ) -> CtxfsTool:
        """The tool *definition* describes, bound to *ctx*."""
        return cls(
            name=definition.name,
            description=definition.description,
            args_schema=nullable_optionals(definition.input_schema),  # (bind_tools(strict=True))
            metadata={
                "read_only": definition.read_only,
                "destructive": definition.destructive,
                "idempotent": definition.idempotent,
            },
            ctx=ctx,
            toolset=toolset,
            loop=loop,
        )

    def _run(self, /, **arguments: Any) -> tuple[Content, dict[str, Any]]:
        return _answer(self.loop.run(partial(self._execute, arguments)))

    async def _arun(self, /, **arguments: Any) -> tuple[Content, dict[str, Any]]:
        return _answer(await self._execute(arguments))

    async def _execute(self, arguments: Mapping[str, Any]) -> ToolResult:
        return await self.toolset.execute(self.ctx, self.name, arguments)


def _answer(result: ToolResult) -> tuple[Content, dict[str, Any]]:
    """The content the model reads and the artifact; an error result as a ``ToolException``."""
    if result.is_error:
        raise ToolException(result.text)
    if not result.media:
        return result.text, result.structured
    images = [
        create_image_block(base64=part.base64_data, mime_type=part.media_type)
        for part in result.media
    ]
    return [create_text_block(result.text), *images], result.structured


class SyncLoop:
    """The one event loop the sync calls of a tool set run on, whichever thread makes them.

    An anyio blocking portal (asyncio) in a daemon thread, started at the first call; its loop ends
    once this object is collected. Stores bound to the loop that first used them (a Redis client, a
    lock) therefore see the same loop on every sync call.
    """

    def __init__(self) -> None:
        self._starting = threading.Lock()
        self._portal: BlockingPortal | None = None

    def run(self, function: Callable[[], Awaitable[T]]) -> T:
        """Await ``function()`` on the loop and return its result (not from the loop's thread)."""
        with self._starting:
            if self._portal is None:
                self._portal = _started_portal()
                weakref.finalize(self, _stop, self._portal).atexit = False
        return self._portal.call(function)


def _started_portal() -> BlockingPortal:
    started: Future[BlockingPortal] = Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            started.set_result(portal)
            await portal.sleep_until_stopped()

    def run() -> None:
        try:
            anyio.run(serve)
        except BaseException as failure:
            if not started.done():
                started.set_exception(failure)

    threading.Thread(target=run, name="ctxfs-langchain-loop", daemon=True).start()
    return started.result()


def _stop(portal: BlockingPortal) -> None:
    """End *portal*'s loop; a finalizer, so it may run on any thread and must not wait."""
    threading.Thread(target=portal.call, args=(portal.stop,), daemon=True).start()
