"""Reading the next files of a search while it searches this one, on a store with latency.

An object store answers each read after a round trip; read one after another,
a search would spend its time waiting. :class:`ReadAhead` keeps up to the
store's :attr:`~ctxfs.core.Capabilities.concurrent_reads` small files being
read (whole, through ``ctx.fs``), in the order the search takes them, and no
further ahead than that: memory stays bounded by that many files of at most
:data:`READ_AHEAD_MAX_BYTES`. Larger files, and files of unknown size, are
left to be streamed when their turn comes. Leaving the ``async with`` block
cancels what is still being read (the search stopped at its page).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Final

import anyio

from ctxfs.core import Context, FsError, Stat, TooLarge
from ctxfs.tools.background import Background
from ctxfs.tools.tree import all_lines

__all__ = ["READ_AHEAD_MAX_BYTES", "ReadAhead"]

READ_AHEAD_MAX_BYTES: Final = 1 << 20
"""The largest file read ahead; a larger one is streamed in its turn."""


class _Pending:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.lines: list[str] | FsError | None = None


class ReadAhead(Background):
    """*files* read ahead, *width* at once, those *wanted* says (none for a width of 1).

    Use it in ``async with``, and :meth:`take` each file in turn.
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
