"""Contention: 8 processes × 100 guarded edits on fs-local, on one file and on 8 files.

Each process has its own ``Fs`` and makes its edits through ``ctx.fs.read`` and
``ctx.fs.edit``, reading again after every ``stale``. The report gives the
throughput, the stale edits retried and the lost updates (the counters' final
sum against the edits made), which must be 0.

``python -m benchmarks.contention URL OPTIONS_JSON OWNER COUNT FILES GO`` is one
worker, on any store (the fs-remote tests run it against every server too): it
opens the store and prints ``ready``, waits for the file GO to exist, makes
COUNT increments over the counters ``counter-0.txt`` .. ``counter-<FILES-1>.txt``
and prints how many edits were stale. :func:`start` and :func:`finish` run a
group of them, with the start gun fired once every one is ready.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Final

import anyio

from ctxfs.core import Stale, open_fs

PROCESSES: Final = 8
EDITS: Final = 100
ROOT: Final = Path(__file__).resolve().parents[1]
_WORKER: Final = (sys.executable, "-m", "benchmarks.contention")


async def work(
    url: str, options: dict[str, Any], owner: str, *, count: int, files: int, go: Path
) -> int:
    """Make *count* increments over *files* counters; return how many edits were stale."""
    stale = 0
    async with open_fs(url, load_entrypoints=False, **options) as fs:
        ctx = fs.context(owner=owner)
        print("ready", flush=True)
        while not go.exists():  # a barrier across processes
            await anyio.sleep(0.002)
        for index in range(count):
            name = f"counter-{index % files}.txt"
            while True:
                current = (await ctx.fs.read(name)).text
                try:
                    await ctx.fs.edit(name, current, f"{int(current) + 1}\n")
                except Stale:
                    stale += 1
                    continue
                break
    return stale


def start(
    url: str, options: dict[str, Any], owners: list[str], *, count: int, files: int, go: Path
) -> list[subprocess.Popen[str]]:
    """Start one worker per owner; return once every one has its store open."""
    workers = [
        subprocess.Popen(
            [*_WORKER, url, json.dumps(options), owner, str(count), str(files), str(go)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for owner in owners
    ]
    for worker in workers:
        assert worker.stdout is not None
        if worker.stdout.readline() != "ready\n":
            _, err = worker.communicate(timeout=60)
            raise RuntimeError(f"a contention worker did not start: {err.strip()[-2000:]}")
    return workers


def finish(workers: list[subprocess.Popen[str]]) -> int:
    """Wait for every worker; return how many edits were stale in all."""
    stale = 0
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        if worker.returncode:
            raise RuntimeError(f"a contention worker failed: {err.strip()[-2000:]}")
        stale += int(out)
    return stale


def run(workdir: Path, files: int) -> dict[str, float]:
    """Run the processes on *files* counters; return the measurements."""
    root = workdir / f"contention-{files}"
    root.mkdir()
    for index in range(files):
        (root / f"counter-{index}.txt").write_text("0\n")
    go = workdir / f"go-{files}"
    owners = [f"p{n}" for n in range(PROCESSES)]
    options = {"state_dir": f"{root}.state"}
    workers = start(str(root), options, owners, count=EDITS, files=files, go=go)
    started = time.perf_counter()
    go.touch()
    stale = finish(workers)
    elapsed = time.perf_counter() - started
    total = sum(int((root / f"counter-{i}.txt").read_text()) for i in range(files))
    return {
        "edits": PROCESSES * EDITS,
        "seconds": elapsed,
        "stale": stale,
        "lost": PROCESSES * EDITS - total,
    }


def section(workdir: Path) -> list[str]:
    """The contention table."""
    rows = [
        f"## Contention: {PROCESSES} processes × {EDITS} guarded edits (fs-local)",
        "",
        "Each process has its own `Fs`; an edit refused `stale` is read again and retried. "
        "Lost updates must be 0.",
        "",
        "| counters | edits | wall time | edits/s | stale edits retried | lost updates |",
        "|---|---|---|---|---|---|",
    ]
    for files in (1, PROCESSES):
        measured = run(workdir, files)
        rate = measured["edits"] / measured["seconds"]
        lost = int(measured["lost"])
        rows.append(
            f"| {files} | {int(measured['edits'])} | {measured['seconds']:.2f} s | {rate:.0f} "
            f"| {int(measured['stale'])} | {lost}{'' if lost == 0 else ' **(lost!)**'} |"
        )
        print(f"contention on {files} file(s): {rate:.0f} edits/s, lost {lost}", file=sys.stderr)
    return [*rows, ""]


if __name__ == "__main__":
    url, options, owner, count, files, go = sys.argv[1:7]
    worker = partial(work, count=int(count), files=int(files), go=Path(go))
    print(anyio.run(worker, url, json.loads(options), owner))
