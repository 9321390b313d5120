"""Where a call's paths were judged is the call's own: never left in its caller's context."""

from __future__ import annotations

import anyio
import pytest

from ctxfs.core import Context, Fs, FsError, MemoryBackend, Operation, hookimpl
from ctxfs.core.backend.authorized import authorizing
from ctxfs.core.kit import Location, authorized_location

pytestmark = pytest.mark.anyio


class Finished:
    def __init__(self) -> None:
        self.errors: list[FsError | None] = []

    @hookimpl
    def ctxfs_finished(self, ctx: Context, op: Operation, error: FsError | None) -> None:
        self.errors.append(error)


async def test_a_line_iterator_leaves_nothing_judged_in_its_consumer() -> None:
    finished = Finished()
    fs = Fs(MemoryBackend(), plugins=[finished])
    ctx = fs.context(owner="agent")
    await ctx.fs.write("a.txt", "one\ntwo\n")
    lines = ctx.fs.lines("a.txt")
    async for number, _ in lines:
        assert number == 1
        assert authorized_location("a.txt") is None
        break
    assert authorized_location("a.txt") is None
    async with anyio.create_task_group() as tasks:  # closed elsewhere, as a finalizer would
        tasks.start_soon(lines.aclose)
    assert finished.errors == [None]  # the write's (a read left unfinished reports nothing)


def test_a_judgement_holds_in_its_block_only() -> None:
    where = Location(resolved="b/x", key="k")
    with authorizing({"a/x": where}):
        assert authorized_location("a/x") == where
        with authorizing({"c": Location(resolved="c", key="c")}):
            assert authorized_location("a/x") == where
        assert authorized_location("c") is None
    assert authorized_location("a/x") is None
