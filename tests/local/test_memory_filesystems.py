"""On a filesystem kept in memory a small change runs on the event loop; elsewhere in a thread."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from anyio.to_thread import run_sync

from ctxfs.core import Context, Fs, FsError, Operation, Unavailable, hookimpl
from ctxfs.local import LocalBackend, update
from ctxfs.local.backend import INLINE_READ_MAX
from ctxfs.local.writes import kept_in_memory

pytestmark = pytest.mark.anyio


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The functions fs-local's updates hand to a worker thread, as they are handed."""
    handed: list[object] = []

    async def counted(function: object, *args: object) -> object:
        handed.append(function)
        return await run_sync(function, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(update, "run_sync", counted)
    return handed


def test_kept_in_memory_is_told_by_the_mount_table(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(
        "22 1 0:21 / /dev/shm rw,nosuid shared:2 - tmpfs tmpfs rw\n"
        "23 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n"
        "24 1 0:30 / /mnt/with\\040space rw - ramfs none rw\n"
        "25 1 0:2 / /proc rw - proc proc rw\n"
    )
    mounts = str(table)
    assert kept_in_memory(os.makedev(0, 21), mounts=mounts)
    assert kept_in_memory(os.makedev(0, 30), mounts=mounts)
    assert not kept_in_memory(os.makedev(259, 1), mounts=mounts)
    assert not kept_in_memory(os.makedev(0, 2), mounts=mounts)  # not 0:21's prefix
    assert not kept_in_memory(os.makedev(8, 1), mounts=mounts)  # in no mount
    assert not kept_in_memory(os.makedev(0, 21), mounts=str(tmp_path / "missing"))


@pytest.mark.parametrize(
    ("size", "inline_reads", "in_a_thread"),
    [(10_000, True, False), (INLINE_READ_MAX + 1, True, True), (10_000, False, True)],
    ids=["small", "large", "inline-reads-off"],
)
async def test_where_a_change_on_tmpfs_runs(
    memory_path: Path, threads: list[object], size: int, inline_reads: bool, in_a_thread: bool
) -> None:
    file = memory_path / "f.txt"
    file.write_bytes(b"x" * (size - 7) + b"MARKER\n")
    file.chmod(0o640)
    fs = Fs(LocalBackend(memory_path, inline_reads=inline_reads), load_entrypoints=False)
    ctx = fs.context(owner="agent")
    await ctx.fs.read("f.txt", limit=1)
    await ctx.fs.edit("f.txt", "MARKER", "EDITED")
    assert bool(threads) is in_a_thread
    assert file.read_bytes() == b"x" * (size - 7) + b"EDITED\n"
    assert stat.S_IMODE(file.stat().st_mode) == 0o640
    assert os.listdir(memory_path) == ["f.txt"]  # no temporary file left
    await fs.aclose()


async def test_a_change_on_disk_runs_in_a_thread(tmp_path: Path, threads: list[object]) -> None:
    if kept_in_memory(os.stat(tmp_path).st_dev):
        pytest.skip("the temporary directory is on tmpfs here")
    (tmp_path / "f.txt").write_bytes(b"MARKER\n")
    fs = Fs(LocalBackend(tmp_path), load_entrypoints=False)
    ctx = fs.context(owner="agent")
    await ctx.fs.read("f.txt")
    await ctx.fs.edit("f.txt", "MARKER", "EDITED")
    assert len(threads) == 1
    assert (tmp_path / "f.txt").read_bytes() == b"EDITED\n"
    await ctx.fs.write("new.txt", "made\n")  # no directory seen: not on the loop either
    assert len(threads) == 2
    await fs.aclose()


class FailingObserver:
    """Fails every commit: the change is undone."""

    @hookimpl
    async def ctxfs_committed(
        self, ctx: Context, op: Operation, before: object, after: object
    ) -> None:
        raise Unavailable("the audit log is down")


async def test_an_undo_on_tmpfs_runs_in_a_thread(memory_path: Path, threads: list[object]) -> None:
    """An undo checks the file by its content, which may be any size by then: not on the loop."""
    (memory_path / "f.txt").write_bytes(b"MARKER\n")
    plugins = [FailingObserver()]
    fs = Fs(LocalBackend(memory_path), load_entrypoints=False, plugins=plugins)
    ctx = fs.context(owner="agent")
    await ctx.fs.read("f.txt")
    with pytest.raises(FsError):
        await ctx.fs.edit("f.txt", "MARKER", "EDITED")
    assert len(threads) == 1  # the undo; the change itself ran on the loop
    assert (memory_path / "f.txt").read_bytes() == b"MARKER\n"
    await fs.aclose()


@contextmanager
def bound(source: Path, target: Path) -> Iterator[None]:
    """*source* bind-mounted on *target*; the test skips where mounting is not allowed."""
    mounted = subprocess.run(["mount", "--bind", source, target], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", target], check=True)


async def test_a_tmpfs_file_in_a_directory_on_disk_is_changed_in_a_thread(
    memory_path: Path, tmp_path: Path, threads: list[object]
) -> None:
    """Where a change runs follows its directory, where the new file is written and synced."""
    if kept_in_memory(os.stat(tmp_path).st_dev):
        pytest.skip("the temporary directory is on tmpfs here")
    (memory_path / "disk").mkdir()
    (tmp_path / "g.txt").write_bytes(b"on disk\n")
    (memory_path / "g.txt").write_bytes(b"MARKER\n")
    with (
        bound(tmp_path, memory_path / "disk"),
        bound(memory_path / "g.txt", memory_path / "disk" / "g.txt"),
    ):
        fs = Fs(LocalBackend(memory_path), load_entrypoints=False)
        ctx = fs.context(owner="agent")
        await ctx.fs.read("disk/g.txt")
        with pytest.raises(Unavailable):  # the kernel refuses to replace a mount point
            await ctx.fs.edit("disk/g.txt", "MARKER", "EDITED")
        assert threads  # not on the loop: its fsync would wait for the disk
        await fs.aclose()
    assert sorted(os.listdir(tmp_path)) == ["g.txt"]  # no temporary file left
