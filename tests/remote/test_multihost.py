"""Several hosts on one store: separate processes, each with its own ``Fs``, lose no update.

The workers are the contention benchmark's (``benchmarks.contention``), pointed at each server,
and start together only once every one has its store open.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.contention import finish, start
from tests.remote.conftest import UrlFor
from tests.remote.servers import Server

from ctxfs.core import NotObserved, Stale, open_fs

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
