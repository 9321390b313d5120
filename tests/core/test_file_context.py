from __future__ import annotations

import threading

import anyio
import pytest

from ctxfs.core import (
    ABSENT,
    Busy,
    Context,
    ErrorCode,
    Fs,
    MemoryBackend,
    MemoryObservations,
    NotObserved,
    Observation,
    Stale,
)
from ctxfs.core.locks import KeyedLocks

pytestmark = pytest.mark.anyio

TEXT = "".join(f"line {n}\n" for n in range(1, 11))


@pytest.fixture
async def seeded(memory_backend: MemoryBackend, memory_fs: Fs) -> Fs:
    await memory_backend.write("f.txt", TEXT.encode(), expect=ABSENT)
    return memory_fs


async def test_edit_without_read_is_not_observed(seeded: Fs, memory_ctx: Context) -> None:
    with pytest.raises(NotObserved) as caught:
        await memory_ctx.fs.edit("f.txt", "line 1\n", "first\n")
    assert caught.value.code is ErrorCode.NOT_OBSERVED
    assert "read" in caught.value.hint.lower()
    assert (await seeded.backend.read("f.txt")).data == TEXT.encode()


async def test_write_over_unread_file_is_not_observed(seeded: Fs, memory_ctx: Context) -> None:
    with pytest.raises(NotObserved):
        await memory_ctx.fs.write("f.txt", "replaced\n")
    assert (await seeded.backend.read("f.txt")).data == TEXT.encode()


async def test_another_owners_change_makes_mine_stale(seeded: Fs) -> None:
    alice, bob = seeded.context(owner="alice"), seeded.context(owner="bob")
    seen = await alice.fs.read("f.txt")
    await bob.fs.read("f.txt")
    changed = await bob.fs.edit("f.txt", "line 2\n", "second\n")
    with pytest.raises(Stale) as caught:
        await alice.fs.edit("f.txt", "line 3\n", "third\n")
    assert caught.value.code is ErrorCode.STALE
    assert caught.value.details["observed_version"] == seen.version
    assert caught.value.details["current_version"] == changed.version
    assert "-line 2\n+second\n" in caught.value.details["diff"]
    await alice.fs.edit("f.txt", "line 3\n", "third\n")  # the diff shown counts as a read


async def test_without_session_memory_a_stale_change_must_read_again() -> None:
    fs = Fs(MemoryBackend(), load_entrypoints=False, session_memory=False)
    await fs.context(owner="setup").fs.write("f.txt", "".join(f"line {n}\n" for n in range(9)))
    alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
    seen = await alice.fs.read("f.txt")
    await bob.fs.read("f.txt")
    changed = await bob.fs.edit("f.txt", "line 2\n", "second\n")
    with pytest.raises(Stale) as caught:
        await alice.fs.edit("f.txt", "line 3\n", "third\n")
    assert caught.value.details == {
        "observed_version": seen.version,
        "current_version": changed.version,
    }
    with pytest.raises(Stale):
        await alice.fs.write("f.txt", "all new\n")
    assert (await fs.backend.read("f.txt")).version == changed.version
    await alice.fs.read("f.txt", offset=3, limit=1)
    await alice.fs.edit("f.txt", "line 3\n", "third\n")


async def test_write_after_partial_read_is_not_observed(seeded: Fs, memory_ctx: Context) -> None:
    await memory_ctx.fs.read("f.txt", limit=5)
    with pytest.raises(NotObserved) as caught:
        await memory_ctx.fs.write("f.txt", "replaced\n")
    assert caught.value.details == {"partial_observation": True}
    assert "whole file" in caught.value.message


async def test_edit_after_partial_read_works(seeded: Fs, memory_ctx: Context) -> None:
    await memory_ctx.fs.read("f.txt", offset=9, limit=1)
    outcome = await memory_ctx.fs.edit("f.txt", "line 1\n", "first\n")
    assert outcome.replacements == 1
    assert (await seeded.backend.read("f.txt")).data.startswith(b"first\nline 2\n")


