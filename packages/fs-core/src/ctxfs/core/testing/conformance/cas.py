"""Conformance: create-only, update-if-version, and counter races (backend and ctx.fs)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from ctxfs.core.backend import Backend
from ctxfs.core.errors import AlreadyExists, ErrorCode, NotFound, Stale
from ctxfs.core.fs import Fs
from ctxfs.core.testing.conformance.support import ConformanceBase
from ctxfs.core.versions import ABSENT

__all__ = ["CasConformance"]


class CasConformance(ConformanceBase):
    """Create-only, update-if-version, and counter races through the backend and ctx.fs."""

    async def test_create_then_read_back(self, backend: Backend) -> None:
        version = await backend.write("a.txt", b"one\n", expect=ABSENT)
        blob = await backend.read("a.txt")
        assert blob.data == b"one\n"
        assert blob.version == version
        assert blob.size == 4
        assert isinstance(version, str)
        assert version

    async def test_create_again_is_refused(self, backend: Backend) -> None:
        await backend.write("a.txt", b"one\n", expect=ABSENT)
        with pytest.raises(AlreadyExists) as caught:
            await backend.write("a.txt", b"two\n", expect=ABSENT)
        assert caught.value.code is ErrorCode.ALREADY_EXISTS
        assert (await backend.read("a.txt")).data == b"one\n"

    async def test_update_with_current_version(self, backend: Backend) -> None:
        first = await backend.write("a.txt", b"one\n", expect=ABSENT)
        second = await backend.write("a.txt", b"two\n", expect=first)
        assert second != first
        blob = await backend.read("a.txt")
        assert (blob.data, blob.version) == (b"two\n", second)

    async def test_update_with_stale_version_is_refused(self, backend: Backend) -> None:
        first = await backend.write("a.txt", b"one\n", expect=ABSENT)
        second = await backend.write("a.txt", b"two\n", expect=first)
        with pytest.raises(Stale) as caught:
            await backend.write("a.txt", b"three\n", expect=first)
        assert caught.value.code is ErrorCode.STALE
        blob = await backend.read("a.txt")
        assert (blob.data, blob.version) == (b"two\n", second)

    async def test_update_of_missing_file_is_refused(self, backend: Backend) -> None:
        version = await backend.write("a.txt", b"one\n", expect=ABSENT)
        with pytest.raises(Stale):
            await backend.write("b.txt", b"two\n", expect=version)
        with pytest.raises(NotFound):
            await backend.read("b.txt")

    async def test_unconditional_write_replaces(self, backend: Backend) -> None:
        await backend.write("a.txt", b"one\n", expect=None)
        version = await backend.write("a.txt", b"two\n", expect=None)
        assert (await backend.read("a.txt")).version == version

    async def test_version_names_content_state(self, backend: Backend) -> None:
        one = await backend.write("a.txt", b"one\n", expect=ABSENT)
        two = await backend.write("a.txt", b"two\n", expect=one)
        assert one != two
        assert (await backend.stat("a.txt")).version in (None, two)

    async def test_write_creates_missing_parents(self, backend: Backend) -> None:
        await backend.write("d/e/f.txt", b"x", expect=ABSENT)
        assert (await backend.read("d/e/f.txt")).data == b"x"
        names = [entry.name for entry in await backend.list("d")]
        assert names == ["e"]

    # -- counter races ----------------------------------------------------------------

    async def test_counter_race_through_backend_cas(self, backend: Backend) -> None:
        await backend.write("counter", b"0", expect=ABSENT)

        async def worker() -> None:
            for _ in range(self.race_increments):
                while True:
                    blob = await backend.read("counter")
                    try:
                        await backend.write(
                            "counter", str(int(blob.data) + 1).encode(), expect=blob.version
                        )
                    except Stale:
                        await anyio.lowlevel.checkpoint()
                        continue
                    break

        async with anyio.create_task_group() as group:
            for _ in range(self.race_workers):
                group.start_soon(worker)
        total = int((await backend.read("counter")).data)
        assert total == self.race_workers * self.race_increments

    async def test_counter_race_through_ctx_fs(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        setup = fs.context(owner="setup")
        await setup.fs.write("counter.txt", "0\n")

        async def worker(owner: str) -> None:
            ctx = fs.context(owner=owner)
            for _ in range(self.race_increments):
                while True:
                    current = (await ctx.fs.read("counter.txt")).text
                    try:
                        await ctx.fs.edit("counter.txt", current, f"{int(current) + 1}\n")
                    except Stale:
                        continue
                    break

        async with anyio.create_task_group() as group:
            for index in range(self.race_workers):
                group.start_soon(worker, f"agent-{index}")
        outcome = await setup.fs.read("counter.txt")
        assert int(outcome.text) == self.race_workers * self.race_increments
