"""Peak memory of the operations that hold a whole file: write, edit, a search that fails.

Each case runs in a fresh process on fs-local and reports how far its peak
resident set size (``VmHWM``) rose above the peak already reached before the
operation (interpreter, ctxfs, the open store, and the operation's own input:
the content of a write, the strings of an edit), as a multiple of the file's
size. Target: at most three times the file for each.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Final

from benchmarks.large_files import text_file

TARGET: Final = 3.0

_CASE = textwrap.dedent(
    """
    import json, sys, anyio
    from ctxfs.core import FsError, open_fs

    def peak():  # this process's own high-water mark in bytes
        with open("/proc/self/status") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        return kb * 1024

    async def main(root, case, size):
        async with open_fs(root, load_entrypoints=False) as fs:
            ctx = fs.context(owner="rss")
            if case == "write":
                content = "line of text, forty-four characters long.\\n" * (size // 44)
                before = peak()
                await ctx.fs.write("new.txt", content)
            elif case == "rewrite":
                with open(f"{root}/old.txt", "rb") as file:
                    content = file.read().decode().replace("line", "LINE", 1000)
                async with fs.backend.open_read("old.txt") as stream:  # 1 MiB at a time
                    async for _ in stream:
                        pass
                key = (await fs.backend.locate("old.txt")).key
                await fs.file_context.observe(  # as if every window had been read
                    "rss", key, stream.version, complete=True
                )
                before = peak()
                await ctx.fs.write("old.txt", content)
            elif case == "edit":
                await ctx.fs.read("old.txt", limit=1)
                before = peak()
                await ctx.fs.edit("old.txt", "UNIQUE-MARKER-A", "UNIQUE-MARKER-B")
            else:
                old = "no such text\\n" * (size // 26)
                await ctx.fs.read("old.txt", limit=1)
                before = peak()
                try:
                    await ctx.fs.edit("old.txt", old, "x")
                except FsError as error:
                    assert error.code.value == "no_match", error
            print(json.dumps({"before": before, "after": peak()}))

    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
    """
)

CASES: Final = (
    ("write", "write a new 500 MiB file", 500 << 20),
    ("rewrite", "write over a 500 MiB file (1,000 lines changed)", 500 << 20),
    ("edit", "edit one line of a 1 GiB file", 1 << 30),
    ("search", "edit of a 100 MiB file with a 50 MiB old_string that is not there", 100 << 20),
)


def growth(root: Path, case: str, size: int) -> float:
    """How far the peak rose during *case*, as a multiple of *size*; a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", _CASE, str(root), case, str(size)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    measured = json.loads(result.stdout)
    return float(measured["after"] - measured["before"]) / size


def section(workdir: Path) -> list[str]:
    """The memory table."""
    rows = [
        "## Peak memory of whole-file operations",
        "",
        "A fresh process each, on fs-local; growth of the peak resident set during the "
        f"operation, as a multiple of the file's size. Target: at most {TARGET:g}x.",
        "",
        "| operation | file | peak growth | target | met |",
        "|---|---|---|---|---|",
    ]
    for case, title, size in CASES:
        root = workdir / f"memory-{case}"
        root.mkdir()
        if case != "write":
            text_file(root / "old.txt", size)
        ratio = growth(root, case, size)
        met = "yes" if ratio <= TARGET else "**missed**"
        rows.append(f"| {title} | {size >> 20} MiB | {ratio:.2f}x | ≤ {TARGET:g}x | {met} |")
        for path in root.iterdir():
            path.unlink()
    rows.append("")
    return rows


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ctxfs-memory-") as name:
        print("\n".join(section(Path(name))))
