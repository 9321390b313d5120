"""Disk full, file-size limits, read-only file systems and permissions, on the real kernel.

Each fault leaves the original file intact, no temporary file behind, and a
typed error. Mount-based cases run in a private mount namespace (``unshare``);
permission cases run as an unprivileged user (a forked child drops to
``nobody`` when the suite runs as root), because root ignores mode bits.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxfs.core import ABSENT, Context, Fs, FsError
from ctxfs.local import LocalBackend
from ctxfs.local import writes as local_writes

pytestmark = pytest.mark.slow

SCENARIO = textwrap.dedent(
    """
    import json, os, sys, anyio
    from ctxfs.core import Fs, FsError
    from ctxfs.local import LocalBackend

    root, state, size = sys.argv[1], sys.argv[2], int(sys.argv[3])

    async def main():
        fs = Fs(LocalBackend(root, state_dir=state), load_entrypoints=False)
        ctx = fs.context(owner="agent")
        await ctx.fs.read("f.txt")
        try:
            await ctx.fs.write("f.txt", "new line\\n" * (size // 9))
            result = {"code": None}
        except FsError as error:
            result = {"code": error.code.value, "retryable": error.retryable, "hint": error.hint}
        result["names"] = sorted(os.listdir(root))
        result["content"] = open(os.path.join(root, "f.txt")).read()
        print(json.dumps(result))

    anyio.run(main)
    """
)
ORIGINAL = "original line\n" * 100


def run_scenario(
    root: Path,
    state: Path,
    size: int,
    *,
    prefix: list[str] | None = None,
    preexec: Callable[[], object] | None = None,
) -> dict[str, object]:
    command = [*(prefix or []), sys.executable, "-c", SCENARIO, str(root), str(state), str(size)]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parents[2],
        preexec_fn=preexec,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def in_private_mount(root: Path, setup: str) -> list[str]:
    """Run under a fresh mount namespace where *root* is a small tmpfs prepared by *setup*."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("unshare (util-linux) is needed for the mount-based fault tests")
    as_root = [] if os.geteuid() == 0 else ["--map-root-user"]
    script = f'mount -t tmpfs -o size=256k tmpfs {root} && {setup} && exec "$@"'
    return [unshare, "--mount", *as_root, "sh", "-c", script, "sh"]


def test_disk_full_leaves_the_original_and_no_temp(tmp_path: Path) -> None:
    root, state = tmp_path / "root", tmp_path / "state"
    root.mkdir()
    setup = f"printf '{ORIGINAL}' > {root}/f.txt"
    report = run_scenario(root, state, 400_000, prefix=in_private_mount(root, setup))
    assert report["code"] == "unavailable"
    assert report["retryable"] is False
    assert "full" in str(report["hint"])
    assert report["names"] == ["f.txt"]
    assert report["content"] == ORIGINAL


def test_read_only_file_system_is_a_typed_refusal(tmp_path: Path) -> None:
    root, state = tmp_path / "root", tmp_path / "state"
    root.mkdir()
    setup = f"printf '{ORIGINAL}' > {root}/f.txt && mount -o remount,ro {root}"
    report = run_scenario(root, state, 1000, prefix=in_private_mount(root, setup))
    assert report["code"] == "permission_denied"
    assert "read-only" in str(report["hint"])
    assert report["names"] == ["f.txt"]
    assert report["content"] == ORIGINAL


def test_file_size_limit_is_too_large(tmp_path: Path) -> None:
    root, state = tmp_path / "root", tmp_path / "state"
    root.mkdir()
    (root / "f.txt").write_text(ORIGINAL)

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    report = run_scenario(root, state, 10_000, preexec=limit_file_size)
    assert report["code"] == "too_large"
    assert report["names"] == ["f.txt"]
    assert report["content"] == ORIGINAL


@pytest.fixture
def world_readable_tmp() -> Iterator[Path]:
    """A directory an unprivileged user can reach (pytest's own tmp is private to us)."""
    path = Path(tempfile.mkdtemp(prefix="ctxfs-perm-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


NOBODY = 65534


def test_permission_cases_as_an_unprivileged_user(world_readable_tmp: Path) -> None:
    root, state = world_readable_tmp / "root", world_readable_tmp / "state"
    (root / "locked").mkdir(parents=True)
    (root / "secret.txt").write_text("root only\n")
    (root / "secret.txt").chmod(0o600)
    (root / "shared.txt").write_text("readable, not writable\n")
    (root / "locked").chmod(0o555)
    (root / "unsearchable").mkdir()  # names may be listed, not looked up (no x)
    (root / "unsearchable" / "f.txt").write_text("x\n")
    (root / "unsearchable").chmod(0o444)
    (root / "mine").mkdir()  # the user's own directory, and in it its own read-only file
    (root / "mine" / "read-only.txt").write_text("mine, not to change\n")
    (root / "mine" / "read-only.txt").chmod(0o444)
    privileged = os.geteuid() == 0
    if privileged:
        state.mkdir()
        os.chown(state, NOBODY, NOBODY)
        for path in (root, root / "locked", root / "secret.txt", root / "shared.txt"):
            os.chown(path, 0, 0)
        for path in (root / "mine", root / "mine" / "read-only.txt"):
            os.chown(path, NOBODY, NOBODY)
    else:  # already unprivileged: the tree must just not be ours to write
        root.chmod(0o555)

    codes = _as_nobody(root, state) if privileged else anyio.run(_attempts, root, state)
    assert codes == {
        "read secret": "permission_denied",
        "write shared": "permission_denied",
        "create in locked dir": "permission_denied",
        "read shared": None,
        "edit own read-only": "permission_denied",  # (a rename could replace it: not allowed)
        "list unsearchable dir": "permission_denied",
        "list a page of it": "permission_denied",
    }
    (root / "unsearchable").chmod(0o755)
    assert (root / "shared.txt").read_text() == "readable, not writable\n"
    assert (root / "mine" / "read-only.txt").read_text() == "mine, not to change\n"
    assert sorted(os.listdir(root)) == [
        "locked",
        "mine",
        "secret.txt",
        "shared.txt",
        "unsearchable",
    ]
    assert os.listdir(root / "mine") == ["read-only.txt"]
    assert os.listdir(root / "locked") == []


async def _attempts(root: Path, state: Path) -> dict[str, str | None]:
    fs = Fs(LocalBackend(root, state_dir=state), load_entrypoints=False)
    ctx = fs.context(owner="nobody")
    codes: dict[str, str | None] = {}
    for label, attempt in (
        ("read secret", lambda: ctx.fs.read("secret.txt")),
        ("read shared", lambda: ctx.fs.read("shared.txt")),
        ("write shared", lambda: ctx.fs.write("shared.txt", "overwritten\n")),
        ("create in locked dir", lambda: ctx.fs.write("locked/new.txt", "x\n")),
        ("edit own read-only", lambda: _read_then_edit(ctx, "mine/read-only.txt")),
        ("list unsearchable dir", lambda: ctx.fs.list("unsearchable")),
        ("list a page of it", lambda: ctx.fs.list_page("unsearchable", first=1, count=10)),
    ):
        try:
            await attempt()
            codes[label] = None
        except FsError as error:
            codes[label] = error.code.value
    await fs.aclose()
    return codes


async def _read_then_edit(ctx: Context, path: str, old: str = "not", new: str = "now") -> None:
    await ctx.fs.read(path)
    await ctx.fs.edit(path, old, new)


def _as_nobody(root: Path, state: Path) -> dict[str, str | None]:
    """Run :func:`_attempts` in a forked child that has dropped to uid/gid ``nobody``.

    The same calls run once here first, as root on a scratch copy: the child
    cannot import anything from an interpreter installed under ``/root``.
    """
    scratch = Path(tempfile.mkdtemp())
    try:
        shutil.copytree(root, scratch / "root")
        anyio.run(_attempts, scratch / "root", scratch / "state")
    finally:
        shutil.rmtree(scratch)
    codes: dict[str, str | None] = _in_child_as_nobody(lambda: anyio.run(_attempts, root, state))
    return codes


def _in_child_as_nobody(work: Callable[[], object], *, groups: tuple[int, ...] = ()) -> Any:
    """What *work* returns (through JSON), run in a forked child as ``nobody`` (and *groups*)."""
    reader, writer = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() beside threads
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        status = 1
        try:
            os.close(reader)
            os.setgroups(list(groups))
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(writer, json.dumps(work()).encode())
            status = 0
        except BaseException:
            os.write(writer, traceback.format_exc().encode())
        finally:
            os._exit(status)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, data
    return json.loads(data)


TEAM, STRANGERS = 2000, 3000


def test_a_change_by_another_user_keeps_the_files_group_where_it_is_the_users(
    world_readable_tmp: Path,
) -> None:
    # the new file is made in the writer's own group: a member of the file's gives it that
    if os.geteuid() != 0:
        pytest.skip("a user of two groups is made by root")
    root, state = world_readable_tmp / "root", world_readable_tmp / "state"
    for directory in (root, state):
        directory.mkdir()
        os.chown(directory, NOBODY, NOBODY)
    for name, group in (("team.txt", TEAM), ("strangers.txt", STRANGERS)):
        (root / name).write_text("one\n")
        os.chown(root / name, NOBODY, group)
        (root / name).chmod(0o660)
    shutil.copytree(root, world_readable_tmp / "warm")  # edited here first: what it imports
    anyio.run(_edit_files, world_readable_tmp / "warm", world_readable_tmp / "warm-state")
    codes = _in_child_as_nobody(lambda: anyio.run(_edit_files, root, state), groups=(TEAM,))
    assert codes == [None, None]  # a group not the user's is not kept, and that is no error
    assert [(root / name).read_text() for name in ("team.txt", "strangers.txt")] == ["two\n"] * 2
    assert (root / "team.txt").stat().st_gid == TEAM
    assert (root / "strangers.txt").stat().st_gid == NOBODY


async def _edit_files(root: Path, state: Path) -> list[str | None]:
    """Read and edit team.txt and strangers.txt under *root*; the codes of the edits."""
    codes: list[str | None] = []
    async with Fs(LocalBackend(root, state_dir=state), load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        for name in ("team.txt", "strangers.txt"):
            try:
                await _read_then_edit(ctx, name, "one", "two")
                codes.append(None)
            except FsError as error:
                codes.append(error.code.value)
    return codes


CREATE = textwrap.dedent(
    """
    import json, os, sys, anyio
    from ctxfs.core import Fs, FsError
    from ctxfs.local import LocalBackend

    root, state, path = sys.argv[1], sys.argv[2], sys.argv[3]

    async def main():
        fs = Fs(LocalBackend(root, state_dir=state), load_entrypoints=False)
        try:
            await fs.context(owner="agent").fs.write(path, "x" * 10_000)
            code = None
        except FsError as error:
            code = error.code.value
        print(json.dumps({"code": code, "tree": sorted(
            os.path.relpath(os.path.join(top, name), root)
            for top, dirs, files in os.walk(root) for name in dirs + files
        )}))

    anyio.run(main)
    """
)


def test_a_failed_create_removes_the_directories_it_made(tmp_path: Path) -> None:
    root, state = tmp_path / "root", tmp_path / "state"
    (root / "a").mkdir(parents=True)

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    for path in ("a/b/c/new.txt", "x/y/new.txt"):
        result = subprocess.run(
            [sys.executable, "-c", CREATE, str(root), str(state), path],
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=limit_file_size,
        )
        report = json.loads(result.stdout)
        assert report == {"code": "too_large", "tree": ["a"]}, path


@pytest.mark.anyio
async def test_a_create_whose_new_directory_a_failed_create_removed_makes_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worst interleaving, made certain: between opening n/ and writing its temporary
    # file there, another writer's failed create removes n/ (it had made it, and it is empty).
    root = tmp_path / "root"
    root.mkdir()
    real_write_temp = local_writes._write_temp
    removed: list[bool] = []

    def rival_removes_the_directory(dir_fd: int, *args: Any, **kwargs: Any) -> str:
        if not removed:
            os.rmdir(root / "n")
            removed.append(True)
        return real_write_temp(dir_fd, *args, **kwargs)

    monkeypatch.setattr(local_writes, "_write_temp", rival_removes_the_directory)
    backend = LocalBackend(root, state_dir=tmp_path / "state")
    await backend.write("n/b.txt", b"x", expect=ABSENT)
    assert removed
    assert (root / "n" / "b.txt").read_bytes() == b"x"
