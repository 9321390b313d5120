"""Several hosts on one store: separate processes, each with its own ``Fs``, lose no update.

The workers are the contention benchmark's (``benchmarks.contention``), pointed at each server,
and start together only once every one has its store open.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from pathlib import Path

import anyio
import pytest
from benchmarks.contention import finish, start
from tests.remote.conftest import UrlFor
from tests.remote.servers import Server

from ctxfs.core import FsError, NotFound, NotObserved, Stale, open_fs
from ctxfs.remote import ObjectStoreBackend
from ctxfs.remote.ioloop import on_io_loop

WORKERS = 4
INCREMENTS = 25

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_four_processes_lose_no_increment(
    server: Server, url_for: UrlFor, tmp_path: Path
) -> None:
    url = url_for(server)
    async with open_fs(url, load_entrypoints=False, **server.options) as fs:
        await fs.context(owner="setup").fs.write("counter-0.txt", "0\n")
    go = tmp_path / "go"
    owners = [f"host-{index}" for index in range(WORKERS)]
    workers = start(url, server.options, owners, count=INCREMENTS, files=1, go=go)
    go.touch()
    stale = finish(workers)
    async with open_fs(url, load_entrypoints=False, **server.options) as fs:
        final = await fs.context(owner="check").fs.read("counter-0.txt")
    assert final.text == f"{WORKERS * INCREMENTS}\n"
    assert stale > 0, "the workers never actually raced"


async def test_hosts_sharing_redis_observations_see_one_file_by_one_key(
    server: Server, url_for: UrlFor, redis_url: str
) -> None:
    # Two servers (here: two Fs, one rooted in a subdirectory of the other's root) share their
    # observations through Redis: what an agent read through one, it may edit through the
    # other; another agent may not; a stale view is refused whichever server it comes through.
    url = url_for(server)
    options = {**server.options, "load_entrypoints": False, "observations": redis_url}
    async with open_fs(url, **options) as outer:
        await outer.context(owner="setup").fs.write("sub/f.txt", "one\n")
        async with open_fs(f"{url}/sub", **options) as inner:
            assert (await outer.backend.locate("sub/f.txt")).key == (
                await inner.backend.locate("f.txt")
            ).key
            await outer.context(owner="agent").fs.read("sub/f.txt")
            await inner.context(owner="agent").fs.edit("f.txt", "one", "two")
            with pytest.raises(NotObserved):
                await inner.context(owner="other").fs.edit("f.txt", "two", "three")
            await inner.context(owner="other").fs.read("f.txt")
            await outer.context(owner="other").fs.edit("sub/f.txt", "two", "three")
            with pytest.raises(Stale):
                await outer.context(owner="agent").fs.edit("sub/f.txt", "two", "four")
            assert (await inner.context(owner="check").fs.read("f.txt")).text == "three\n"


async def outcome(call: Awaitable[object]) -> str:
    """``ok``, or the code of the error *call* raised."""
    try:
        await call
    except FsError as error:
        return error.code.value
    return "ok"


@pytest.mark.parametrize("other", ["move", "delete"])
async def test_two_hosts_moving_one_file_leave_one_copy(
    server: Server, url_for: UrlFor, other: str
) -> None:
    # A conditional delete refused because the file is gone reads the same whether another
    # host took it or this one's own request landed and was sent again: before, a refused
    # delete of the source was taken for the latter, both moves succeeded, two copies were
    # left (or a delete said it removed a file that lived on where a move took it).
    url = url_for(server)
    options = {**server.options, "load_entrypoints": False}
    async with open_fs(url, **options) as one, open_fs(url, **options) as two:
        for number in range(8):
            source = f"src-{number}.txt"
            await one.context(owner="setup").fs.write(source, "the only copy\n")
            first, second = one.context(owner="a").fs, two.context(owner="b").fs
            await first.read(source)
            await second.read(source)
            racing = second.move(source, f"b-{number}.txt") if other == "move" else None
            done: dict[str, str] = {}

            async def run(name: str, call: Awaitable[object]) -> None:
                done[name] = await outcome(call)  # noqa: B023 - awaited within the loop's turn

            async with anyio.create_task_group() as group:
                group.start_soon(run, "a", first.move(source, f"a-{number}.txt"))
                group.start_soon(run, "b", racing or second.delete(source))
            assert sorted(done.values()) == ["not_found", "ok"], done
            left = [stat.path for stat in await one.backend.list("") if f"-{number}." in stat.path]
            assert len(left) == (0 if other == "delete" and done["b"] == "ok" else 1), (done, left)
        if isinstance(one.backend, ObjectStoreBackend):  # (no removal lock is left behind)
            stored = await on_io_loop(one.backend.store.scan, one.backend.keys.directory(""))
            assert [info.key for info in stored.objects if "removing" in info.key] == []


async def test_two_roots_one_inside_the_other_moving_one_file_leave_one_copy(
    server: Server, url_for: UrlFor
) -> None:
    # Each finds the file's removal lock beside the file, not at its own root.
    url = url_for(server)
    options = {**server.options, "load_entrypoints": False}
    async with open_fs(url, **options) as outer, open_fs(f"{url}/sub", **options) as inner:
        for number in range(6):
            await outer.context(owner="setup").fs.write(f"sub/f-{number}.txt", "the only copy\n")
            first, second = outer.context(owner="a").fs, inner.context(owner="b").fs
            await first.read(f"sub/f-{number}.txt")
            await second.read(f"f-{number}.txt")
            done: list[str] = []

            async def run(call: Awaitable[object]) -> None:
                done.append(await outcome(call))  # noqa: B023 - awaited within the loop's turn

            async with anyio.create_task_group() as group:
                group.start_soon(run, first.move(f"sub/f-{number}.txt", f"a-{number}.txt"))
                group.start_soon(run, second.move(f"f-{number}.txt", f"b-{number}.txt"))
            assert sorted(done) == ["not_found", "ok"], done
            places = (f"sub/f-{number}.txt", f"a-{number}.txt", f"sub/b-{number}.txt")
            listed = await outer.backend.list("")
            with contextlib.suppress(NotFound):  # (an object store's empties with its last file)
                listed += await outer.backend.list("sub")
            copies = [path for path in places if path in {stat.path for stat in listed}]
            assert len(copies) == 1, copies
