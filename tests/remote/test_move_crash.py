"""kill -9 during moves on every real store: the file is never lost.

A store without a rename copies under the destination's condition, then deletes
under the source's: a kill in between leaves both copies (the next mover finds
the source again), never neither. A zygote imports ctxfs once and forks a mover
per trial, killed with SIGKILL at a random moment after its first move began.
A mover killed holding a file's lock (SFTP's, or an object store's removal lock)
leaves it held until its lease ends, as the lock protocol says: the lease is short here.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import pytest
from tests.remote.conftest import UrlFor
from tests.remote.servers import Server

from ctxfs.core import NotFound, open_fs

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TRIALS = 25
CONTENT = "moved around\n" * 100
SIDES = ("a/file.txt", "b/file.txt")

ZYGOTE = textwrap.dedent(
    """
    import json, os, sys
    import anyio
    from ctxfs.core import open_fs

    URL, OPTIONS = sys.argv[1], json.loads(sys.argv[2])

    async def mover(here, there):
        async with open_fs(URL, load_entrypoints=False, **OPTIONS) as fs:
            ctx = fs.context(owner=f"mover-{os.getpid()}")
            await ctx.fs.read(here)
            print("ready", flush=True)
            while True:
                await ctx.fs.move(here, there)  # the mover has observed it there
                here, there = there, here

    print("zygote", flush=True)
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                anyio.run(mover, *line.split())
            except BaseException as error:
                print(f"error {error!r}", flush=True)
            finally:
                os._exit(1)
        print(pid, flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_kill_9_during_a_move_never_loses_the_file(server: Server, url_for: UrlFor) -> None:
    url = url_for(server)
    # a killed mover's lock (SFTP's, or an object store's removal lock) lives out its lease
    short = {"lease": 2.0} if server.name == "sftp" else {"removal_lease": 2.0}
    server = replace(server, options={**server.options, **short})
    async with open_fs(url, load_entrypoints=False, **server.options) as fs:
        await fs.context(owner="setup").fs.write(SIDES[0], CONTENT)
    zygote = subprocess.Popen(
        [sys.executable, "-c", ZYGOTE, url, json.dumps(server.options)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert zygote.stdin is not None
    assert zygote.stdout is not None
    rng, both = random.Random(20261130), 0
    try:
        assert zygote.stdout.readline().strip() == "zygote"
        for _ in range(TRIALS):
            held = await _held(url, server)
            assert list(held.values()) == [CONTENT] * len(held), "never torn"
            assert held, "never lost"
            if len(held) == 2:  # killed between the copy and the delete: drop the copy
                both += 1
                await _remove(url, server, SIDES[1])
                held.pop(SIDES[1])
            (here,) = held
            there = SIDES[1] if here == SIDES[0] else SIDES[0]
            zygote.stdin.write(f"{here} {there}\n")
            zygote.stdin.flush()
            lines = {zygote.stdout.readline().strip() for _ in range(2)}
            assert "ready" in lines, lines
            (pid,) = (int(line) for line in lines if line.isdigit())
            time.sleep(rng.uniform(0.0, 0.3))
            os.kill(pid, signal.SIGKILL)
            assert zygote.stdout.readline().strip() == "reaped"
        held = await _held(url, server)
        assert held
        assert list(held.values()) == [CONTENT] * len(held)
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=30)
        zygote.stdout.close()
    print(f"{server.name}: {both} of {TRIALS} kills left both copies")


async def _held(url: str, server: Server) -> dict[str, str]:
    """What each side holds now (as a new host sees it)."""
    held = {}
    async with open_fs(url, load_entrypoints=False, **server.options) as fs:
        ctx = fs.context(owner="checker")
        for side in SIDES:
            with contextlib.suppress(NotFound):
                held[side] = (await ctx.fs.read(side)).text
    return held


async def _remove(url: str, server: Server, path: str) -> None:
    async with open_fs(url, load_entrypoints=False, **server.options) as fs:
        ctx = fs.context(owner="cleaner")
        await ctx.fs.read(path)
        await ctx.fs.delete(path)
