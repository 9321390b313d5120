"""kill -9 during writes, edits and moves: files are old or new, never torn, never lost.

Temps are hidden from listings and searches, and reaped by listings.

A zygote process imports ctxfs once and forks a writer per trial, so each of the
seeded trials costs milliseconds, not an interpreter start. The test kills the
writer with SIGKILL at a random moment after it has started writing.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from ctxfs.core import Fs
from ctxfs.local import TEMP_PREFIX, LocalBackend
from ctxfs.local.listing import ORPHAN_SECONDS
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset
from tests.tools.conftest import skip_without_ripgrep

pytestmark = pytest.mark.slow

SIZE = 1_000_000
WRITE_CONTENTS = {((letter * 99 + "\n") * (SIZE // 100)).encode() for letter in "AB"}
EDIT_CONTENTS = {
    b"state=" + letter + b"\n" + b"filler line\n" * (SIZE // 12) for letter in (b"A", b"B")
}
MOVED = b"moved around\n" * 1000

ZYGOTE = textwrap.dedent(
    """
    import os, sys
    import anyio
    from ctxfs.core import Fs, FsError, TextOptions
    from ctxfs.local import LocalBackend

    ROOT, STATE, SIZE = sys.argv[1], sys.argv[2], int(sys.argv[3])

    async def writer(mode):
        whole_file = TextOptions(default_limit=SIZE, max_output_chars=4 * SIZE)
        backend = LocalBackend(ROOT, state_dir=STATE)
        fs = Fs(backend, load_entrypoints=False, text_options=whole_file)
        ctx = fs.context(owner=f"writer-{os.getpid()}")
        if mode == "write":
            await ctx.fs.read("written.txt")
            print("ready", flush=True)
            letter = "A"
            while True:
                letter = "B" if letter == "A" else "A"
                await ctx.fs.write("written.txt", (letter * 99 + "\\n") * (SIZE // 100))
        if mode == "move":  # back and forth between two directories
            here, there = "moving/a/file.txt", "moving/b/file.txt"
            if not os.path.exists(os.path.join(ROOT, here)):
                here, there = there, here
            await ctx.fs.read(here, limit=1)
            print("ready", flush=True)
            while True:
                await ctx.fs.move(here, there)  # the mover has observed it there
                here, there = there, here
        first = (await ctx.fs.read("edited.txt", limit=1)).text
        print("ready", flush=True)
        while True:
            other = "state=B\\n" if first == "state=A\\n" else "state=A\\n"
            await ctx.fs.edit("edited.txt", first, other)
            first = other

    print("zygote", flush=True)
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                anyio.run(writer, line.strip())
            except BaseException as error:
                print(f"error {error!r}", flush=True)
            finally:
                os._exit(1)
        print(pid, flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Path, Path, subprocess.Popen[str]]]:
    root, state = tmp_path / "root", tmp_path / "state"
    root.mkdir()
    (root / "written.txt").write_bytes(min(WRITE_CONTENTS))
    (root / "edited.txt").write_bytes(min(EDIT_CONTENTS))
    (root / "moving" / "a").mkdir(parents=True)
    (root / "moving" / "a" / "file.txt").write_bytes(MOVED)
    zygote = subprocess.Popen(
        [sys.executable, "-c", ZYGOTE, str(root), str(state), str(SIZE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert zygote.stdout is not None
    assert zygote.stdout.readline().strip() == "zygote"
    yield root, state, zygote
    assert zygote.stdin is not None
    zygote.stdin.close()
    zygote.wait(timeout=30)
    zygote.stdout.close()


def test_kill_9_never_tears_a_file(workspace: tuple[Path, Path, subprocess.Popen[str]]) -> None:
    root, state, zygote = workspace
    assert zygote.stdin is not None
    assert zygote.stdout is not None
    rng = random.Random(20261129)
    trials = ["write", "edit", "move"] * 30
    for mode in trials:
        zygote.stdin.write(mode + "\n")
        zygote.stdin.flush()
        lines = {zygote.stdout.readline().strip() for _ in range(2)}
        assert "ready" in lines, lines
        (pid,) = (int(line) for line in lines if line.isdigit())
        time.sleep(rng.uniform(0.005, 0.15))
        os.kill(pid, signal.SIGKILL)
        assert zygote.stdout.readline().strip() == "reaped"
        assert (root / "written.txt").read_bytes() in WRITE_CONTENTS
        assert (root / "edited.txt").read_bytes() in EDIT_CONTENTS
        moved = [root / "moving" / side / "file.txt" for side in "ab"]
        assert [path.read_bytes() for path in moved if path.exists()] == [MOVED], "never lost"

    abandoned = time.time() - 2 * ORPHAN_SECONDS  # (the writers killed, and long since)
    for temp in root.rglob(f"{TEMP_PREFIX}*"):
        os.utime(temp, (abandoned, abandoned))

    async def afterwards() -> None:
        fs = Fs(LocalBackend(root, state_dir=state), load_entrypoints=False, lock_timeout=2.0)
        ctx = fs.context(owner="survivor")
        names = [entry.name for entry in await ctx.fs.list()]
        assert names == ["edited.txt", "moving", "written.txt"], "temporary files are hidden"
        assert sorted(os.listdir(root)) == names, "and reaped"
        first = (await ctx.fs.read("edited.txt", limit=1)).text
        await ctx.fs.edit("edited.txt", first, "state=C\n")  # the locks are free again
        await fs.aclose()

    anyio.run(afterwards)


def test_kill_9_while_holding_the_lock_frees_it(tmp_path: Path) -> None:
    root, state = tmp_path / "root", tmp_path / "state"
    root.mkdir()
    holder = textwrap.dedent(
        """
        import sys, time, anyio
        from ctxfs.local import LocalBackend

        async def main():
            backend = LocalBackend(sys.argv[1], state_dir=sys.argv[2])
            async with backend.lock("key", timeout=5):
                print("locked", flush=True)
                time.sleep(60)

        anyio.run(main)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", holder, str(root), str(state)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "locked"

    async def contend() -> float:
        backend = LocalBackend(root, state_dir=state)
        with pytest.raises(TimeoutError):
            async with backend.lock("key", timeout=0.2):
                pass  # pragma: no cover - held by the child
        child.kill()
        child.wait()
        started = anyio.current_time()
        async with backend.lock("key", timeout=1.0):
            waited = anyio.current_time() - started
        await backend.aclose()
        return waited

    try:
        assert anyio.run(contend) < 1.0
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


def test_temps_of_live_writers_are_kept_and_old_ones_reaped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    live = root / f"{TEMP_PREFIX}{os.getpid()}.{'ca' * 8}"
    old = root / f"{TEMP_PREFIX}{os.getpid()}.{'be' * 8}"
    live.write_bytes(b"in progress")
    old.write_bytes(b"abandoned long ago")
    os.utime(old, (time.time() - 7200, time.time() - 7200))

    async def listing() -> list[str]:
        async with LocalBackend(root, state_dir=tmp_path / "state") as backend:
            return [entry.name for entry in await backend.list("")]

    assert anyio.run(listing) == []
    assert live.exists()
    assert not old.exists()


def test_a_fresh_temp_of_a_writer_this_host_cannot_see_is_kept(tmp_path: Path) -> None:
    # its process id names no process here: it may live in another PID namespace (a second
    # container on the volume), writing on; a listing here must not take its file from it
    root = tmp_path / "root"
    root.mkdir()
    writer = 99999999  # beyond any process id here (pid_max is at most 2**22)
    unseen = root / f"{TEMP_PREFIX}{writer}.{'ca' * 8}"
    abandoned = root / f"{TEMP_PREFIX}{writer}.{'be' * 8}"
    for temp in (unseen, abandoned):
        temp.write_bytes(b"in progress")
    long_ago = time.time() - 2 * ORPHAN_SECONDS
    os.utime(abandoned, (long_ago, long_ago))

    async def listing() -> list[str]:
        async with LocalBackend(root, state_dir=tmp_path / "state", temp_max_age=1e9) as backend:
            return [entry.name for entry in await backend.list("")]

    assert anyio.run(listing) == []
    assert unseen.exists()
    assert not abandoned.exists()


def test_list_dir_reaps_temps_and_keeps_no_listing_that_holds_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_bytes(b"alpha\n")
    dead = root / "sub" / f"{TEMP_PREFIX}99999999.{'de' * 8}"  # beyond any process id
    live = root / "sub" / f"{TEMP_PREFIX}{os.getpid()}.{'ca' * 8}"
    abandoned = time.time() - 2 * ORPHAN_SECONDS

    def settled() -> None:  # a listing of the directory may be kept while it is unchanged
        os.utime(root / "sub", (time.time() - 3600, time.time() - 3600))

    async def listings() -> list[list[str]]:
        backend = LocalBackend(root, state_dir=tmp_path / "state")
        async with Fs(backend, load_entrypoints=False) as fs:
            ctx, tools, shown = fs.context(owner="a"), FsToolset(), []

            async def names() -> None:
                listed = await tools.execute(ctx, "list_dir", {"path": "sub"})
                shown.append([entry["name"] for entry in listed.structured["entries"]])

            dead.write_bytes(b"half a write")
            os.utime(dead, (abandoned, abandoned))
            settled()
            await names()
            assert not dead.exists()
            live.write_bytes(b"in progress")
            settled()
            await names()
            assert live.exists()
            backend.temp_max_age = 0.0  # the live writer's temp now counts as too old
            await names()  # the directory has not changed since
            assert not live.exists()
            return shown

    assert anyio.run(listings) == [["a.txt"]] * 3


@pytest.mark.parametrize("engine", ["walk", "ripgrep"])
def test_searches_of_hidden_names_never_show_a_temp(tmp_path: Path, engine: str) -> None:
    if engine == "ripgrep" and find_ripgrep() is None:
        skip_without_ripgrep()
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_bytes(b"needle\n")
    (root / "sub" / f"{TEMP_PREFIX}{os.getpid()}.{'ca' * 8}").write_bytes(b"needle\n")

    async def search() -> tuple[object, ...]:
        backend = LocalBackend(root, state_dir=tmp_path / "state", ripgrep=engine == "ripgrep")
        async with Fs(backend, load_entrypoints=False) as fs:
            ctx, tools = fs.context(owner="a"), FsToolset()
            globbed = await tools.execute(ctx, "glob", {"pattern": "**", "hidden": True})
            grepped = await tools.execute(ctx, "grep", {"pattern": "needle", "hidden": True})
            return globbed.text, grepped.text

    assert anyio.run(search) == (
        "sub/a.txt\n(1 file matches)",
        "sub/a.txt:1: needle\n(1 match in 1 file searched)",
    )


def test_directories_made_for_a_change_are_durable_in_their_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a crash after the call returns must not lose a new directory, nor so what is in it:
    # the directory each new entry was made in is fsync-ed, one level after the other
    root = tmp_path / "root"
    root.mkdir()
    (root / "f.txt").write_bytes(b"f\n")
    synced: list[int] = []  # the inodes fsync-ed
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    def inodes(*directories: str) -> set[int]:
        return {(root / directory).stat().st_ino for directory in directories}

    async def changes() -> list[set[int]]:
        backend = LocalBackend(root, state_dir=tmp_path / "state")
        async with Fs(backend, load_entrypoints=False) as fs:
            ctx, steps = fs.context(owner="a"), []
            await ctx.fs.read("f.txt")
            for change in (
                lambda: ctx.fs.write("n1/n2/new.txt", "new\n"),
                lambda: ctx.fs.mkdir("m1/m2"),
                lambda: ctx.fs.move("f.txt", "p1/p2/f.txt"),
            ):
                synced.clear()
                await change()
                steps.append(set(synced))
            return steps

    written, made, moved = anyio.run(changes)
    assert inodes("", "n1", "n1/n2") <= written
    assert inodes("", "m1") <= made
    assert inodes("", "p1", "p1/p2") <= moved
