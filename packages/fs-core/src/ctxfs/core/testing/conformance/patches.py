"""Conformance: patches through ctx.fs: whole or not at all."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from ctxfs.core.backend import Backend
from ctxfs.core.context import Context
from ctxfs.core.errors import FsError, NoMatch, Stale
from ctxfs.core.testing.conformance.support import ConformanceBase, contexts, exists
from ctxfs.core.text import FilePatch, Hunk, PatchAction
from ctxfs.core.versions import ABSENT

__all__ = ["PatchConformance"]


class PatchConformance(ConformanceBase):
    """Patches through ctx.fs: whole or not at all."""

    async def test_an_update_can_be_undone(self, backend: Backend) -> None:
        await backend.write("a.txt", b"one\n", expect=ABSENT)
        async with backend.open_update("a.txt", max_size=None) as update:
            written = await update.write(b"two\n")
            await update.undo(written)
        assert (await backend.read("a.txt")).data == b"one\n"
        async with backend.open_update("a.txt", max_size=None) as update:
            await update.delete()
            await update.undo(None)
        assert (await backend.read("a.txt")).data == b"one\n"
        async with backend.open_update("new.txt", max_size=None) as update:
            await update.undo(await update.write(b"new\n"))
        assert not await exists(backend, "new.txt")

    async def test_a_patch_applies_whole_or_not_at_all(self, backend: Backend) -> None:
        alice, bob = contexts(backend, "alice", "bob")
        for path, text in {"a.py": "x = 1\ny = 2\n", "b.py": "b = 1\n", "c.py": "c\n"}.items():
            await bob.fs.write(path, text)
            await alice.fs.read(path)
        one = Hunk(old=("x = 1",), new=("x = 10",))
        failing = [
            FilePatch(action=PatchAction.UPDATE, path="a.py", hunks=(one,)),
            FilePatch(action=PatchAction.DELETE, path="c.py"),
            FilePatch(action=PatchAction.UPDATE, path="b.py", hunks=(Hunk(old=("z",), new=()),)),
        ]
        with pytest.raises(NoMatch):
            await alice.fs.apply_patch(failing)
        await bob.fs.edit("b.py", "b = 1", "b = 2")
        with pytest.raises(Stale):
            await alice.fs.apply_patch(
                [*failing[:2], FilePatch(action=PatchAction.DELETE, path="b.py")]
            )
        assert (await backend.read("a.py")).data == b"x = 1\ny = 2\n"
        assert (await backend.read("c.py")).data == b"c\n"
        await alice.fs.apply_patch(
            [
                FilePatch(action=PatchAction.ADD, path="pkg/new.py", content="new\n"),
                FilePatch(action=PatchAction.UPDATE, path="a.py", hunks=(one,), move_to="pkg/a.py"),
                FilePatch(action=PatchAction.DELETE, path="c.py"),
            ]
        )
        assert (await backend.read("pkg/a.py")).data == b"x = 10\ny = 2\n"
        assert (await backend.read("pkg/new.py")).data == b"new\n"
        assert not await exists(backend, "a.py")
        assert not await exists(backend, "c.py")
        await alice.fs.edit("pkg/a.py", "y = 2", "y = 20")  # observed where it now is

    async def test_crosswise_patches_finish_without_deadlock(self, backend: Backend) -> None:
        agents = contexts(backend, "alice", "bob")
        for path in ("a.txt", "b.txt"):
            await agents[0].fs.write(path, "line\n")
            for agent in agents:
                await agent.fs.read(path)
        outcomes: list[object] = []

        async def patch(agent: Context, first: str, second: str) -> None:
            hunk = Hunk(old=("line",), new=(agent.owner,))
            parts = [
                FilePatch(action=PatchAction.UPDATE, path=p, hunks=(hunk,)) for p in (first, second)
            ]
            try:
                outcomes.append(await agent.fs.apply_patch(parts))
            except Stale as lost:  # the other went first
                outcomes.append(lost)

        with anyio.fail_after(30):  # far below two lock timeouts
            async with anyio.create_task_group() as group:
                group.start_soon(patch, agents[0], "a.txt", "b.txt")
                group.start_soon(patch, agents[1], "b.txt", "a.txt")
        assert sum(not isinstance(outcome, FsError) for outcome in outcomes) == 1
        contents = {(await backend.read(p)).data for p in ("a.txt", "b.txt")}
        assert contents in ({b"alice\n"}, {b"bob\n"})  # one patch whole, never a mix
