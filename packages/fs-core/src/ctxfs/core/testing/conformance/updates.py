"""Conformance: updates (one read, then a conditional change), locks, observation rules."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from ctxfs.core.backend import Backend
from ctxfs.core.errors import Busy, NotFound, NotObserved, Stale
from ctxfs.core.testing.conformance.support import ConformanceBase, contexts
from ctxfs.core.versions import ABSENT

__all__ = ["UpdateConformance"]


class UpdateConformance(ConformanceBase):
    """Updates (one read, then a conditional change), locks, and the observation rules."""

    async def test_update_changes_what_it_read(self, backend: Backend) -> None:
        version = await backend.write("a.txt", b"one", expect=ABSENT)
        async with backend.open_update("a.txt") as update:
            assert update.current is not None
            assert (update.current.data, update.current.version) == (b"one", version)
            written = await update.write(b"two")
        blob = await backend.read("a.txt")
        assert (blob.data, blob.version) == (b"two", written)
        async with backend.open_update("new/b.txt") as update:
            assert update.current is None
            created = await update.write(b"fresh")
        assert (await backend.read("new/b.txt")).version == created
        async with backend.open_update("a.txt") as update:
            await update.delete()
        with pytest.raises(NotFound):
            await backend.read("a.txt")
        async with backend.open_update("a.txt") as update:
            with pytest.raises(NotFound):
                await update.delete()

    async def test_update_and_a_rival_writer_never_both_win(self, backend: Backend) -> None:
        version = await backend.write("a.txt", b"base", expect=ABSENT)
        outcomes: dict[str, bool] = {}

        async def rival() -> None:
            try:
                await backend.write("a.txt", b"rival", expect=version)
            except Stale:
                outcomes["rival"] = False
            else:
                outcomes["rival"] = True

        async with (
            anyio.create_task_group() as group,
            backend.open_update("a.txt") as update,
        ):
            group.start_soon(rival)
            await anyio.sleep(0.5)  # the rival lands now, or waits for the update's lock
            try:
                await update.write(b"mine")
            except Stale:
                outcomes["mine"] = False
            else:
                outcomes["mine"] = True
        assert sorted(outcomes.values()) == [False, True], outcomes
        winner = "mine" if outcomes["mine"] else "rival"
        assert (await backend.read("a.txt")).data == winner.encode()

    async def test_lock_or_documented_absence(self, backend: Backend) -> None:
        lock = backend.lock("k", timeout=0.2)
        if not backend.capabilities.locks:
            assert lock is None
            return
        assert lock is not None
        async with lock:
            rival = backend.lock("k", timeout=0.2)
            assert rival is not None
            with pytest.raises(Busy):
                async with rival:
                    pass  # pragma: no cover - never acquired
        again = backend.lock("k", timeout=0.2)
        assert again is not None
        async with again:
            pass

    # -- ctx.fs on this backend ---------------------------------------------------------

    async def test_observation_rules_hold(self, backend: Backend) -> None:
        alice, bob = contexts(backend, "alice", "bob")
        await alice.fs.write("notes.txt", "one\ntwo\n")
        with pytest.raises(NotObserved):
            await bob.fs.edit("notes.txt", "one", "uno")
        await bob.fs.read("notes.txt", offset=2, limit=1)
        outcome = await bob.fs.edit("notes.txt", "two", "dos")
        assert outcome.replacements == 1
        with pytest.raises(Stale):
            await alice.fs.edit("notes.txt", "one", "eins")
        read = await alice.fs.read("notes.txt")
        assert read.text == "one\ndos\n"
        assert read.version == outcome.version == (await backend.read("notes.txt")).version
