"""Peak memory of long searches: 200,000 files, one 1 GiB file, one 500 MiB line.

Each case runs ``grep`` through ``FsToolset.execute`` in a fresh process on fs-local
and reports how far the process's peak resident set (``VmHWM``) rose during the
search, in MiB, with ripgrep as the engine and with ctxfs's own walk (which skips a
file holding a line over ``LINE_MAX_CHARS``, and says so). ripgrep's own
memory (a child process) is not counted. Target: under 64 MiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Final

TARGET_MIB: Final = 64

_CASE = textwrap.dedent(
    """
    import json, sys, anyio
    from ctxfs.core import Fs
    from ctxfs.local import LocalBackend
    from ctxfs.tools import FsToolset, ToolsetOptions


    def peak():
        with open("/proc/self/status") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        return kb * 1024

    async def main(root, engine, pattern):
        backend = LocalBackend(root, state_dir=root + ".state", ripgrep=engine == "ripgrep")
        tools = FsToolset(ToolsetOptions(grep_seconds=600))
        async with Fs(backend, load_entrypoints=False) as fs:
            ctx = fs.context(owner="rss")
            await tools.execute(ctx, "grep", {"pattern": "warm up", "path": "nothing"})
            before = peak()
            found = await tools.execute(ctx, "grep", {"pattern": pattern})
            assert found.error_code is None, found.text
            data = found.structured
            after = peak()
            seen = {"total": data["total"], "skipped": data.get("skipped", {})}  # (none: left out)
            print(json.dumps({"before": before, "after": after, **seen}))

    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
    """
)


def many_files(root: Path, count: int) -> None:
    """*count* small files in directories of 100; one holds ``UNIQUE_NEEDLE``."""
    for index in range(count):
        directory = root / f"d{index // 100:05d}"
        if index % 100 == 0:
            directory.mkdir(parents=True)
        needle = "UNIQUE_NEEDLE\n" if index == count // 2 else ""
        (directory / f"f{index % 100:02d}.txt").write_text(f"line {index}\n{needle}")


def one_file(root: Path, *, size: int, line: int) -> None:
    """One file of *size* bytes in lines of *line* bytes; ``UNIQUE_NEEDLE`` ends the last."""
    root.mkdir(parents=True)
    row = b"x" * (line - 1) + b"\n"
    with (root / "big.txt").open("wb") as out:
        for _ in range(size // line - 1):
            out.write(row)
        out.write(b"x" * (line - 15) + b"UNIQUE_NEEDLE\n")


def growth(root: Path, engine: str) -> tuple[float, str]:
    """How far the peak rose during the search, in MiB, and what it found; a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", _CASE, str(root), engine, "UNIQUE_NEEDLE"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    measured = json.loads(result.stdout)
    assert measured["total"] == 1 or measured["skipped"] == {"line_too_long": 1}, measured
    found = "the match" if measured["total"] else "the file skipped (`line_too_long`)"
    return float(measured["after"] - measured["before"]) / (1 << 20), found


def section(workdir: Path) -> list[str]:
    """The table of peak memory growth per search."""
    rows = [
        "## Peak memory of long searches",
        "",
        "A fresh process each, on fs-local; growth of the peak resident set during one "
        f"`grep` (ripgrep's own process not counted), in MiB. Target: under {TARGET_MIB} MiB.",
        "",
        "| search | engine | found | peak growth | target | met |",
        "|---|---|---|---|---|---|",
    ]
    cases: tuple[tuple[str, str, Callable[[Path], None]], ...] = (
        ("200,000 files", "files", partial(many_files, count=200_000)),
        ("one 1 GiB file of short lines", "gigabyte", partial(one_file, size=1 << 30, line=64)),
        ("one 500 MiB line", "line", partial(one_file, size=500 << 20, line=500 << 20)),
    )
    for title, name, make in cases:
        root = workdir / f"search-memory-{name}"
        make(root)
        for engine in ("ripgrep", "walk"):
            if engine == "walk" and name == "gigabyte":
                continue  # ctxfs's own walk reads a 1 GiB file at Python speed: minutes
            mib, found = growth(root, engine)
            met = "yes" if mib < TARGET_MIB else "**missed**"
            rows.append(
                f"| {title} | {engine} | {found} | {mib:.1f} MiB | < {TARGET_MIB} MiB | {met} |"
            )
    rows.append("")
    return rows


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ctxfs-search-memory-") as name:
        print("\n".join(section(Path(name))))
