from __future__ import annotations

from contextlib import suppress

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs.core import (
    ABSENT,
    Capabilities,
    CasScope,
    Context,
    FsError,
    InvalidPath,
    MemoryBackend,
    Unavailable,
)

pytestmark = pytest.mark.anyio


async def test_fail_next_raises_once_and_changes_nothing(memory_backend: MemoryBackend) -> None:
    first = await memory_backend.write("a.txt", b"one", expect=ABSENT)
    memory_backend.faults.fail_next("write", Unavailable("store hiccup"))
    with pytest.raises(Unavailable):
        await memory_backend.write("a.txt", b"two", expect=first)
    assert (await memory_backend.read("a.txt")).data == b"one"
    await memory_backend.write("a.txt", b"two", expect=first)


async def test_fail_next_can_target_a_path(memory_backend: MemoryBackend) -> None:
    memory_backend.faults.fail_next("read", Unavailable("flaky"), path="b.txt")
    await memory_backend.write("a.txt", b"a", expect=ABSENT)
    await memory_backend.write("b.txt", b"b", expect=ABSENT)
    assert (await memory_backend.read("a.txt")).data == b"a"
    with pytest.raises(Unavailable):
        await memory_backend.read("b.txt")
    assert (await memory_backend.read("b.txt")).data == b"b"


async def test_an_injected_failure_reaches_ctx_fs_callers_unchanged(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_ctx.fs.write("a.txt", "one\n")
    memory_backend.faults.fail_next("write", Unavailable("down"))
    with pytest.raises(Unavailable) as caught:
        await memory_ctx.fs.edit("a.txt", "one", "two")
    assert caught.value.retryable
    assert (await memory_ctx.fs.read("a.txt")).text == "one\n"
    await memory_ctx.fs.edit("a.txt", "one", "two")


async def test_a_concurrent_delete_between_read_and_write(memory_backend: MemoryBackend) -> None:
    version = await memory_backend.write("a.txt", b"one", expect=ABSENT)
    memory_backend.faults.change_before_next_write("a.txt", None)
    with pytest.raises(Exception, match="expected version") as caught:
        await memory_backend.write("a.txt", b"two", expect=version)
    assert caught.value.details["current_version"] is None  # type: ignore[attr-defined]


async def test_latency_is_added_to_every_call(memory_backend: MemoryBackend) -> None:
    memory_backend.faults.latency = 0.05
    started = anyio.current_time()
    await memory_backend.write("a.txt", b"x", expect=ABSENT)
    await memory_backend.read("a.txt")
    assert anyio.current_time() - started >= 0.1


async def test_calls_are_counted(memory_backend: MemoryBackend, memory_ctx: Context) -> None:
    await memory_ctx.fs.write("a.txt", "x\n")
    await memory_ctx.fs.read("a.txt")
    assert memory_backend.calls == {"read": 2, "write": 1}


async def test_backends_sharing_a_store_see_the_same_files() -> None:
    one = MemoryBackend()
    two = MemoryBackend(one.store)
    version = await one.write("a.txt", b"x", expect=ABSENT)
    assert (await two.read("a.txt")).version == version


async def test_paths_are_checked_even_below_ctx_fs(memory_backend: MemoryBackend) -> None:
    with pytest.raises(InvalidPath):
        await memory_backend.mkdir("a//b")


def test_capabilities() -> None:
    assert MemoryBackend().capabilities == Capabilities(
        cas_scope=CasScope.PROCESS,
        range_reads=True,
        real_directories=True,
        symlinks=False,
        locks=False,
        directory_moves=True,
    )


_PATHS = st.lists(st.sampled_from("abc"), min_size=1, max_size=3).map("/".join)
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), _PATHS),
        st.tuples(st.just("delete"), _PATHS),
        st.tuples(st.just("mkdir"), _PATHS),
        st.tuples(st.just("move_directory"), _PATHS, _PATHS),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(steps=_STEPS)
def test_a_listing_names_what_the_store_holds_after_any_changes(
    steps: list[tuple[str, ...]],
) -> None:
    backend = MemoryBackend()

    async def change_then_list() -> dict[str, list[str]]:
        for method, *paths in steps:
            options = {"expect": None} if method == "write" else {}
            arguments = (*paths, b"x") if method == "write" else paths
            with suppress(FsError):  # a change the store refuses changes nothing
                await getattr(backend, method)(*arguments, **options)
        return {
            directory: [entry.path for entry in await backend.list(directory)]
            for directory in backend.store.directories
        }

    listed = anyio.run(change_then_list)
    held = [*backend.store.files, *backend.store.directories]
    for directory, paths in listed.items():
        prefix = f"{directory}/" if directory else ""
        below = {path for path in held if path.startswith(prefix) and path != directory}
        assert paths == sorted({prefix + path[len(prefix) :].split("/")[0] for path in below})
