"""flock locks: private, bounded, cancellable, fork-safe."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import anyio
import pytest

from ctxfs.core import Busy, Fs, InvalidArgument, Unavailable
from ctxfs.local import LocalBackend, flocks

pytestmark = pytest.mark.anyio

PROBE = textwrap.dedent(
    """
    import sys, anyio
    from ctxfs.local import LocalBackend

    async def main():
        backend = LocalBackend(sys.argv[1], state_dir=sys.argv[2])
        try:
            async with backend.lock("key", timeout=0.3):
                print("acquired")
        except TimeoutError:
            print("busy")

    anyio.run(main)
    """
)


def probe(root: Path, state: Path) -> str:
    """Whether another process can take the lock of "key" right now."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(root), str(state)],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "root").mkdir()
    return tmp_path / "root", tmp_path / "state"


async def test_lock_files_live_in_the_private_state_dir(workspace: tuple[Path, Path]) -> None:
    root, state = workspace
    async with LocalBackend(root, state_dir=state) as backend:
        async with backend.lock("a.txt", timeout=1):
            pass
        name = backend.locks.file_name("mutation", "a.txt")
    assert (state / "locks" / name).is_file(), "never unlinked"
    assert oct((state / "locks").stat().st_mode & 0o777) == "0o700"
    assert list(root.iterdir()) == []


async def test_a_closed_backend_takes_no_lock_through_a_recycled_descriptor(
    workspace: tuple[Path, Path], tmp_path: Path
) -> None:
    root, state = workspace
    backend = LocalBackend(root, state_dir=state)
    number = backend.locks.fd
    await backend.aclose()
    elsewhere = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    if elsewhere != number:  # the freed number now names another directory
        os.dup2(elsewhere, number)
        os.close(elsewhere)
    try:
        with pytest.raises(Unavailable, match="closed"):
            async with backend.lock("a.txt", timeout=1):
                pass  # pragma: no cover - never entered
    finally:
        os.close(number)
    assert sorted(os.listdir(tmp_path)) == ["root", "state"]
    await backend.aclose()  # (again: nothing more to close)


async def test_a_cancelled_wait_leaves_nothing_acquired(workspace: tuple[Path, Path]) -> None:
    root, state = workspace
    async with LocalBackend(root, state_dir=state) as backend:
        async with backend.lock("key", timeout=1):
            with anyio.move_on_after(0.1) as scope:
                async with backend.lock("key", timeout=10):
                    pytest.fail("acquired a held lock")  # pragma: no cover
            assert scope.cancelled_caught
        with anyio.fail_after(1):
            async with backend.lock("key", timeout=0.5):
                pass
    assert not flocks._HELD, "no descriptor is left open"


async def test_waits_are_bounded(workspace: tuple[Path, Path]) -> None:
    root, state = workspace
    async with LocalBackend(root, state_dir=state) as backend, backend.lock("key", timeout=1):
        started = anyio.current_time()
        with pytest.raises(Busy) as caught:
            async with backend.lock("key", timeout=0.3):
                pass  # pragma: no cover
        assert 0.25 < anyio.current_time() - started < 2
        assert caught.value.retryable


async def test_busy_names_the_path_as_spelled_not_the_hosts(workspace: tuple[Path, Path]) -> None:
    root, state = workspace
    (root / "d").mkdir()
    (root / "d" / "a.txt").write_text("one\n")
    fs = Fs(LocalBackend(root, state_dir=state), load_entrypoints=False, lock_timeout=0.2)
    async with fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.read("d/a.txt")
        key = (await fs.backend.locate("d/a.txt")).key
        assert key.startswith("/")  # the kernel's path on this host
        for hold in (fs.file_context.locks.hold(key, timeout=1), fs.backend.lock(key, timeout=1)):
            assert hold is not None
            async with hold:
                with pytest.raises(Busy) as caught:
                    await ctx.fs.edit("./d/a.txt", "one", "two")
            assert caught.value.path == "d/a.txt"  # (normalized, relative to the root)
            assert str(root) not in str(caught.value)


@pytest.mark.slow
def test_a_forked_child_neither_keeps_nor_releases_the_parents_lock(
    workspace: tuple[Path, Path],
) -> None:
    root, state = workspace

    async def scenario() -> None:
        backend = LocalBackend(root, state_dir=state)
        async with backend.lock("key", timeout=1):
            assert probe(root, state) == "busy"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # fork() beside threads
                pid = os.fork()
            if pid == 0:  # pragma: no cover - the child exits at once
                os._exit(0)
            os.waitpid(pid, 0)  # noqa: ASYNC222 - the child has already exited
            assert probe(root, state) == "busy", "the child's exit released the parent's lock"
        assert probe(root, state) == "acquired", "the parent's release is complete"
        await backend.aclose()

    anyio.run(scenario)


@pytest.mark.parametrize("inside", [True, False])
def test_the_state_dir_must_be_private_and_outside_the_root(tmp_path: Path, inside: bool) -> None:
    root = tmp_path / "root"
    root.mkdir()
    if inside:
        state = root / ".state"
    else:
        state = tmp_path / "shared"
        (state / "locks").mkdir(parents=True)
        (state / "locks").chmod(0o777)
    with pytest.raises(InvalidArgument):
        LocalBackend(root, state_dir=state)
    if inside:
        assert not state.exists()


MOVER = textwrap.dedent(
    """
    import asyncio, sys
    from ctxfs.core import Fs, FsError
    from ctxfs.local import LocalBackend

    async def main(root, state, who):
        async with Fs(LocalBackend(root, state_dir=state), load_entrypoints=False,
                      lock_timeout=5.0) as fs:
            ctx = fs.context(owner=who)
            for turn in range(4):
                try:
                    await ctx.fs.move(f"{who}{turn % 2}", f"{who}{(turn + 1) % 2}")
                except FsError as error:
                    print(error.code.value)
                    return
        print("ok")

    asyncio.run(main(*sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_directory_moves_in_two_processes_never_wait_on_each_other(
    workspace: tuple[Path, Path],
) -> None:
    # Two unrelated trees of 400 files: their locks meet in shared lock files (hashed), which
    # each move takes in one order (the backend's lock_order): neither ends `busy`.
    root, state = workspace
    for who in ("a", "b"):
        (root / f"{who}0").mkdir()
        for number in range(400):
            (root / f"{who}0" / f"f{number}.txt").write_text("x\n")
    command = [sys.executable, "-c", MOVER, str(root), str(state)]
    movers = [subprocess.Popen([*command, who], stdout=subprocess.PIPE, text=True) for who in "ab"]
    said = [mover.communicate(timeout=120)[0].strip() for mover in movers]
    assert said == ["ok", "ok"]
    assert sorted(p.name for p in root.iterdir()) == ["a0", "b0"]
