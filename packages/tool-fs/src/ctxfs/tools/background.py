"""Tasks beside a block of code, ended with it: read-ahead, progress reports.

An anyio task group wraps an exception of its block in an ``ExceptionGroup``;
the callers here want theirs as it is (an ``FsError`` is a result, not a
crash). :class:`Background` runs its tasks beside the block and cancels them
when the block ends, however it ends, and lets the block's own exception go on
unchanged. Its tasks must not fail: they catch what they expect.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup

__all__ = ["Background"]


class Background:
    """Tasks run beside an ``async with`` block, cancelled when it ends."""

    def __init__(self) -> None:
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> Self:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        del kind, error, traceback  # the block's own exception, if any, goes on as it is
        assert self._group is not None
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(None, None, None)

    def start_soon(self, task: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run *task* beside the block."""
        assert self._group is not None, "use Background in async with"
        self._group.start_soon(task)
