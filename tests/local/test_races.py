"""A racer swaps a directory and a symlink while ctx.fs reads and writes: nothing escapes.

A realpath-then-open canary runs in the same loop and must escape at least once,
which proves the race was live while ctx.fs held the line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from ctxfs.core import Fs, FsError
from ctxfs.local import LocalBackend

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

RACE_SECONDS = 3.0

SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    RENAME_EXCHANGE = 2
    a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
    print("ready", flush=True)
    while True:
        if libc.renameat2(-100, a, -100, b, RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")
    """
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
async def test_32_symlink_swap_race_never_escapes(tmp_path: Path, resolver: str) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "file.txt").write_text("inside\n")
    (outside / "file.txt").write_text("SECRET\n")
    os.symlink(outside, root / "swap")
    racer = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(root / "sub"), str(root / "swap")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert racer.stdout is not None
    assert racer.stdout.readline().strip() == "ready"
    fs = Fs(
        LocalBackend(root, resolver=resolver, state_dir=tmp_path / "state"),
        load_entrypoints=False,
    )
    ctx = fs.context(owner="agent")
    reads = writes = refused = canary_escapes = canary_opens = 0
    try:
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            try:
                outcome = await ctx.fs.read("sub/file.txt")
                assert outcome.text == "inside\n", "ctx.fs read outside the root"
                reads += 1
            except FsError:
                refused += 1
            try:
                await ctx.fs.write(f"sub/new-{writes + refused}.txt", "created\n")
                writes += 1
            except FsError:
                refused += 1
            canary_opens, canary_escapes = _canary(root, canary_opens, canary_escapes)
            await anyio.lowlevel.checkpoint()
    finally:
        racer.kill()
        racer.wait()
        racer.stdout.close()
        await fs.aclose()
    assert sorted(p.name for p in outside.iterdir()) == ["file.txt"], "a write escaped"
    assert (outside / "file.txt").read_text() == "SECRET\n"
    print(f"{resolver}: reads={reads} writes={writes} refused={refused} "
          f"canary={canary_escapes}/{canary_opens}")  # fmt: skip
    assert reads > 0
    assert writes > 0
    assert refused > 0, "the racer never got in the way: the race was not live"
    assert canary_escapes > 0, f"the canary never escaped in {canary_opens} tries"


def _canary(root: Path, opens: int, escapes: int) -> tuple[int, int]:
    """The classic mistake: check the real path, then open the name."""
    for _ in range(50):
        try:
            resolved = os.path.realpath(root / "sub" / "file.txt")
            if resolved.startswith(str(root) + os.sep):
                with open(root / "sub" / "file.txt") as handle:
                    opens += 1
                    escapes += handle.read() == "SECRET\n"
        except OSError:
            pass  # the swap made a step fail: no escape this time
    return opens, escapes
