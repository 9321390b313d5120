"""A directory swapped for a link out of the root, over and over, while grep and glob run.

A thread turns ``d`` into a directory, nothing, a link to a directory outside the root
holding a secret, nothing, and again, as fast as it can. Searches never show a line, a
name or a count from outside: with ripgrep the kernel (Landlock) refuses it every
open outside the root; ctxfs's own walk lists and reads through the confined resolver.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxfs.core import Fs
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset
from tests.tools.conftest import skip_without_ripgrep

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SEARCHES = {"ripgrep": 1000, "walk": 300}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def swapping(tmp_path: Path) -> Iterator[Path]:
    """A root whose ``d`` keeps changing between a directory and a link out of the root."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("needle SECRET\n")
    (root / "real").mkdir()
    (root / "real" / "inside.txt").write_text("needle inside\n")
    (root / "kept.txt").write_text("needle kept\n")
    os.symlink(outside, root / "link")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            for name in ("real", "link"):
                os.rename(root / name, root / "d")
                time.sleep(0.0005)  # long enough for a walk to meet each state sometimes
                os.rename(root / "d", root / name)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        yield root
    finally:
        stop.set()
        swapper.join()


@pytest.mark.parametrize("engine", ["ripgrep", "walk"])
async def test_no_search_shows_anything_from_outside_the_root(
    engine: str, swapping: Path, tmp_path: Path
) -> None:
    if engine == "ripgrep" and find_ripgrep() is None:
        skip_without_ripgrep()
    backend = LocalBackend(swapping, state_dir=tmp_path / "state", ripgrep=engine == "ripgrep")
    tools = FsToolset()
    seen_inside = 0
    async with Fs(backend, load_entrypoints=False) as fs:
        ctx = fs.context(owner="racer")
        for index in range(10 * SEARCHES[engine]):  # more while none met the directory
            if index >= SEARCHES[engine] and seen_inside:
                break
            mode = ("content", "files_with_matches", "count")[index % 3]
            found = await tools.execute(
                ctx, "grep", {"pattern": "needle", "output_mode": mode, "include_ignored": True}
            )
            assert found.error_code is None, found.text
            assert "secret" not in found.text.lower()
            assert "secret" not in str(found.structured)
            assert found.structured["total"] <= 3  # kept, inside, and nothing else
            seen_inside += "d/inside.txt" in str(found.structured)
            if index % 2 == 0:
                globbed = await tools.execute(ctx, "glob", {"pattern": "**/*.txt"})
                assert "secret" not in str(globbed.structured)
    assert seen_inside > 0, "the search never saw the swapped directory as a directory"