async def test_changes_after_a_partial_read_still_leave_the_rest_unseen(
    seeded: Fs, memory_ctx: Context
) -> None:
    await memory_ctx.fs.read("f.txt", limit=1)
    edited = await memory_ctx.fs.edit("f.txt", "line 1\n", "first\n")
    seen = await seeded.file_context.observation("agent-1", "f.txt")
    assert seen == Observation(version=edited.version, complete=False, path="f.txt")
    with pytest.raises(NotObserved, match=r"only part of f\.txt"):
        await memory_ctx.fs.write("f.txt", "replaced\n")
    await memory_ctx.fs.insert("f.txt", 1, "second")
    await memory_ctx.fs.move("f.txt", "g.txt")  # the move carries what was seen of the source
    with pytest.raises(NotObserved, match=r"only part of g\.txt"):
        await memory_ctx.fs.write("g.txt", "replaced\n")
    await memory_ctx.fs.read("g.txt")
    await memory_ctx.fs.move("g.txt", "h.txt")
    assert (await memory_ctx.fs.write("h.txt", "replaced\n")).created is False


async def test_windows_that_add_up_to_the_whole_file_are_a_complete_read(
    seeded: Fs, memory_ctx: Context
) -> None:
    await memory_ctx.fs.read("f.txt", offset=6)
    with pytest.raises(NotObserved) as partial:
        await memory_ctx.fs.write("f.txt", "replaced\n")
    assert partial.value.details == {"partial_observation": True}
    await memory_ctx.fs.read("f.txt", offset=2, limit=2)
    with pytest.raises(NotObserved):  # lines 1, 4 and 5 not seen yet
        await memory_ctx.fs.write("f.txt", "replaced\n")
    await memory_ctx.fs.read("f.txt", limit=1)
    await memory_ctx.fs.read("f.txt", offset=3, limit=3)
    assert (await memory_ctx.fs.write("f.txt", "replaced\n")).created is False


async def test_windows_of_different_versions_do_not_add_up(seeded: Fs, memory_ctx: Context) -> None:
    await memory_ctx.fs.read("f.txt", limit=5)
    data = (await seeded.backend.read("f.txt")).data
    await seeded.backend.write("f.txt", data + b"more\n", expect=None)
    await memory_ctx.fs.read("f.txt", offset=6)
    with pytest.raises(NotObserved):
        await memory_ctx.fs.write("f.txt", "replaced\n")


async def test_a_line_cut_by_the_cap_is_not_seen(memory_ctx: Context, seeded: Fs) -> None:
    cap = memory_ctx.opened_fs.text_options.max_line_chars
    await seeded.backend.write("long.txt", b"a\n" + b"x" * (cap + 1) + b"\nb\n", expect=None)
    await memory_ctx.fs.read("long.txt", limit=1)
    await memory_ctx.fs.read("long.txt", offset=2)
    with pytest.raises(NotObserved):
        await memory_ctx.fs.write("long.txt", "replaced\n")


async def test_full_read_then_window_stays_complete(seeded: Fs, memory_ctx: Context) -> None:
    await memory_ctx.fs.read("f.txt")
    await memory_ctx.fs.read("f.txt", offset=2, limit=1)
    outcome = await memory_ctx.fs.write("f.txt", "replaced\n")
    assert outcome.created is False
    assert outcome.previous_version is not None


async def test_own_mutations_refresh_the_observation(seeded: Fs, memory_ctx: Context) -> None:
    await memory_ctx.fs.read("f.txt")
    edited = await memory_ctx.fs.edit("f.txt", "line 1\n", "first\n")
    assert await seeded.file_context.observation("agent-1", "f.txt") == Observation(
        version=edited.version, complete=True, path="f.txt"
    )
    written = await memory_ctx.fs.write("f.txt", "replaced\n")
    await memory_ctx.fs.edit("f.txt", "replaced", "again")
    assert written.previous_version == edited.version


async def test_creating_needs_no_observation_and_counts_as_one(memory_ctx: Context) -> None:
    created = await memory_ctx.fs.write("new/file.txt", "hello\n")
    assert created.created
    assert created.previous_version is None
    await memory_ctx.fs.write("new/file.txt", "hello again\n")


