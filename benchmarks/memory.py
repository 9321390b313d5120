"""Peak memory of the operations that hold a whole file: write, edit, a search that fails.

Each case runs in a fresh process on fs-local and reports how far its peak
resident set size (``VmHWM``) rose above the resident set at the start of the
operation (interpreter, ctxfs, the open store, and the operation's own input:
the content of a write, the strings of an edit), as a multiple of the file's
size. The peak is reset (``/proc/self/clear_refs``) just before the operation,
so what preparing the input took does not hide what the operation takes. Each
case has its own target: what the operation must hold (the file read, the new
content) and the one copy a conversion may add.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Final

from benchmarks.large_files import text_file

_CASE = textwrap.dedent(
    """
    import gc, json, sys, anyio
    from ctxfs.core import FsError, open_fs

    def peak():  # this process's own high-water mark in bytes
        with open("/proc/self/status") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        return kb * 1024

    def start():  # the high-water mark from now on
        gc.collect()
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return peak()

    async def observed(fs):  # as if every window of old.txt had been read
        async with fs.backend.open_read("old.txt") as stream:  # 1 MiB at a time
            async for _ in stream:
                pass
        key = (await fs.backend.locate("old.txt")).key
        await fs.file_context.observe("rss", key, stream.version, complete=True)

    async def main(root, case, size):
        async with open_fs(root, load_entrypoints=False) as fs:
            ctx = fs.context(owner="rss")
            if case == "write":
                content = "line of text, forty-four characters long.\\n" * (size // 44)
                before = start()
                await ctx.fs.write("new.txt", content)
            elif case.startswith("rewrite"):
                with open(f"{root}/old.txt", "rb") as file:
                    text = file.read().decode("utf-8-sig").replace("\\r\\n", "\\n")
                whole = case.endswith("whole")
                content = text.upper() if whole else text.replace("line", "LINE", 1000)
                del text
                await observed(fs)
                before = start()
                await ctx.fs.write("old.txt", content)
            elif case == "edit":
                await ctx.fs.read("old.txt", limit=1)
                before = start()
                await ctx.fs.edit("old.txt", "UNIQUE-MARKER-A", "UNIQUE-MARKER-B")
            else:
                old = "no such text\\n" * (size // 26)
                await ctx.fs.read("old.txt", limit=1)
                before = start()
                try:
                    await ctx.fs.edit("old.txt", old, "x")
                except FsError as error:
                    assert error.code.value == "no_match", error
            print(json.dumps({"before": before, "after": peak()}))

    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
    """
)

CASES: Final = (
    ("write", "write a new 500 MiB file", 500 << 20, "", 1.1),
    ("rewrite", "write over a 500 MiB file (1,000 lines changed)", 500 << 20, "", 2.1),
    ("rewrite-whole", "write over a 500 MiB file, every line changed", 500 << 20, "", 2.1),
    ("rewrite-whole", "the same, a file with CRLF endings", 500 << 20, "crlf", 3.1),
    ("rewrite-whole", "the same, a file with a byte-order mark", 500 << 20, "bom", 4.1),
    ("edit", "edit one line of a 1 GiB file", 1 << 30, "", 2.1),
    ("search", "edit of a 100 MiB file with a 50 MiB old_string that is not there", 100 << 20,
     "", 2.1),
)  # fmt: skip
"""Case, title, file size, how the file is written (``crlf``, ``bom``), target multiple."""


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
        "operation (the peak reset as it starts), as a multiple of the file's size. A write "
        "holds the file it replaces and the new content; converting line endings or adding a "
        "byte-order mark takes one more copy.",
        "",
        "| operation | file | peak growth | target | met |",
        "|---|---|---|---|---|",
    ]
    for case, title, size, form, target in CASES:
        root = workdir / f"memory-{case}-{form}"
        root.mkdir()
        if case != "write":
            text_file(root / "old.txt", size)
            if form:
                _convert(root / "old.txt", form)
        ratio = growth(root, case, size)
        met = "yes" if ratio <= target else "**missed**"
        rows.append(f"| {title} | {size >> 20} MiB | {ratio:.2f}x | ≤ {target:g}x | {met} |")
        for path in root.iterdir():
            path.unlink()
    rows.append("")
    return rows


def _convert(path: Path, form: str) -> None:
    """Give the text file at *path* CRLF endings (``crlf``) or a UTF-8 byte-order mark (``bom``)."""
    data = path.read_bytes()
    path.write_bytes(data.replace(b"\n", b"\r\n") if form == "crlf" else b"\xef\xbb\xbf" + data)
    del data


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ctxfs-memory-") as name:
        print("\n".join(section(Path(name))))
