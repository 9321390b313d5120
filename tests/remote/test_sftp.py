"""SFTP's cooperative protocol, against the real OpenSSH server on this machine.

The server's files live on this host, so the tests reach behind the protocol
the way someone with a shell on the server would: leaving a crashed writer's
lock, planting a symbolic link, checking modes.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import asyncssh
import pytest
from tests.remote.conftest import UrlFor
from tests.remote.servers import SFTP

from ctxfs.core import ABSENT, Busy, ErrorCode, Fs, FsError, Stale, open_backend, open_fs

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(url_for: UrlFor) -> tuple[str, Path]:
    """A fresh SFTP root: its URL and where it lies on this machine."""
    url = url_for(SFTP)
    return url, Path(urlsplit(url).path)


def sftp(url: str, **extra: Any) -> Any:
    return open_backend(url, **(SFTP.options | extra))


def lease(path: Path, *, owner: str, expires: float) -> None:
    path.write_text(json.dumps({"owner": owner, "expires": expires}))


async def test_a_crashed_writers_lock_is_broken_once_its_lease_ends(
    root: tuple[str, Path],
) -> None:
    url, local = root
    async with sftp(url, lease_timeout=0.3) as backend:
        version = await backend.write("a.txt", b"one", expect=ABSENT)
        lock = local / ".ctxfs-lock.a.txt"
        lease(lock, owner="crashed-host:1:x", expires=time.time() + 60)
        with pytest.raises(Busy) as busy:
            await backend.write("a.txt", b"two", expect=version)
        assert busy.value.retryable is True
        assert (await backend.read("a.txt")).data == b"one"
        lease(lock, owner="crashed-host:1:x", expires=time.time() - 1)
        await backend.write("a.txt", b"two", expect=version)
        assert (await backend.read("a.txt")).data == b"two"
    assert sorted(p.name for p in local.iterdir()) == ["a.txt"]  # no lock, temp or broken lease


async def test_open_fs_gives_the_lease_wait_to_the_backend_and_the_lock_wait_to_fs(
    root: tuple[str, Path],
) -> None:
    url, _ = root
    async with open_fs(url, **SFTP.options, lease_timeout=2.5, lock_timeout=4.0) as fs:
        assert fs.backend.leases.timeout == 2.5  # type: ignore[attr-defined]
        assert fs.file_context.lock_timeout == 4.0


@pytest.mark.parametrize(
    "held", [{"owner": "x"}, {"owner": "x", "expires": 1e18}, {"owner": "x", "expires": "soon"}]
)
async def test_a_damaged_or_foreign_lock_is_broken(root: tuple[str, Path], held: object) -> None:
    url, local = root
    async with sftp(url, lease_timeout=5) as backend:
        version = await backend.write("a.txt", b"one", expect=ABSENT)
        (local / ".ctxfs-lock.a.txt").write_text(json.dumps(held))
        await backend.write("a.txt", b"two", expect=version)
        assert (await backend.read("a.txt")).data == b"two"


async def test_symbolic_links_out_of_the_root_are_refused(
    root: tuple[str, Path], tmp_path: Path
) -> None:
    url, local = root
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    async with sftp(url) as backend:
        await backend.mkdir("")
        (local / "escape").symlink_to(outside)
        (local / "inside").symlink_to(local / "real", target_is_directory=True)
        (local / "real").mkdir()
        for attempt in (
            backend.read("escape/secret.txt"),
            backend.write("escape/new.txt", b"x", expect=ABSENT),
            backend.list("escape"),
            backend.write("escape/deeper/new.txt", b"x", expect=ABSENT),
        ):
            with pytest.raises(FsError) as refused:
                await attempt
            assert refused.value.code is ErrorCode.OUTSIDE_ROOT
        assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
        await backend.write("inside/ok.txt", b"fine", expect=ABSENT)  # a link within the root
        assert (local / "real" / "ok.txt").read_bytes() == b"fine"
        kinds = {entry.name: entry.kind.value for entry in await backend.list("")}
        assert kinds == {"escape": "symlink", "inside": "symlink", "real": "directory"}


async def test_a_link_inside_the_root_is_never_replaced_or_removed(root: tuple[str, Path]) -> None:
    url, local = root
    async with sftp(url) as backend:
        version = await backend.write("target.txt", b"alpha", expect=ABSENT)
        (local / "link.txt").symlink_to("target.txt")
        (local / "dangling.txt").symlink_to("nowhere.txt")
        for attempt in (
            backend.write("link.txt", b"beta", expect=version),
            backend.delete("link.txt", expect=version),
            backend.write("dangling.txt", b"x", expect=ABSENT),
        ):
            with pytest.raises(FsError) as refused:
                await attempt
            assert refused.value.code is ErrorCode.NOT_A_REGULAR_FILE
            assert "symbolic link" in refused.value.message
    assert (local / "link.txt").is_symlink()
    assert (local / "dangling.txt").is_symlink()
    assert (local / "target.txt").read_bytes() == b"alpha"


async def test_an_update_keeps_the_files_mode_and_leaves_nothing_behind(
    root: tuple[str, Path],
) -> None:
    url, local = root
    async with sftp(url) as backend:
        version = await backend.write("run.sh", b"echo one\n", expect=ABSENT)
        os.chmod(local / "run.sh", 0o751)
        version = (await backend.read("run.sh")).version
        await backend.write("run.sh", b"echo two\n", expect=version)
    assert (local / "run.sh").stat().st_mode & 0o777 == 0o751
    assert (local / "run.sh").read_bytes() == b"echo two\n"
    assert sorted(p.name for p in local.iterdir()) == ["run.sh"]


async def test_a_write_removes_what_an_attempt_of_it_left_before_its_connection_was_lost(
    root: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, local = root
    async with sftp(url) as backend:
        version = await backend.write("a.txt", b"one", expect=ABSENT)
        monkeypatch.setattr(backend.leases, "token", lambda: "host:1:one-write")
        stem = f".ctxfs-tmp.{hashlib.sha256(b'host:1:one-write').hexdigest()[:24]}."
        (local / f"{stem}cut").write_bytes(b"half of an attempt whose connection was lost")
        still_held, cuts = backend.leases.still_held, [asyncssh.ConnectionLost("cut")]

        async def cut_once(*args: Any) -> None:
            if cuts:
                raise cuts.pop()
            await still_held(*args)

        monkeypatch.setattr(backend.leases, "still_held", cut_once)
        await backend.write("a.txt", b"two", expect=version)  # (retried: the second attempt)
    assert not cuts
    assert sorted(p.name for p in local.iterdir()) == ["a.txt"]
    assert (local / "a.txt").read_bytes() == b"two"


async def test_an_update_drops_setuid_and_setgid(root: tuple[str, Path]) -> None:
    url, local = root
    async with sftp(url) as backend:
        await backend.write("tool", b"#!/bin/sh\n", expect=ABSENT)
        os.chown(local / "tool", 65534, 65534)
        os.chmod(local / "tool", 0o6755)  # (a setuid program of nobody's)
        version = (await backend.read("tool")).version
        await backend.write("tool", b"#!/bin/sh\nid\n", expect=version)  # by the login: root
    assert stat.S_IMODE((local / "tool").stat().st_mode) == 0o755


async def test_a_move_a_delete_and_their_undos_keep_the_files_mode(root: tuple[str, Path]) -> None:
    # SFTP moves by copy and delete: the copy takes the mode the file had (into a directory
    # the move makes too), and so does the file an undo puts back.
    url, local = root
    async with Fs(sftp(url), load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.write("run.sh", "echo one\n")
        os.chmod(local / "run.sh", 0o751)
        await ctx.fs.read("run.sh")
        await ctx.fs.move("run.sh", "bin/run.sh")
        assert (local / "bin" / "run.sh").stat().st_mode & 0o777 == 0o751
        await ctx.fs.undo()
        assert (local / "run.sh").stat().st_mode & 0o777 == 0o751
        await ctx.fs.delete("run.sh")
        await ctx.fs.undo()
    assert (local / "run.sh").stat().st_mode & 0o777 == 0o751
    assert (local / "run.sh").read_bytes() == b"echo one\n"


async def test_a_writer_outside_the_protocol_is_still_caught_by_the_version(
    root: tuple[str, Path],
) -> None:
    url, local = root
    async with sftp(url) as backend:
        version = await backend.write("a.txt", b"one", expect=ABSENT)
        (local / "a.txt").write_bytes(b"changed in a shell")
        with pytest.raises(FsError) as stale:
            await backend.write("a.txt", b"two", expect=version)
        assert stale.value.code is ErrorCode.STALE
        assert (local / "a.txt").read_bytes() == b"changed in a shell"


@pytest.mark.parametrize("call", ["move", "delete"])
async def test_a_removal_cut_off_then_outrun_by_an_outside_writer_keeps_every_content(
    root: tuple[str, Path], call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The removal lands, its answer is lost, and a shell writes the file again before the
    # retry looks: whether the removal landed cannot be told, so a move keeps its copy.
    url, local = root
    remove = asyncssh.SFTPClient.remove
    cut = [True]

    async def landed_unanswered(self: asyncssh.SFTPClient, path: bytes | str) -> None:
        await remove(self, path)
        if cut and os.fsdecode(path).endswith("/a.txt"):
            cut.clear()
            (local / "a.txt").write_bytes(b"a shell's\n")
            raise asyncssh.ConnectionLost("cut off")

    monkeypatch.setattr(asyncssh.SFTPClient, "remove", landed_unanswered)
    async with sftp(url) as backend:
        ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
        await ctx.fs.write("a.txt", "one\n")
        with pytest.raises(FsError) as caught:
            await (ctx.fs.move("a.txt", "b.txt") if call == "move" else ctx.fs.delete("a.txt"))
    assert not cut  # the removal was cut off
    if call == "move":
        assert caught.value.code is ErrorCode.BACKEND_ERROR
        assert "b.txt keeps the content read" in caught.value.message
        assert (local / "b.txt").read_bytes() == b"one\n"
    else:
        assert caught.value.code is ErrorCode.UNAVAILABLE
        assert caught.value.retryable is False
    assert (local / "a.txt").read_bytes() == b"a shell's\n"


async def test_an_update_refuses_a_fifo_instead_of_hanging_on_it(root: tuple[str, Path]) -> None:
    url, local = root
    async with sftp(url) as backend:
        await backend.mkdir("")
        os.mkfifo(local / "pipe")
        with anyio.fail_after(20):
            for attempt in (_update(backend, "pipe"), backend.write("pipe", b"x", expect=None)):
                with pytest.raises(FsError) as refused:
                    await attempt
                assert refused.value.code is ErrorCode.NOT_A_REGULAR_FILE
    assert sorted(p.name for p in local.iterdir()) == ["pipe"]  # no lock or temp left


async def test_a_lock_left_without_a_lease_is_broken_once_it_is_older_than_one(
    root: tuple[str, Path],
) -> None:
    url, local = root
    async with sftp(url, lease=2.0, lease_timeout=0.3) as backend:
        version = await backend.write("a.txt", b"one", expect=ABSENT)
        lock = local / ".ctxfs-lock.a.txt"
        lock.write_bytes(b"")  # a writer crashed between creating its lock and filling it
        with pytest.raises(Busy):
            await backend.write("a.txt", b"two", expect=version)
        os.utime(lock, (time.time() - 10, time.time() - 10))
        await backend.write("a.txt", b"two", expect=version)
    assert (local / "a.txt").read_bytes() == b"two"
    assert not lock.exists()


async def test_an_update_whose_lease_nearly_ran_out_writes_nothing(
    root: tuple[str, Path],
) -> None:
    url, local = root
    async with sftp(url, lease=0.9) as backend:
        await backend.write("a.txt", b"one", expect=ABSENT)
        async with backend.open_update("a.txt") as update:
            await anyio.sleep(0.7)  # a third of the lease is no longer left
            with pytest.raises(Stale, match="ran out before the change was written"):
                await update.write(b"two")
    assert (local / "a.txt").read_bytes() == b"one"
    assert sorted(p.name for p in local.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("through", ["write", "update"])
async def test_an_upload_that_outlasts_its_lease_publishes_nothing(
    root: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, through: str
) -> None:
    # A's upload stalls past its lease; B breaks the lock and writes from the same base. A must
    # then hear stale and leave B's bytes: both succeeding would lose B's update.
    url, local = root
    uploading, stalled = anyio.Event(), asyncssh.SFTPClientFile.fsync

    async def slow_fsync(handle: asyncssh.SFTPClientFile) -> None:
        if not uploading.is_set():
            uploading.set()
            await anyio.sleep(1.5)
        await stalled(handle)

    async with sftp(url, lease=1.0) as a, sftp(url, lease=1.0, lease_timeout=10) as b:
        base = await a.write("a.txt", b"base", expect=ABSENT)
        monkeypatch.setattr(asyncssh.SFTPClientFile, "fsync", slow_fsync)
        outcomes: dict[str, object] = {}

        async def write_a() -> None:
            try:
                if through == "write":
                    await a.write("a.txt", b"from A", expect=base)
                else:
                    async with a.open_update("a.txt") as update:
                        await update.write(b"from A")
                outcomes["A"] = "written"
            except Stale as refused:
                outcomes["A"] = refused

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write_a)
            await uploading.wait()
            await b.write("a.txt", b"from B", expect=base)  # waits for A's lease to end
    assert isinstance(outcomes["A"], Stale), outcomes
    assert "ran out before the change was written" in str(outcomes["A"])
    assert (local / "a.txt").read_bytes() == b"from B"
    assert sorted(p.name for p in local.iterdir()) == ["a.txt"]


async def test_a_name_that_is_not_utf8_is_listed_read_and_changed_as_on_fs_local(
    root: tuple[str, Path],
) -> None:
    url, local = root
    bad_name = os.path.join(os.fsencode(local), b"bad\xff.txt")
    async with sftp(url) as backend:
        await backend.write("ok.txt", b"ok", expect=ABSENT)
        with open(bad_name, "wb") as bad:
            bad.write(b"no")
        listed = sorted(entry.path for entry in await backend.list(""))
        assert listed == ["bad\udcff.txt", "ok.txt"]
        assert (await backend.read("bad\udcff.txt")).data == b"no"
        async with backend.open_update("bad\udcff.txt") as update:
            await update.write(b"yes")
        with open(bad_name, "rb") as bad:
            assert bad.read() == b"yes"
        await backend.write("new\udcfe.txt", b"made", expect=ABSENT)
        await backend.delete("bad\udcff.txt")
    assert sorted(os.listdir(os.fsencode(local))) == [b"new\xfe.txt", b"ok.txt"]


async def test_a_name_of_255_bytes_is_written_under_a_lock_named_by_its_hash(
    root: tuple[str, Path],
) -> None:
    url, local = root
    name = "n" * 255
    async with sftp(url) as backend:
        version = await backend.write(name, b"one", expect=ABSENT)
        async with backend.open_update(name) as update:
            locks = [p.name for p in local.iterdir() if p.name.startswith(".ctxfs-lock.")]
            assert locks == [f".ctxfs-lock.sha256.{hashlib.sha256(name.encode()).hexdigest()}"]
            await update.write(b"two")
        assert (await backend.read(name)).version != version
    assert sorted(p.name for p in local.iterdir()) == [name]


async def _update(backend: Any, path: str) -> None:
    async with backend.open_update(path):
        pass  # pragma: no cover - refused on entry


@pytest.mark.slow
async def test_two_writers_through_a_linked_directory_share_one_lock(
    root: tuple[str, Path],
) -> None:
    from tests.local.test_one_file_many_paths import count_up  # noqa: PLC0415

    from ctxfs.core import Fs  # noqa: PLC0415

    url, local = root
    async with sftp(url) as one, sftp(url) as two:  # two writers: only the lock files between them
        await one.mkdir("d")
        (local / "d" / "c.txt").write_text("0\n")
        (local / "dl").symlink_to("d")
        assert (await one.locate("dl/c.txt")).key == (await two.locate("d/c.txt")).key
        retried: list[int] = []

        async def run(backend: Any, path: str) -> None:
            ctx = Fs(backend, load_entrypoints=False).context(owner=path)
            retried.append(await count_up(ctx, path, cycles=30))

        async with anyio.create_task_group() as group:
            group.start_soon(run, one, "d/c.txt")
            group.start_soon(run, two, "dl/c.txt")
    assert (local / "d" / "c.txt").read_text() == "60\n"
    assert sum(retried) > 0, "the two writers never actually raced"
    assert sorted(p.name for p in (local / "d").iterdir()) == ["c.txt"]


async def test_the_tools_work_at_the_root(root: tuple[str, Path]) -> None:
    """Every operation locates its path; the root's own parent lies outside the root."""
    from ctxfs.core import Fs  # noqa: PLC0415
    from ctxfs.tools import FsToolset  # noqa: PLC0415

    url, local = root
    local.mkdir(parents=True, exist_ok=True)
    (local / "a.txt").write_text("needle\n")
    async with Fs(sftp(url), load_entrypoints=False) as fs:
        tools, ctx = FsToolset(), fs.context(owner="a")
        for name, arguments in (
            ("list_dir", {}),
            ("glob", {"pattern": "*"}),
            ("grep", {"pattern": "needle"}),
        ):
            result = await tools.execute(ctx, name, arguments)
            assert result.error_code is None, (name, result.text)
            assert "a.txt" in result.text


