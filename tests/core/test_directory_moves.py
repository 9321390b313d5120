"""ctx.fs.move of a directory on the in-memory backend: hooks and observations."""

from __future__ import annotations

import pytest

from ctxfs.core import ABSENT, Fs, MemoryBackend, NotObserved, Operation, hookimpl
from ctxfs.core.versions import Version

pytestmark = pytest.mark.anyio


class Recorder:
    def __init__(self) -> None:
        self.committed: list[tuple[str, str | None, str | None, Version | None]] = []

    @hookimpl
    def ctxfs_committed(
        self, ctx: object, op: Operation, before: Version | None, after: Version | None
    ) -> None:
        del ctx, before
        self.committed.append((op.path, op.moved_to, op.moved_from, after))


async def test_observers_hear_every_entry_and_the_movers_observations_follow() -> None:
    backend = MemoryBackend()
    await backend.write("pkg/a.py", b"a\n", expect=ABSENT)
    await backend.write("pkg/b.py", b"b\n", expect=ABSENT)
    recorder = Recorder()
    async with Fs(backend, plugins=[recorder], load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.read("pkg/a.py")
        moved = await ctx.fs.move("pkg", "lib/pkg")
        assert (moved.directory, moved.moved, moved.version) == (True, 2, None)
        await ctx.fs.edit("lib/pkg/a.py", "a", "A")
        with pytest.raises(NotObserved):
            await ctx.fs.edit("lib/pkg/b.py", "b", "B")
        assert await fs.file_context.observation("agent", "pkg/a.py") is None
    moves = [entry for entry in recorder.committed if entry[1] or entry[2]]
    assert sorted(moves) == sorted(
        [
            ("pkg", "lib/pkg", None, None),
            ("lib/pkg", None, "pkg", None),
            ("pkg/a.py", "lib/pkg/a.py", None, None),
            ("lib/pkg/a.py", None, "pkg/a.py", None),
            ("pkg/b.py", "lib/pkg/b.py", None, None),
            ("lib/pkg/b.py", None, "pkg/b.py", None),
        ]
    )
