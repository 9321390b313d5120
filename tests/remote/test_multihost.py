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

from ctxfs.core import open_fs

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
