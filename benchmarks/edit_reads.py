"""One edit reads the file once: fs-local's update against the protocol it replaced.

Before, ``ctx.fs.edit`` read the file (and hashed it) for the observation
check, and the backend's conditional write read and hashed it again under its
CAS lock before publishing; the new data was hashed a third time. Now
:meth:`LocalBackend.open_update` reads and hashes the file once, under the CAS
lock, and the write checks only that the entry is still the file read. The
"before" side is the same backend with the template's default update
(:class:`~ctxfs.core.ConditionalUpdate`), which is that old protocol exactly;
both sides edit real files in the same temporary directory, in one run.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Final

from benchmarks.harness import Case, Timed, describe
from benchmarks.text_semantics import text_of_size, toggle
from ctxfs.core import Backend, Context, Fs
from ctxfs.local import LocalBackend

GROUP: Final = "One edit reads the file once (fs-local): after, against before this change"
_SIZES: Final = (("10 KB", 10_000), ("100 MB", 100 << 20))


class ReadThenConditionalWrite(LocalBackend):
    """fs-local as it was: an update reads the file, then the write reads and hashes it again."""

    _open_update = Backend._open_update


async def _cpu_seconds(edit: Timed, *, calls: int, batches: int = 15) -> list[float]:
    """The process's CPU time per call of *edit*, one sample per batch."""
    samples = []
    for _ in range(batches):
        started = time.process_time()
        for _ in range(calls):
            await edit()
        samples.append((time.process_time() - started) / calls)
    return samples


def bytes_read() -> int:
    """Bytes this process has read through read-like system calls so far."""
    with Path("/proc/self/io").open() as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


async def cases(workdir: Path) -> tuple[list[Case], list[str]]:
    """The timed cases, and a table of how much of the file one edit reads."""
    contexts: dict[str, Context] = {}
    for side, backend_class in (("after", LocalBackend), ("before", ReadThenConditionalWrite)):
        root = workdir / f"edit-reads-{side}"
        root.mkdir()
        backend = backend_class(root, state_dir=workdir / f"edit-reads-state-{side}")
        contexts[side] = Fs(backend, load_entrypoints=False).context(owner="bench")
    timed: list[Case] = []
    rows = [
        "## What one edit reads, and the CPU it spends (fs-local)",
        "",
        "Bytes read by the process during one edit (`rchar` in `/proc/self/io`), as multiples "
        "of the file's size (target: one read of the file), and the process's CPU time per "
        "edit (the median of 15 batches; the two fsyncs both sides wait for take no CPU).",
        "",
        "| file | read, before | read, after | target | met | CPU, before | CPU, after |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, size in _SIZES:
        data = text_of_size(size)
        at = data.find(b"\n", len(data) // 2) + 1
        data = data[:at] + b"UNIQUE-MARKER-A\n" + data[at:]
        name = f"edit-{label.replace(' ', '')}.txt"
        edits = {}
        for side, ctx in contexts.items():
            (workdir / f"edit-reads-{side}" / name).write_bytes(data)
            await ctx.fs.read(name, limit=1)
            edits[side] = toggle(partial(ctx.fs.edit, name))
        read, cpu = {}, {}
        small = size < 1 << 20
        for side, edit in edits.items():
            before = bytes_read()
            await edit()
            read[side] = (bytes_read() - before) / len(data)
            cpu[side] = describe(await _cpu_seconds(edit, calls=20 if small else 1))
        met = "yes" if read["after"] < 1.5 else "**missed**"
        rows.append(
            f"| {label} | {read['before']:.2f}× | {read['after']:.2f}× | 1× | {met} "
            f"| {cpu['before']} | {cpu['after']} |"
        )
        timed.append(
            Case(
                group=GROUP,
                name=f"edit one line, {label}",
                ours=edits["after"],
                baseline=edits["before"],
                target=None if small else 1.0,
                calls=20 if small else 1,
                rounds=31,
                note="the baseline is fs-local before this change: the file read, then read "
                "and hashed again by the conditional write"
                + (
                    "; two fsyncs, which both sides wait for, are nearly all of a small "
                    "edit's time, so the one read saved shows in the CPU time (below), not here"
                    if small
                    else ""
                ),
            )
        )
    return timed, [*rows, ""]
