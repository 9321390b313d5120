"""No update is lost: 8 workers × 100 read-edit cycles end at exactly 800.

Each worker is its own owner: it reads the counter, edits it to the next value
and, when told ``stale`` (or ``busy``), reads again. Workers are processes, then
threads, then anyio tasks, all through the public ``ctx.fs`` API on one file.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import anyio
import pytest

from ctxfs.core import Busy, Context, Fs, Stale
from ctxfs.local import LocalBackend

pytestmark = pytest.mark.slow

WORKERS, CYCLES = 8, 100


async def count_up(ctx: Context, cycles: int) -> int:
    """Increment the counter *cycles* times; return how many conflicts were retried."""
    retried = 0
    for _ in range(cycles):
        while True:
            current = (await ctx.fs.read("counter.txt")).text
            try:
                await ctx.fs.edit("counter.txt", current, f"{int(current) + 1}\n")
            except (Stale, Busy):
                retried += 1
                continue
            break
    return retried


WORKER = textwrap.dedent(
    """
    import sys, anyio
    from ctxfs.core import Fs
    from ctxfs.local import LocalBackend
    from tests.local.test_lost_updates import count_up

    async def main():
        fs = Fs(LocalBackend(sys.argv[1], state_dir=sys.argv[2]), load_entrypoints=False)
        print(await count_up(fs.context(owner=sys.argv[3]), int(sys.argv[4])))

    anyio.run(main)
    """
)


@pytest.fixture(params=["disk", "tmpfs"])
def counter(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path]:
    """The counter's root, on disk or on tmpfs (where edits write on the event loop)."""
    on_disk = request.param == "disk"
    root: Path = tmp_path / "root" if on_disk else request.getfixturevalue("memory_path")
    root.mkdir(exist_ok=True)
    (root / "counter.txt").write_text("0\n")
    return root, tmp_path / "state"


def final_count(root: Path) -> int:
    return int((root / "counter.txt").read_text())


def test_processes(counter: tuple[Path, Path]) -> None:
    root, state = counter
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), str(state), f"p{n}", str(CYCLES)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parents[2],
        )
        for n in range(WORKERS)
    ]
    retried = 0
    for worker in workers:
        out, _ = worker.communicate(timeout=300)
        assert worker.returncode == 0
        retried += int(out)
    assert final_count(root) == WORKERS * CYCLES
    assert retried > 0, "the workers never collided: the test proved nothing"


def test_threads_sharing_one_fs(counter: tuple[Path, Path]) -> None:
    root, state = counter
    fs = Fs(LocalBackend(root, state_dir=state), load_entrypoints=False)
    retried: list[int] = []

    def worker(owner: str) -> None:
        retried.append(anyio.run(count_up, fs.context(owner=owner), CYCLES))

    threads = [threading.Thread(target=worker, args=(f"t{n}",)) for n in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(retried) == WORKERS
    assert final_count(root) == WORKERS * CYCLES


@pytest.mark.anyio
async def test_tasks_sharing_one_fs(counter: tuple[Path, Path]) -> None:
    root, state = counter
    fs = Fs(LocalBackend(root, state_dir=state), load_entrypoints=False)
    async with fs, anyio.create_task_group() as group:
        for n in range(WORKERS):
            group.start_soon(count_up, fs.context(owner=f"task{n}"), CYCLES)
    assert final_count(root) == WORKERS * CYCLES
