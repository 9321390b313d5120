"""Where a call's paths were judged is the call's own: never left in its caller's context."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

import anyio
import pytest

from ctxfs.core import Context, Fs, FsError, MemoryBackend, Operation, hookimpl
from ctxfs.core.backend.authorized import authorizing
from ctxfs.core.kit import Location, authorized_location

pytestmark = pytest.mark.anyio

BACKEND = MemoryBackend()


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
        assert authorized_location(fs.backend, "a.txt") is None
        break
    assert authorized_location(fs.backend, "a.txt") is None
    async with anyio.create_task_group() as tasks:  # closed elsewhere, as a finalizer would
        tasks.start_soon(lines.aclose)
    assert finished.errors == [None]  # the write's (a read left unfinished reports nothing)


def test_a_judgement_holds_in_its_block_only() -> None:
    where = Location(resolved="b/x", key="k")
    with authorizing(BACKEND, {"a/x": where}):
        assert authorized_location(BACKEND, "a/x") == where
        with authorizing(BACKEND, {"c": Location(resolved="c", key="c")}):
            assert authorized_location(BACKEND, "a/x") == where
        assert authorized_location(BACKEND, "c") is None
    assert authorized_location(BACKEND, "a/x") is None


def test_a_judgement_is_of_one_backends_paths() -> None:
    with authorizing(BACKEND, {"a": Location(resolved="b", key="b")}):
        assert authorized_location(MemoryBackend(), "a") is None


def test_many_judgements_in_one_call_each_hold() -> None:
    with ExitStack() as stack:
        for number in range(2000):  # (a patch of that many files)
            path = f"f{number}"
            stack.enter_context(authorizing(BACKEND, {path: Location(resolved=path, key=path)}))
        assert all(
            authorized_location(BACKEND, f"f{n}") == Location(resolved=f"f{n}", key=f"f{n}")
            for n in range(2000)
        )
        with authorizing(BACKEND, {"f7": Location(resolved="elsewhere", key="k")}):
            assert authorized_location(BACKEND, "f7") == Location(resolved="elsewhere", key="k")
        assert authorized_location(BACKEND, "f7") == Location(resolved="f7", key="f7")


@dataclass(init=False)
class ComparedByValue(MemoryBackend):  # (equal by value: unhashable)
    pass


async def test_a_backend_that_cannot_be_hashed_is_judged_too() -> None:
    fs = Fs(ComparedByValue())
    ctx = fs.context(owner="agent")
    await ctx.fs.write("a.txt", "x\n")
    assert (await ctx.fs.read("a.txt")).text == "x\n"
