"""Conformance: file and directory moves through ctx.fs."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from ctxfs.core.backend import Backend
from ctxfs.core.context import Context
from ctxfs.core.errors import (
    AlreadyExists,
    FsError,
    InvalidArgument,
    IsADirectory,
    NotFound,
    NotObserved,
    Stale,
)
from ctxfs.core.fs import Fs
from ctxfs.core.testing.conformance.support import ConformanceBase, contexts, exists
from ctxfs.core.versions import ABSENT

__all__ = ["MoveConformance"]


class MoveConformance(ConformanceBase):
    """File and directory moves through ctx.fs."""

    async def test_a_move_takes_the_file_and_its_observation_along(self, backend: Backend) -> None:
        alice, bob = contexts(backend, "alice", "bob")
        await bob.fs.write("a.txt", "one\ntwo\n")
        await alice.fs.read("a.txt", offset=2, limit=1)
        moved = await alice.fs.move("a.txt", "pkg/deep/b.txt")
        assert (moved.path, moved.destination, moved.replaced) == ("a.txt", "pkg/deep/b.txt", None)
        with pytest.raises(NotFound):
            await backend.read("a.txt")
        blob = await backend.read("pkg/deep/b.txt")
        assert blob.data == b"one\ntwo\n"
        assert blob.version == moved.version
        await alice.fs.edit("pkg/deep/b.txt", "one", "uno")  # observed where it now is
        with pytest.raises(NotObserved):
            await bob.fs.edit("pkg/deep/b.txt", "two", "dos")  # bob never read it there

    async def test_a_move_needs_the_source_read_as_it_is(self, backend: Backend) -> None:
        alice, bob = contexts(backend, "alice", "bob")
        await bob.fs.write("a.txt", "one\n")
        with pytest.raises(NotObserved):
            await alice.fs.move("a.txt", "b.txt")
        await alice.fs.read("a.txt")
        await bob.fs.edit("a.txt", "one", "uno")
        with pytest.raises(Stale):
            await alice.fs.move("a.txt", "b.txt")
        with pytest.raises(NotFound):
            await alice.fs.move("missing.txt", "b.txt")
        assert (await backend.read("a.txt")).data == b"uno\n"
        with pytest.raises(NotFound):
            await backend.read("b.txt")

    async def test_a_move_over_a_file_needs_overwrite_and_that_file_read(
        self, backend: Backend
    ) -> None:
        alice, bob = contexts(backend, "alice", "bob")
        await bob.fs.write("a.txt", "from a\n")
        await bob.fs.write("b.txt", "from b\n")
        await alice.fs.read("a.txt")
        with pytest.raises(AlreadyExists):
            await alice.fs.move("a.txt", "b.txt")
        with pytest.raises(NotObserved):
            await alice.fs.move("a.txt", "b.txt", overwrite=True)
        await alice.fs.read("b.txt")
        await bob.fs.edit("b.txt", "from b", "changed b")
        with pytest.raises(Stale):
            await alice.fs.move("a.txt", "b.txt", overwrite=True)
        assert (await backend.read("a.txt")).data == b"from a\n"
        assert (await backend.read("b.txt")).data == b"changed b\n"
        replaced = (await alice.fs.read("b.txt")).version
        moved = await alice.fs.move("a.txt", "b.txt", overwrite=True)
        assert moved.replaced == replaced
        assert (await backend.read("b.txt")).data == b"from a\n"
        with pytest.raises(NotFound):
            await backend.read("a.txt")

    async def test_a_move_onto_itself_is_refused(self, backend: Backend) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        await ctx.fs.write("a.txt", "one\n")
        with pytest.raises(InvalidArgument):
            await ctx.fs.move("a.txt", "a.txt", overwrite=True)
        assert (await backend.read("a.txt")).data == b"one\n"

    async def test_crosswise_moves_finish_without_deadlock(self, backend: Backend) -> None:
        agents = contexts(backend, "alice", "bob")
        await agents[0].fs.write("a.txt", "a\n")
        await agents[0].fs.write("b.txt", "b\n")
        for agent in agents:
            await agent.fs.read("a.txt")
            await agent.fs.read("b.txt")
        outcomes: list[object] = []

        async def move(agent: Context, source: str, destination: str) -> None:
            try:
                outcomes.append(await agent.fs.move(source, destination, overwrite=True))
            except (Stale, NotFound) as lost:  # the other went first
                outcomes.append(lost)

        with anyio.fail_after(30):  # far below two lock timeouts
            async with anyio.create_task_group() as group:
                group.start_soon(move, agents[0], "a.txt", "b.txt")
                group.start_soon(move, agents[1], "b.txt", "a.txt")
        assert sum(not isinstance(outcome, FsError) for outcome in outcomes) == 1
        survivors = [p for p in ("a.txt", "b.txt") if await exists(backend, p)]
        assert len(survivors) == 1

    # -- directory moves --------------------------------------------------------------------

    async def test_a_directory_moves_whole_or_is_refused_untouched(self, backend: Backend) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        files = {"pkg/a.py": b"a = 1\n", "pkg/sub/b.bin": bytes(range(256)), "pkg/sub/c/d": b""}
        for path, data in files.items():
            await backend.write(path, data, expect=ABSENT)
        if not backend.capabilities.directory_moves:
            with pytest.raises(IsADirectory) as refused:
                await ctx.fs.move("pkg", "lib/pkg")
            assert refused.value.hint
            for path, data in files.items():
                assert (await backend.read(path)).data == data
            assert not await exists(backend, "lib/pkg/a.py")
            return
        moved = await ctx.fs.move("pkg", "lib/pkg")
        assert (moved.path, moved.destination, moved.directory) == ("pkg", "lib/pkg", True)
        assert moved.moved == 5  # a.py, sub, sub/b.bin, sub/c, sub/c/d
        for path, data in files.items():
            assert (await backend.read(f"lib/{path}")).data == data
            assert not await exists(backend, path)
        with pytest.raises(NotFound):
            await backend.stat("pkg")

    async def test_a_directory_move_needs_a_free_destination_outside_itself(
        self, backend: Backend
    ) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        await backend.write("pkg/a.py", b"a\n", expect=ABSENT)
        await backend.write("lib/pkg/b.py", b"b\n", expect=ABSENT)
        refusal = AlreadyExists if backend.capabilities.directory_moves else IsADirectory
        with pytest.raises(refusal):
            await ctx.fs.move("pkg", "lib/pkg")
        with pytest.raises(InvalidArgument):
            await ctx.fs.move("pkg", "pkg/inner")
        with pytest.raises(InvalidArgument):
            await ctx.fs.move("pkg", "lib/other", overwrite=True)
        with pytest.raises(InvalidArgument):
            await ctx.fs.move("", "elsewhere")
        assert (await backend.read("pkg/a.py")).data == b"a\n"
        assert (await backend.read("lib/pkg/b.py")).data == b"b\n"
        assert not await exists(backend, "lib/pkg/a.py")
        assert not await exists(backend, "pkg/inner/a.py")
