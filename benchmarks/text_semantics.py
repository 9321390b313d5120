"""Read windows and edits through ``ctx.fs`` on the memory backend, against hand-written code.

The baselines hold the same bytes in a dict and do the same work the obvious
way: for a read, hash the file, count its lines, cut the window and number it;
for an edit, check the match is unique, splice, hash and store under a lock.
Neither side touches a disk, so the ratios show what the ctx.fs seam and the
text layer cost (hooks, locks, encoding detection, line-ending care).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

import anyio
import xxhash

from benchmarks.harness import Case
from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.core.text import format_line_number

GROUP = "Text semantics on the memory backend (the seam's own cost; no targets)"
_BLOCK = 1 << 20
_LINE = "{n:08d} the quick brown fox jumps over the lazy dog ✓\n"


def text_of_size(size: int) -> bytes:
    """Lines of text adding up to about *size* bytes."""
    block = "".join(_LINE.format(n=n) for n in range(20000)).encode()
    if size <= len(block):
        return block[: block.rfind(b"\n", 0, size) + 1]
    return block * (size // len(block))


def numbered(text: str, offset: int) -> str:
    """Prefix each line with its number, as tools show a read window."""
    return "".join(
        format_line_number(number) + line
        for number, line in enumerate(text.splitlines(keepends=True), start=offset)
    )


class Baseline:
    """The hand-written comparison: bytes in a dict, the obvious algorithms."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, str]] = {}
        self.lock = anyio.Lock()

    def put(self, path: str, data: bytes) -> None:
        """Store a file with its version."""
        self.files[path] = (data, xxhash.xxh3_128_hexdigest(data))

    async def read(self, path: str, offset: int, limit: int) -> tuple[str, int, str]:
        """Return the numbered window, the total line count and the version."""
        data = self.files[path][0]
        version = xxhash.xxh3_128_hexdigest(data)
        total = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        start, skipped = 0, 0
        while True:  # skip whole blocks by counting, then walk to the first line
            in_block = data.count(b"\n", start, start + _BLOCK)
            if skipped + in_block >= offset - 1:
                break
            skipped, start = skipped + in_block, start + _BLOCK
        for _ in range(offset - 1 - skipped):
            start = data.index(b"\n", start) + 1
        end = start
        for _ in range(limit):
            found = data.find(b"\n", end)
            if found == -1:
                end = len(data)
                break
            end = found + 1
        return numbered(data[start:end].decode(), offset), total, version

    async def edit(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of *old*, store, return the new version."""
        async with self.lock:
            data = self.files[path][0]
            old_bytes, new_bytes = old.encode(), new.encode()
            if data.count(old_bytes) != 1:
                raise ValueError("not exactly one match")
            at = data.find(old_bytes)
            self.put(path, data[:at] + new_bytes + data[at + len(old_bytes) :])
            return self.files[path][1]


async def cases() -> list[Case]:
    """The text-semantics cases at 10 KB and 100 MB."""
    backend = MemoryBackend()
    ctx = Fs(backend, load_entrypoints=False).context(owner="bench")
    baseline = Baseline()
    built: list[Case] = []
    for label, size, offset in (("10 KB", 10_000, 1), ("100 MB", 100 << 20, 1_000_000)):
        data = text_of_size(size)
        middle = data.count(b"\n") // 2
        marker = _LINE.format(n=middle % 20000).encode()
        unique = b"UNIQUE-MARKER-A " + marker
        at = data.find(marker, len(data) // 2)
        data = data[:at] + unique + data[at + len(marker) :]
        path = f"file-{label.replace(' ', '')}.txt"
        await backend.write(path, data, expect=ABSENT)
        baseline.put(path, data)
        await ctx.fs.read(path, limit=1)
        calls = 50 if size < _BLOCK else 1

        async def ours_read(path: str = path, offset: int = offset) -> str:
            outcome = await ctx.fs.read(path, offset=offset, limit=2000)
            return numbered(outcome.text, outcome.offset)

        async def base_read(path: str = path, offset: int = offset) -> object:
            return await baseline.read(path, offset, 2000)

        target = None  # information: the baseline here does no I/O at all
        built += [
            Case(group=GROUP, name=f"read 2,000-line window, {label}", ours=ours_read,
                 baseline=base_read, target=target, calls=calls),
            Case(group=GROUP, name=f"edit one line, {label}",
                 ours=toggle(partial(ctx.fs.edit, path)),
                 baseline=toggle(partial(baseline.edit, path)),
                 target=target, calls=calls),
        ]  # fmt: skip
    return built


def toggle(edit: Callable[[str, str], Awaitable[object]]) -> Callable[[], Awaitable[object]]:
    """Edit the marker back and forth, so every call changes the file and sizes stay put."""
    state = {"current": "UNIQUE-MARKER-A", "other": "UNIQUE-MARKER-B"}

    async def run() -> object:
        old, new = state["current"], state["other"]
        state["current"], state["other"] = new, old
        return await edit(old, new)

    return run
