"""Large files: a window read and one edit on a 1 GB file, and the memory a window read takes.

Times compare ``ctx.fs`` on fs-local with the hand-written baselines of
:mod:`benchmarks.local_disk` (which read the whole file into memory). Peak
memory is measured in a fresh process per case: its peak resident set size
(``VmHWM``) after the read, against the peak it had already reached once
ctxfs was imported and the store opened.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path
from typing import Final

import anyio

from benchmarks.harness import Case
from benchmarks.local_disk import baseline_edit, baseline_read
from benchmarks.text_semantics import text_of_size, toggle
from ctxfs.core import Fs
from ctxfs.local import LocalBackend

GROUP = "Large files on fs-local: 1 GB"
RSS_TARGET_MB: Final = 64

_PEAK = textwrap.dedent(
    """
    import json, sys, anyio
    from ctxfs.core import open_fs

    def peak_kb():  # this process's own high-water mark (ru_maxrss also counts the parent's)
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

    async def main(root, name, offset):
        async with open_fs(root, load_entrypoints=False) as fs:
            ctx = fs.context(owner="rss")
            before = peak_kb()
            window = await ctx.fs.read(name, offset=offset, limit=2000)
            after = peak_kb()
        print(json.dumps({"before_kb": before, "after_kb": after, "lines": window.returned_lines}))

    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
    """
)


def text_file(path: Path, size: int) -> None:
    """Write *size* bytes of numbered text lines with one unique marker line in the middle."""
    block = text_of_size(16 << 20)
    with path.open("wb") as out:
        written = 0
        while written < size // 2:
            out.write(block)
            written += len(block)
        out.write(b"UNIQUE-MARKER-A\n")
        while written < size:
            out.write(block)
            written += len(block)


def peak_window_read_mb(root: Path, name: str, offset: int) -> tuple[float, float]:
    """The process's peak memory in MB before and after a 2,000-line window read.

    A fresh process each time. (The window holds fewer lines when they pass the
    read's character budget.)
    """
    result = subprocess.run(
        [sys.executable, "-c", _PEAK, str(root), name, str(offset)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    measured = json.loads(result.stdout)
    if not measured["lines"]:
        raise RuntimeError(f"the window read at {offset:,} in {name} returned no lines")
    return measured["before_kb"] / 1024, measured["after_kb"] / 1024


async def cases(workdir: Path) -> tuple[list[Case], list[str]]:
    """The timed cases on 1 GB copies, and the memory table (100 MB and 1 GB)."""
    ours_root, base_root = workdir / "large-ctxfs", workdir / "large-baseline"
    ours_root.mkdir()
    base_root.mkdir()
    for size, name in ((100 << 20, "100MB.txt"), (1 << 30, "1GB.txt")):
        text_file(ours_root / name, size)
    text_file(base_root / "1GB.txt", 1 << 30)
    middle = 10_000_000  # a line near the middle of the 1 GB file (~110 bytes a line)
    fs = Fs(LocalBackend(ours_root, state_dir=workdir / "large-state"), load_entrypoints=False)
    ctx = fs.context(owner="bench")
    await ctx.fs.read("1GB.txt", limit=1)
    lock = anyio.Lock()

    rows = [
        "## Peak memory of a 2,000-line window read",
        "",
        f"A fresh process each; target: under {RSS_TARGET_MB} MB above the process's peak "
        "before the read (interpreter, ctxfs, the open store), whatever the file size. The "
        "stream holds one 1 MiB chunk at a time, which often fits in memory the imports had "
        "already touched.",
        "",
        "| file | offset | peak RSS before | peak RSS after | growth | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, offset in (("100MB.txt", 500_000), ("1GB.txt", middle), ("1GB.txt", 9_000_000)):
        before, after = peak_window_read_mb(ours_root, name, offset)
        met = "yes" if after - before < RSS_TARGET_MB else "**missed**"
        rows.append(
            f"| {name} | {offset:,} | {before:.1f} MB | {after:.1f} MB | {after - before:.1f} MB "
            f"| < {RSS_TARGET_MB} MB | {met} |"
        )

    async def ours_read() -> object:
        return await ctx.fs.read("1GB.txt", offset=middle, limit=2000)

    timed = [
        Case(
            group=GROUP,
            name="read 2,000-line window in the middle",
            ours=ours_read,
            baseline=partial(baseline_read, anyio.Path(base_root / "1GB.txt"), middle, 2000),
            target=1.2,
            rounds=3,
            note="the baseline reads the whole file into memory; ctxfs streams it",
        ),
        Case(
            group=GROUP,
            name="edit one line",
            ours=toggle(lambda old, new: ctx.fs.edit("1GB.txt", old, new)),
            baseline=toggle(partial(baseline_edit, base_root / "1GB.txt", lock)),
            target=1.2,
            rounds=3,
        ),
    ]
    return timed, [*rows, ""]
