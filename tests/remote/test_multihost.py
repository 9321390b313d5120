"""Several hosts on one store: separate processes, each with its own ``Fs``, lose no update.

The workers are the contention benchmark's (``benchmarks.contention``), pointed at each server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.remote.conftest import UrlFor
from tests.remote.servers import Server

from ctxfs.core import open_fs

WORKERS = 4
INCREMENTS = 25
ROOT = Path(__file__).resolve().parents[2]

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
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.contention",
                url,
                json.dumps(server.options),
                f"host-{index}",
                str(INCREMENTS),
                "1",
                str(go),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(WORKERS)
    ]
    go.touch()
    stale = 0
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        stale += int(out)
    async with open_fs(url, load_entrypoints=False, **server.options) as fs:
        final = await fs.context(owner="check").fs.read("counter-0.txt")
    assert final.text == f"{WORKERS * INCREMENTS}\n"
    assert stale > 0, "the workers never actually raced"
