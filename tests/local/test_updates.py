"""An update on fs-local reads the file once, under the CAS lock, and still sees other writers."""

from __future__ import annotations

import errno
import os
import stat
import struct
import time
import tracemalloc
from pathlib import Path

import pytest

from ctxfs.core import FilePatch, Fs, Hunk, InvalidArgument, PatchAction, Stale
from ctxfs.core.sessions import MemorySessions
from ctxfs.local import LocalBackend, writes, xattrs
from tests.local.conftest import Layout, MakeFs

pytestmark = pytest.mark.anyio

SIZE = 4 << 20


def bytes_read() -> int:
    """Bytes this process has read through read-like system calls so far."""
    with Path("/proc/self/io").open() as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


@pytest.mark.parametrize("inline_reads", [True, False])
async def test_an_edit_reads_the_file_once(
    make_fs: MakeFs, layout: Layout, inline_reads: bool
) -> None:
    lines = b"".join(b"line %07d of the file\n" % n for n in range(SIZE // 23))
    (layout.root / "big.txt").write_bytes(lines + b"MARKER\n")
    ctx = make_fs(inline_reads=inline_reads).context(owner="agent")
    await ctx.fs.read("big.txt", limit=1)
    size = (layout.root / "big.txt").stat().st_size
    before = bytes_read()
    await ctx.fs.edit("big.txt", "MARKER", "CHANGED")
    read = bytes_read() - before
    assert size <= read < 1.5 * size  # once; reading it again to compare would make it 2x
    assert (layout.root / "big.txt").read_bytes().endswith(b"CHANGED\n")


@pytest.mark.parametrize("change", ["in place, same size", "in place, longer", "replaced"])
async def test_a_writer_bypassing_ctxfs_during_an_update_is_caught(
    layout: Layout, change: str
) -> None:
    target = layout.root / "a.txt"
    async with LocalBackend(layout.root, state_dir=layout.state) as backend:
        async with backend.open_update("a.txt") as update:
            assert update.current is not None
            time.sleep(0.05)  # past the file system's timestamp granularity
            if change == "replaced":
                (layout.root / "other").write_bytes(b"alpha\n")
                os.replace(layout.root / "other", target)
            else:
                with target.open("r+b") as handle:
                    handle.write(b"ALPHA\n" if change.endswith("same size") else b"ALPHA!!\n")
            outside = target.read_bytes()
            with pytest.raises(Stale):
                await update.write(b"mine\n")
            with pytest.raises(Stale):
                await update.delete()
        assert target.read_bytes() == outside


async def test_a_writer_bypassing_ctxfs_during_the_read_itself_is_caught(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxfs.local import reads as local_reads  # noqa: PLC0415

    target = layout.root / "a.txt"
    real = local_reads._read_all

    def read_while_someone_writes(fd: int, size: int) -> bytes:
        data = real(fd, size)
        time.sleep(0.05)  # past the file system's timestamp granularity
        with target.open("r+b") as handle:
            handle.write(b"ALPHA\n")  # in place, the same size: only the times change
        return data

    monkeypatch.setattr(local_reads, "_read_all", read_while_someone_writes)
    async with LocalBackend(layout.root, state_dir=layout.state) as backend:
        with pytest.raises(Stale, match="changed while it was read"):
            async with backend.open_update("a.txt"):
                pass  # pragma: no cover - never entered
    assert target.read_bytes() == b"ALPHA\n"


async def test_a_patch_that_moves_and_changes_a_script_keeps_its_mode(
    make_fs: MakeFs, layout: Layout
) -> None:
    for name in ("run.sh", "kept.sh"):
        (layout.root / name).write_bytes(b"#!/bin/sh\necho hi\n")
        (layout.root / name).chmod(0o751)
    ctx = make_fs().context(owner="agent")
    changed = Hunk(old=("echo hi",), new=("echo hello",))
    for name, move_to in (("run.sh", "bin/run.sh"), ("kept.sh", None)):
        await ctx.fs.read(name)
        patch = FilePatch(action=PatchAction.UPDATE, path=name, hunks=(changed,), move_to=move_to)
        await ctx.fs.apply_patch([patch])
    for name in ("bin/run.sh", "kept.sh"):
        assert (layout.root / name).read_bytes() == b"#!/bin/sh\necho hello\n"
        assert (layout.root / name).stat().st_mode & 0o777 == 0o751


@pytest.mark.parametrize("outer_first", [True, False], ids=["n, then n/y", "n/y, then n"])
async def test_a_patch_adding_a_file_and_one_inside_it_is_refused_and_leaves_nothing(
    outer_first: bool, make_fs: MakeFs, layout: Layout
) -> None:
    # Written side by side, each would wait for the other's lock, and a directory was left.
    ctx = make_fs().context(owner="agent")
    parts = [
        FilePatch(action=PatchAction.ADD, path="n", content="1\n"),
        FilePatch(action=PatchAction.ADD, path="n/y", content="2\n"),
    ]
    before = sorted(os.listdir(layout.root))
    with pytest.raises(InvalidArgument, match="a file cannot be a directory too") as caught:
        await ctx.fs.apply_patch(parts if outer_first else parts[::-1])
    assert caught.value.path == "n"
    assert sorted(os.listdir(layout.root)) == before


def _acl(*entries: tuple[int, int, int]) -> bytes:
    """A ``system.posix_acl_access`` value: (tag, permissions, id) entries, as the kernel keeps."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


ANYONE = 0xFFFFFFFF
NOBODY_DENIED = _acl(  # owner rw, user nobody nothing, group r, mask r, others r
    (0x01, 6, ANYONE), (0x02, 0, 65534), (0x04, 4, ANYONE), (0x10, 4, ANYONE), (0x20, 4, ANYONE)
)


async def test_a_changed_file_keeps_its_access_list_and_user_attributes(
    make_fs: MakeFs, layout: Layout
) -> None:
    # a rewrite publishes a new inode: without its ACL, nobody (denied by it) could read it
    target = layout.root / "a.txt"
    target.chmod(0o644)
    try:
        os.setxattr(target, "system.posix_acl_access", NOBODY_DENIED)
        os.setxattr(target, "user.note", b"keep me")
    except OSError as error:
        if error.errno != errno.ENOTSUP:
            raise
        pytest.skip(f"{layout.root} keeps no ACLs or user attributes")
    ctx = make_fs().context(owner="agent")
    await ctx.fs.read("a.txt")
    await ctx.fs.edit("a.txt", "alpha", "beta")
    await ctx.fs.write("a.txt", "gamma\n")
    assert target.read_bytes() == b"gamma\n"
    assert os.getxattr(target, "system.posix_acl_access") == NOBODY_DENIED
    assert os.getxattr(target, "user.note") == b"keep me"
    assert target.stat().st_mode & 0o777 == 0o644


async def test_an_undone_edit_keeps_the_access_list_set_before_the_content(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = layout.root / "a.txt"
    target.chmod(0o644)
    try:
        os.setxattr(target, "system.posix_acl_access", NOBODY_DENIED)
    except OSError as error:
        if error.errno != errno.ENOTSUP:
            raise
        pytest.skip(f"{layout.root} keeps no ACLs")
    when_copied: list[tuple[int, int]] = []  # the temporary file's (mode, size) as it gets them
    copy = xattrs.copy_xattrs

    def watched(source: int, fd: int) -> None:
        info = os.fstat(fd)
        when_copied.append((stat.S_IMODE(info.st_mode), info.st_size))
        copy(source, fd)

    monkeypatch.setattr(writes, "copy_xattrs", watched)  # (where writes finds it)
    backend = LocalBackend(layout.root, state_dir=layout.state)
    async with Fs(backend, load_entrypoints=False, sessions="memory://") as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.read("a.txt")
        await ctx.fs.edit("a.txt", "alpha", "beta")
        await ctx.fs.undo()  # (a file put back over the edited one, with its mode given)
    assert os.getxattr(target, "system.posix_acl_access") == NOBODY_DENIED
    assert when_copied == [(0o600, 0), (0o600, 0)]  # private and empty: the content comes last


async def test_a_changed_program_loses_its_capabilities_as_it_loses_setuid(
    make_fs: MakeFs, layout: Layout
) -> None:
    target = layout.root / "run.sh"
    target.write_bytes(b"#!/bin/sh\necho hi\n")
    target.chmod(0o4755)
    capabilities = struct.pack("<5I", 0x02000000, 1 << 10, 0, 0, 0)  # cap_net_bind_service
    try:
        os.setxattr(target, "security.capability", capabilities)
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP):
            raise
        pytest.skip("file capabilities cannot be set here")
    ctx = make_fs().context(owner="agent")
    await ctx.fs.read("run.sh")
    await ctx.fs.edit("run.sh", "hi", "hello")
    assert "security.capability" not in os.listxattr(target)
    assert target.stat().st_mode & 0o7777 == 0o755


BIG = 16 << 20
"""A file larger than the session memory below keeps (1 MiB)."""


@pytest.mark.parametrize("change", ["delete", "move"])
async def test_a_delete_or_move_of_a_file_too_large_to_keep_never_holds_its_content(
    layout: Layout, change: str
) -> None:
    # they need its version alone: it is hashed as read, a chunk at a time
    (layout.root / "big.log").write_bytes(b"a line of the log\n" * (BIG // 18))
    backend = LocalBackend(layout.root, state_dir=layout.state)
    sessions = MemorySessions(max_bytes_per_owner=1 << 20)
    async with Fs(backend, load_entrypoints=False, sessions=sessions) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.read("big.log", limit=1)
        tracemalloc.start()
        try:
            if change == "delete":
                await ctx.fs.delete("big.log")
            else:
                await ctx.fs.move("big.log", "old/big.log")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < BIG // 4  # (its content alone would be 4x that)
    assert not (layout.root / "big.log").exists()
    assert (layout.root / "old").exists() is (change == "move")


async def test_a_file_read_for_its_version_alone_is_put_back_whole_from_the_open_file(
    layout: Layout,
) -> None:
    # an undo (a change the observation store failed to record) needs the content after all
    kept = b"a line of the log\n" * 1000
    replaced = b"the file the move replaced\n" * 1000
    for name, data in (("gone.log", kept), ("moved.log", kept), ("there.log", replaced)):
        (layout.root / name).write_bytes(data)
    async with LocalBackend(layout.root, state_dir=layout.state) as backend:
        async with backend.open_update("gone.log", content_max=0) as update:
            assert update.current is not None
            assert not update.current.whole  # its version and size alone
            await update.delete()
            assert not (layout.root / "gone.log").exists()
            await update.undo(None)
        async with (
            backend.open_update("moved.log", content_max=0) as here,
            backend.open_update("there.log", content_max=0) as there,
        ):
            written = await here.move(there)
            assert (layout.root / "there.log").read_bytes() == kept
            await here.undo_move(written)
    assert (layout.root / "gone.log").read_bytes() == kept
    assert (layout.root / "moved.log").read_bytes() == kept
    assert (layout.root / "there.log").read_bytes() == replaced
