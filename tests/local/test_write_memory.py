"""A whole-file write holds its content once, and the file it replaces once more.

Each case runs the ``write`` tool in a fresh process on fs-local and measures how
far the process's peak resident set rises above where it stood as the call
started (the peak is reset then, through ``/proc/self/clear_refs``), as a
multiple of the file's size.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SIZE = 96 << 20

_WRITE = textwrap.dedent(
    """
    import gc, json, sys, anyio
    from ctxfs.core import open_fs
    from ctxfs.tools import FsToolset

    def peak():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

    async def main(root, kind, size):
        line = "строка, a line of text not only in ASCII\\n" if kind == "utf8" else "x" * 43 + "\\n"
        async with open_fs(root, load_entrypoints=False) as fs:
            ctx, tools = fs.context(owner="rss"), FsToolset()
            content = "x" * size if "one-line" in kind else line * (size // len(line.encode()))
            if kind.startswith("over"):
                old = content.replace("x", "y")
                await ctx.fs.write("a.txt", old)
                del old
            gc.collect()
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
            before = peak()
            done = await tools.execute(ctx, "write", {"file_path": "a.txt", "content": content})
            assert not done.is_error, done.text
            print(json.dumps((peak() - before) * 1024 / size))

    anyio.run(main, *sys.argv[1:3], int(sys.argv[3]))
    """
)


@pytest.mark.parametrize(
    ("kind", "most"),
    [("ascii", 1.25), ("utf8", 1.25), ("one-line", 1.25), ("over", 2.25), ("over-one-line", 2.25)],
    ids=[
        "a new file",
        "a new file beyond ASCII",
        "a new file of one line",
        "over a file read whole",
        "over a file of one line",
    ],
)
def test_a_write_holds_its_content_once_and_the_file_it_replaces(
    tmp_path: Path, kind: str, most: float
) -> None:
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("the peak resident set cannot be reset on this system (no clear_refs)")
    result = subprocess.run(
        [sys.executable, "-c", _WRITE, str(tmp_path), kind, str(SIZE)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    growth = json.loads(result.stdout)
    assert growth <= most, f"the write took {growth:.2f}x the file's size at its peak"
