"""Tasks beside a search: its progress reports, and reading its next files ahead."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from types import TracebackType
from typing import Any, Final, Self

import anyio
from anyio.abc import TaskGroup

from ctxfs.core import Context, FsError, Stat, TooLarge
from ctxfs.tools.walk import all_lines

__all__ = ["READ_AHEAD_MAX_BYTES", "Background", "ReadAhead"]

READ_AHEAD_MAX_BYTES: Final = 1 << 20
"""The largest file read ahead; a larger one is streamed in its turn."""


class Background:
    """Tasks run beside an ``async with`` block, cancelled when it ends; they must not fail.

    The block's own exception goes on unchanged (an anyio task group would wrap it in an
    ``ExceptionGroup``).
    """

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


class _Pending:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.lines: list[str] | FsError | None = None


class ReadAhead(Background):
    """*files* read ahead, *width* at once, those *wanted* says (none for a width of 1).

    Use it in ``async with``, and :meth:`take` each file in turn. Memory stays bounded by
    *width* files of at most :data:`READ_AHEAD_MAX_BYTES`; larger ones, and ones of unknown
    size, are streamed in their turn.
    """

    def __init__(
        self, ctx: Context, files: list[Stat], *, width: int, wanted: Callable[[Stat], bool]
    ) -> None:
        super().__init__()
        self.ctx, self.files, self.width, self.wanted = ctx, files, width, wanted
        self._pending: dict[int, _Pending] = {}
        self._next = 0  # the first index not yet considered

    async def take(self, index: int) -> list[str] | None:
        """The lines of ``files[index]`` if read ahead, None to stream it (errors re-raised).

        Raises:
            FsError: Reading it failed.

        """
        self._start_up_to(index + self.width)
        pending = self._pending.pop(index, None)
        if pending is None:
            return None
        await pending.done.wait()
        if isinstance(pending.lines, FsError):
            raise pending.lines
        return pending.lines

    def _start_up_to(self, end: int) -> None:
        if self.width <= 1:
            return
        while self._next < min(end, len(self.files)):
            entry = self.files[self._next]
            size = entry.size
            if size is not None and size <= READ_AHEAD_MAX_BYTES and self.wanted(entry):
                pending = self._pending[self._next] = _Pending()
                self.start_soon(partial(self._read, entry, pending))
            self._next += 1

    async def _read(self, entry: Stat, pending: _Pending) -> None:
        try:
            pending.lines = await all_lines(self.ctx, entry.path, max_chars=READ_AHEAD_MAX_BYTES)
        except TooLarge:
            pending.lines = None  # it grew since it was listed: stream it in its turn
        except FsError as error:
            pending.lines = error
        finally:
            pending.done.set()
