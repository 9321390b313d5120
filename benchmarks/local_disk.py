"""Read windows and edits through ``ctx.fs`` on fs-local, against hand-written async code.

The baseline is what a careful developer would write without ctxfs: for a read,
``anyio.Path.read_bytes``, an xxh3 hash, a line count, the window cut and
numbered; for an edit, read, check the match is unique, splice, and write
atomically (temporary file, ``fsync``, rename, ``fsync`` of the directory).
Both sides work on real files in the same temporary directory.
"""

from __future__ import annotations

import os
import tempfile
from functools import partial
from pathlib import Path

import anyio
import xxhash

from benchmarks.harness import Case
from benchmarks.text_semantics import numbered, text_of_size, toggle
from ctxfs.core import Fs
from ctxfs.local import LocalBackend

GROUP = "Local disk (fs-local), the targets of the text-semantics issue"
_BLOCK = 1 << 20


async def baseline_read(path: anyio.Path, offset: int, limit: int) -> tuple[str, int, str]:
    """Hand-written: read the whole file, hash it, count lines, cut and number the window."""
    data = await path.read_bytes()
    version = xxhash.xxh3_128_hexdigest(data)
    total = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    start = 0
    for _ in range(offset - 1):
        start = data.index(b"\n", start) + 1
    end = start
    for _ in range(limit):
        found = data.find(b"\n", end)
        end = len(data) if found == -1 else found + 1
        if found == -1:
            break
    return numbered(data[start:end].decode(), offset), total, version


def _atomic_write(path: Path, data: bytes) -> None:
    descriptor, temp = tempfile.mkstemp(dir=path.parent, prefix=".bench-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, path.stat().st_mode & 0o777)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


async def baseline_edit(path: Path, lock: anyio.Lock, old: str, new: str) -> str:
    """Hand-written: read, check the match is unique, splice, hash, write atomically."""
    async with lock:
        data = await anyio.Path(path).read_bytes()
        old_bytes, new_bytes = old.encode(), new.encode()
        if data.count(old_bytes) != 1:
            raise ValueError("not exactly one match")
        at = data.find(old_bytes)
        result = data[:at] + new_bytes + data[at + len(old_bytes) :]
        await anyio.to_thread.run_sync(_atomic_write, path, result)
        return xxhash.xxh3_128_hexdigest(result)


async def cases(workdir: Path) -> list[Case]:
    """The read and edit cases at 10 KB and 100 MB, on real files under *workdir*."""
    ours_root, base_root = workdir / "ctxfs", workdir / "baseline"
    ours_root.mkdir()
    base_root.mkdir()
    fs = Fs(LocalBackend(ours_root, state_dir=workdir / "state"), load_entrypoints=False)
    ctx = fs.context(owner="bench")
    lock = anyio.Lock()
    built: list[Case] = []
    for label, size, offset in (("10 KB", 10_000, 1), ("100 MB", 100 << 20, 1_000_000)):
        data = text_of_size(size)
        at = data.find(b"\n", len(data) // 2) + 1
        data = data[:at] + b"UNIQUE-MARKER-A\n" + data[at:]
        stem = label.replace(" ", "")
        for name in (f"file-{stem}.txt", f"cold-{stem}.txt"):
            (ours_root / name).write_bytes(data)
            (base_root / name).write_bytes(data)
            await ctx.fs.read(name, limit=1)
        name, cold = f"file-{stem}.txt", f"cold-{stem}.txt"
        calls, rounds = (20, 15) if size < _BLOCK else (1, 9)
        target = 1.5 if size < _BLOCK else 1.2

        async def ours_read(name: str = name, offset: int = offset) -> str:
            outcome = await ctx.fs.read(name, offset=offset, limit=2000)
            return numbered(outcome.text, outcome.offset)

        async def base_read(name: str = name, offset: int = offset) -> object:
            return await baseline_read(anyio.Path(base_root / name), offset, 2000)

        async def cold_edit(old: str, new: str, name: str = cold) -> object:
            fs.known_encodings.clear()  # as if the file had changed outside ctxfs
            return await ctx.fs.edit(name, old, new)

        built += [
            Case(group=GROUP, name=f"read 2,000-line window, {label}", ours=ours_read,
                 baseline=base_read, target=target, calls=calls),
            Case(group=GROUP, name=f"edit one line, {label}",
                 ours=toggle(partial(ctx.fs.edit, name)),
                 baseline=toggle(partial(baseline_edit, base_root / name, lock)),
                 target=target, calls=calls, rounds=rounds),
            Case(group=GROUP, name=f"edit one line, {label}, encoding not yet known",
                 ours=toggle(cold_edit),
                 baseline=toggle(partial(baseline_edit, base_root / cold, lock)),
                 target=None, calls=calls, rounds=rounds,
                 note="the first edit of a version ctxfs has not seen validates the whole "
                      "file's encoding once; later edits reuse the verdict recorded for the "
                      "version they wrote"),
        ]  # fmt: skip
    return built