async def test_file_created_by_someone_else_meanwhile_is_stale(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    memory_backend.faults.change_before_next_write("race.txt", b"theirs\n")
    with pytest.raises(Stale, match="created by someone else"):
        await memory_ctx.fs.write("race.txt", "mine\n")
    assert (await memory_backend.read("race.txt")).data == b"theirs\n"


async def test_concurrent_change_between_check_and_write_is_caught_by_the_store(
    seeded: Fs, memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_ctx.fs.read("f.txt")
    memory_backend.faults.change_before_next_write("f.txt", b"someone else\n")
    with pytest.raises(Stale):
        await memory_ctx.fs.edit("f.txt", "line 1\n", "first\n")
    assert (await memory_backend.read("f.txt")).data == b"someone else\n"


async def test_delete_needs_an_observation_and_forgets_it(seeded: Fs, memory_ctx: Context) -> None:
    with pytest.raises(NotObserved):
        await memory_ctx.fs.delete("f.txt")
    await memory_ctx.fs.read("f.txt", limit=1)
    await memory_ctx.fs.delete("f.txt")
    assert await seeded.file_context.observation("agent-1", "f.txt") is None


async def test_a_held_lock_makes_others_busy_within_the_bound(
    memory_backend: MemoryBackend,
) -> None:
    fs = Fs(memory_backend, load_entrypoints=False, lock_timeout=0.2)
    ctx = fs.context(owner="a")
    await ctx.fs.write("f.txt", "x\n")
    async with fs.file_context.locks.hold("f.txt", timeout=1):
        started = anyio.current_time()
        with pytest.raises(Busy) as caught:
            await ctx.fs.edit("f.txt", "x", "y")
        waited = anyio.current_time() - started
    assert caught.value.retryable
    assert caught.value.code is ErrorCode.BUSY
    assert 0.15 <= waited < 2
    assert (await memory_backend.read("f.txt")).data == b"x\n"
    await ctx.fs.edit("f.txt", "x", "y")


async def test_locks_are_released_when_the_mutation_fails(seeded: Fs, memory_ctx: Context) -> None:
    await memory_ctx.fs.read("f.txt")
    with pytest.raises(Exception, match="not found"):
        await memory_ctx.fs.edit("f.txt", "absent text", "x")
    assert len(seeded.file_context.locks) == 0
    await memory_ctx.fs.edit("f.txt", "line 1\n", "first\n")


async def test_a_cancelled_waiter_leaves_no_acquisition_behind() -> None:
    locks = KeyedLocks()
    async with locks.hold("k", timeout=1):
        with anyio.move_on_after(0.05) as scope:
            async with locks.hold("k", timeout=5):
                pytest.fail("acquired a held lock")  # pragma: no cover
        assert scope.cancelled_caught
    assert len(locks) == 0
    with anyio.fail_after(1):
        async with locks.hold("k", timeout=0.5):
            pass


async def test_keyed_locks_exclude_threads_and_tasks() -> None:
    locks, inside, overlaps = KeyedLocks(), [0], [0]

    async def critical() -> None:
        async with locks.hold("k", timeout=10):
            inside[0] += 1
            overlaps[0] = max(overlaps[0], inside[0])
            await anyio.sleep(0.001)
            inside[0] -= 1

    async def tasks() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(20):
                group.start_soon(critical)

    threads = [threading.Thread(target=anyio.run, args=(tasks,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    await tasks()
    for thread in threads:
        await anyio.to_thread.run_sync(thread.join)
    assert overlaps[0] == 1


async def test_observations_are_bounded(memory_backend: MemoryBackend) -> None:
    fs = Fs(
        memory_backend, load_entrypoints=False, observations=MemoryObservations(max_observations=3)
    )
    ctx = fs.context(owner="a")
    for index in range(5):
        await ctx.fs.write(f"{index}.txt", "x\n")
    remembered = [await fs.file_context.observation("a", f"{i}.txt") is not None for i in range(5)]
    assert remembered == [False, False, True, True, True]
    with pytest.raises(NotObserved):
        await ctx.fs.edit("0.txt", "x", "y")


def test_a_context_needs_an_owner(memory_fs: Fs) -> None:
    with pytest.raises(ValueError, match="owner"):
        memory_fs.context(owner="")
    assert repr(memory_fs.context(owner="o", workspace="w")) == "Context(owner='o', workspace='w')"