@pytest.mark.parametrize("path", ["/", ""])
async def test_a_root_of_slash_reaches_the_servers_files(root: tuple[str, Path], path: str) -> None:
    # The server's whole tree: paths below "/" are inside it (no "//" prefix to match).
    url, local = root
    local.mkdir(parents=True, exist_ok=True)
    (local / "a.txt").write_text("one\n")
    parts = urlsplit(url)
    relative = f"{parts.path.lstrip('/')}/a.txt"
    async with Fs(sftp(f"{parts.scheme}://{parts.netloc}{path}"), load_entrypoints=False) as fs:
        ctx = fs.context(owner="a")
        assert (await ctx.fs.read(relative)).text == "one\n"
        await ctx.fs.edit(relative, "one", "two")
        assert [entry.path for entry in await ctx.fs.list(relative.rpartition("/")[0])] == [
            relative
        ]
    assert (local / "a.txt").read_text() == "two\n"


async def test_options_asyncssh_does_not_take_are_refused_at_open(
    root: tuple[str, Path],
) -> None:
    # Else the first call failed with asyncssh's TypeError, as a bug to report.
    with pytest.raises(FsError) as refused:
        sftp(root[0], probe=False)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
    assert "takes no option 'probe'" in refused.value.message


@pytest.mark.parametrize(
    ("options", "code"),
    [({"known_hosts": os.devnull}, ErrorCode.PERMISSION_DENIED),
     ({"client_keys": ["/nonexistent/client_key"]}, ErrorCode.INVALID_ARGUMENT)],
    ids=["host key not trusted", "key file missing"],
)  # fmt: skip
async def test_a_connection_that_cannot_succeed_is_not_retried_as_unavailable(
    root: tuple[str, Path], options: dict[str, Any], code: ErrorCode
) -> None:
    with pytest.raises(FsError) as refused:
        async with Fs(sftp(root[0], **options), load_entrypoints=False) as fs:
            await fs.context(owner="a").fs.stat("")
    assert refused.value.code is code, refused.value
    assert not refused.value.retryable
