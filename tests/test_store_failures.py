"""A mutation records its observation and commits, or changes nothing, whatever the store does.

Every mutating tool runs on the memory backend, fs-local and S3 (moto) while its
observation store fails: a store that fails on cue (down from the start; down
once the checks have passed, while the write runs; failing the commit's
record), a SQLite file locked by another connection or made read-only, and a
real Redis server stopped before the call or once the checks have passed. The
call must fail ``unavailable`` (or ``busy``) with every file as it was; once
the store is back, the same call, retried as an agent would, succeeds.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxfs.core import ABSENT, Backend, Context, ErrorCode, Fs, FsError, hookimpl, open_fs
from ctxfs.core.backend import FileKind
from ctxfs.core.errors import Unavailable
from ctxfs.core.memory import MemoryBackend
from ctxfs.core.observations import ObservationStore, RedisObservations, SqliteObservations
from ctxfs.core.outcomes import Operation
from ctxfs.core.policies import AuditLedger
from ctxfs.core.sessions import MemorySessions
from ctxfs.core.testing import FaultyObservations
from ctxfs.core.versions import Version
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset
from tests.remote.servers import S3

pytestmark = pytest.mark.anyio

NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "c0ffee00", "metadata": {},
         "outputs": [], "source": ["x = 1\n"]},
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}  # fmt: skip
FILES = {
    "a.txt": b"alpha\nbeta\n",
    "b.txt": b"bravo\n",
    "dir/c.txt": b"charlie\n",
    "nb.ipynb": json.dumps(NOTEBOOK, indent=1).encode() + b"\n",
}
PATCH = """*** Begin Patch
*** Add File: new.txt
+fresh
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Delete File: b.txt
*** End Patch"""
MOVING_PATCH = """*** Begin Patch
*** Update File: a.txt
*** Move to: moved.txt
@@
-beta
+BETA
*** End Patch"""


@dataclass(frozen=True, kw_only=True)
class Mutation:
    tool: str
    arguments: dict[str, Any]
    reads: tuple[str, ...] = ()
    """The files the agent reads before the call."""
    stored: bool = True
    """Whether the call records an observation (create_directory records none)."""


MUTATIONS = {
    "write-new": Mutation(tool="write", arguments={"file_path": "new.txt", "content": "new\n"}),
    "write-over": Mutation(
        tool="write", arguments={"file_path": "a.txt", "content": "whole\n"}, reads=("a.txt",)
    ),
    "edit": Mutation(
        tool="edit",
        arguments={"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"},
        reads=("a.txt",),
    ),
    "multi_edit": Mutation(
        tool="multi_edit",
        arguments={
            "file_path": "a.txt",
            "edits": [
                {"old_string": "alpha", "new_string": "A"},
                {"old_string": "beta", "new_string": "B"},
            ],
        },
        reads=("a.txt",),
    ),
    "apply_patch": Mutation(
        tool="apply_patch", arguments={"input": PATCH}, reads=("a.txt", "b.txt")
    ),
    "apply_patch-move": Mutation(
        tool="apply_patch", arguments={"input": MOVING_PATCH}, reads=("a.txt",)
    ),
    "move": Mutation(
        tool="move",
        arguments={"source_path": "a.txt", "destination_path": "dir/a.txt"},
        reads=("a.txt",),
    ),
    "move-directory": Mutation(
        tool="move",
        arguments={"source_path": "dir", "destination_path": "moved"},
        reads=("dir/c.txt",),  # an observation to carry along
    ),
    "delete": Mutation(tool="delete", arguments={"file_path": "b.txt"}, reads=("b.txt",)),
    "create_directory": Mutation(tool="create_directory", arguments={"path": "made"}, stored=False),
    "notebook_edit": Mutation(
        tool="notebook_edit",
        arguments={"file_path": "nb.ipynb", "cell_id": "c0ffee00", "new_source": "x = 2\n"},
        reads=("nb.ipynb",),
    ),
}


class Store:
    """An observation store under test, and the ways it fails."""

    def __init__(self, store: ObservationStore) -> None:
        self.store = store

    def fail_before(self) -> None:
        """Fail from now on."""
        raise NotImplementedError

    def heal(self) -> None:
        """Work again."""
        raise NotImplementedError


class Cued(Store):
    """:class:`FaultyObservations`: down before, down during, or the commit's record refused."""

    def __init__(self, mode: str) -> None:
        self.faulty = FaultyObservations()
        super().__init__(self.faulty)
        self.mode = mode

    def fail_before(self) -> None:
        if self.mode == "after":
            self.faulty.fail_next("update")
        elif self.mode == "before":
            self.faulty.down = True

    def fail_during(self) -> None:
        if self.mode == "during":
            self.faulty.down = True

    def heal(self) -> None:
        self.faulty.down = False


class LockedSqlite(Store):
    """A SQLite file another connection holds (readers still read: write-ahead log)."""

    def __init__(self, path: Path) -> None:
        super().__init__(SqliteObservations(path, timeout=0.2))
        self.holder = sqlite3.connect(path, isolation_level=None)

    def fail_before(self) -> None:
        self.holder.execute("BEGIN IMMEDIATE")

    def heal(self) -> None:
        self.holder.execute("ROLLBACK")


class ReadOnlySqlite(Store):
    """A SQLite file (and its log) made immutable: it reads, and refuses every write."""

    def __init__(self, path: Path) -> None:
        super().__init__(SqliteObservations(path, timeout=0.2))
        self.files = [path, path.with_name(f"{path.name}-wal")]
        self.immutable = False

    def fail_before(self) -> None:
        self._chattr("+i")

    def heal(self) -> None:
        if self.immutable:
            self._chattr("-i")

    def _chattr(self, flag: str) -> None:
        for path in self.files:
            subprocess.run(["chattr", flag, str(path)], check=True, capture_output=True)
        self.immutable = flag == "+i"


class StoppedRedis(Store):
    """A Redis server of this test's own (its data in an append-only file), stopped on cue."""

    def __init__(self, server: RedisServer, *, during: bool) -> None:
        # (each write waits on the server's fsync, which a loaded machine can hold past 1 s)
        super().__init__(RedisObservations(server.url, timeout=5.0))
        self.server = server
        self.during = during

    def fail_before(self) -> None:
        if not self.during:
            self.server.stop()

    def fail_during(self) -> None:
        if self.during:
            self.server.stop()

    def heal(self) -> None:
        self.server.start()


@dataclass
class RedisServer:
    """``redis-server`` on a free port of 127.0.0.1, its data kept across restarts."""

    home: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if self.process is not None:
            return
        if not self.port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.home)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until it answers (not while it loads its data)
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as probe:
                    probe.sendall(b"PING\r\n")
                    if probe.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the Redis client is asyncio's


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        message = "redis-server is missing; install it with `.ci/servers install redis`"
        if os.environ.get("CTXFS_REQUIRE_SERVERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    (tmp_path / "redis").mkdir()
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def chattr_works(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.touch()
    done = subprocess.run(["chattr", "+i", str(probe)], capture_output=True, check=False)
    subprocess.run(["chattr", "-i", str(probe)], capture_output=True, check=False)
    return done.returncode == 0


@pytest.fixture(
    params=["cued-before", "cued-during", "cued-after", "sqlite-locked", "sqlite-read-only",
            *(pytest.param(kind, marks=pytest.mark.slow)  # a Redis server of its own, each
              for kind in ("redis-stopped-before", "redis-stopped-during"))],
)  # fmt: skip
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    kind = str(request.param)
    made: Store
    if kind.startswith("cued-"):
        made = Cued(kind.removeprefix("cued-"))
    elif kind == "sqlite-locked":
        made = LockedSqlite(tmp_path / "observations.db")
    elif kind == "sqlite-read-only":
        if not chattr_works(tmp_path):
            pytest.skip("chattr +i is refused here (it needs root and a file system that has it)")
        made = ReadOnlySqlite(tmp_path / "observations.db")
    else:
        server = request.getfixturevalue("redis_server")
        made = StoppedRedis(server, during=kind.endswith("during"))
    yield made
    if isinstance(made, ReadOnlySqlite):
        made.heal()


def opened(where: str, request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A fresh, empty backend: ``memory``, ``local`` (fs-local) or ``s3`` (moto)."""
    if where == "memory":
        return MemoryBackend()
    if where == "local":
        (tmp_path / "root").mkdir()
        return LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    bucket = request.getfixturevalue("s3_bucket")
    return open_fs(S3.url(bucket, uuid.uuid4().hex[:12]), **S3.options).backend


@pytest.fixture(scope="session")
def s3_bucket() -> str:
    S3.require()
    return S3.create_bucket()


class Tripwire:
    """Runs *trip* once, the first time a mutation's checks have passed (a plugin's vote)."""

    def __init__(self, trip: Callable[[], None]) -> None:
        self.trip: Callable[[], None] | None = trip

    def __call__(self) -> None:
        trip, self.trip = self.trip, None
        if trip is not None:
            trip()

    @hookimpl
    def ctxfs_check_version(self, ctx: Context, op: Operation, current: Version | None) -> None:
        del ctx, op, current
        self()


async def snapshot(backend: Backend) -> dict[str, bytes | None]:
    """Every file's bytes and every directory (None) below the root."""
    seen: dict[str, bytes | None] = {}
    pending = [""]
    while pending:
        for entry in await backend.list(pending.pop(), details=False):
            if entry.kind is FileKind.DIRECTORY:
                seen[entry.path] = None
                pending.append(entry.path)
            else:
                seen[entry.path] = (await backend.read(entry.path)).data
    return seen


@asynccontextmanager
async def mounted(backend: Backend, store: Store) -> AsyncIterator[Fs]:
    trip = Tripwire(getattr(store, "fail_during", lambda: None))
    fs = Fs(backend, observations=store.store, load_entrypoints=False, plugins=[trip])
    if isinstance(backend, LocalBackend | MemoryBackend):
        directory_move = backend.move_directory

        async def tripped(source: str, destination: str) -> None:
            trip()  # a directory move has no version to check: the store goes down here
            await directory_move(source, destination)

        backend.move_directory = tripped  # type: ignore[method-assign]
    try:
        async with fs:
            yield fs
    finally:
        await store.store.aclose()


@pytest.mark.parametrize(
    ("where", "name"),
    [*((where, name) for where in ("memory", "local") for name in sorted(MUTATIONS)),
     *(pytest.param("s3", name, marks=pytest.mark.slow) for name in sorted(MUTATIONS)
       if name != "move-directory")],  # an object store moves no directory
)  # fmt: skip
async def test_a_mutation_commits_with_its_observation_or_changes_nothing(
    where: str, name: str, store: Store, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    mutation, backend = MUTATIONS[name], opened(where, request, tmp_path)
    for path, data in FILES.items():
        await backend.write(path, data, expect=ABSENT)
    tools = FsToolset()
    async with mounted(backend, store) as fs:
        ctx = fs.context(owner="agent")
        for path in mutation.reads:
            assert not (await tools.execute(ctx, "read", {"file_path": path})).is_error
        before = await snapshot(backend)
        store.fail_before()
        failed = await tools.execute(ctx, mutation.tool, mutation.arguments)
        after = await snapshot(backend)
        store.heal()
        if mutation.stored:
            assert failed.error_code in (ErrorCode.UNAVAILABLE, ErrorCode.BUSY), failed.text
            assert after == before, "a failed call changed the files"
        elif failed.is_error:
            assert after == before, "a failed call changed the files"
        else:  # it records nothing: it commits alone
            assert {path: data for path, data in after.items() if path != "made"} == before
        retried = await tools.execute(ctx, mutation.tool, mutation.arguments)
        assert not retried.is_error, retried.text
        assert await snapshot(backend) != before or not mutation.stored


class Committed:
    """A plugin whose ``ctxfs_committed`` runs *then* (a third party's observer)."""

    def __init__(self, then: Callable[[], Awaitable[None]]) -> None:
        self.then = then

    @hookimpl
    async def ctxfs_committed(self, ctx: Context, op: Operation) -> None:
        del ctx, op
        await self.then()


class Failures:
    """What an observer raises: the failure queued last, once per commit, while any are."""

    def __init__(self) -> None:
        self.queued: list[FsError] = []

    async def __call__(self) -> None:
        if self.queued:
            raise self.queued.pop()


async def undone_but_for(path: str, data: bytes) -> tuple[MemoryBackend, Context]:
    """A context whose changes an observer fails, on a store that fails to put *path* back.

    *path* holds *data*, read by the context's owner.
    """
    backend = MemoryBackend()

    async def fail() -> None:
        backend.faults.fail_next("write", Unavailable("the disk went away"), path=path)
        raise Unavailable("the observer failed")

    ctx = Fs(backend, load_entrypoints=False, plugins=[Committed(fail)]).context(owner="agent")
    await backend.write(path, data, expect=ABSENT)
    await ctx.fs.read(path)
    return backend, ctx


@pytest.mark.parametrize("call", ["write", "move"])
async def test_an_undone_change_removes_the_directories_it_made(call: str, tmp_path: Path) -> None:
    # An observer fails the commit: the file goes back, and so do the new parents it needed.
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.txt").write_bytes(b"one\n")
    (root / "src" / "b.txt").write_bytes(b"two\n")  # src is not left empty by a move

    async def fail() -> None:
        raise Unavailable("the observer failed")

    async with Fs(LocalBackend(root), load_entrypoints=False, plugins=[Committed(fail)]) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.read("src/a.txt")
        change: Awaitable[object] = (
            ctx.fs.write("new/deep/c.txt", "three\n")
            if call == "write"
            else ctx.fs.move("src/a.txt", "new/deep/a.txt")
        )
        with pytest.raises(Unavailable):
            await change
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == [
        "src",
        "src/a.txt",
        "src/b.txt",
    ]


async def test_a_change_that_cannot_be_undone_says_what_the_files_hold() -> None:
    backend, ctx = await undone_but_for("a.txt", b"one\n")
    with pytest.raises(FsError) as caught:
        await ctx.fs.edit("a.txt", "one", "two")
    assert caught.value.code is ErrorCode.BACKEND_ERROR
    assert "a.txt is as the change left it" in caught.value.message
    assert caught.value.details["changed"] == ["a.txt"]
    assert (await backend.read("a.txt")).data == b"two\n"


async def test_a_change_cancelled_before_its_commit_is_reported_is_undone() -> None:
    backend = MemoryBackend()
    fs = Fs(backend, load_entrypoints=False, plugins=[Committed(anyio.sleep_forever)])
    ctx = fs.context(owner="agent")
    await backend.write("a.txt", b"one\n", expect=ABSENT)
    await ctx.fs.read("a.txt")
    with anyio.move_on_after(0.2) as scope:
        await ctx.fs.edit("a.txt", "one", "two")
    assert scope.cancelled_caught
    assert (await backend.read("a.txt")).data == b"one\n"


async def test_the_ledger_of_an_undone_change_records_nothing_stored(tmp_path: Path) -> None:
    backend, store = MemoryBackend(), FaultyObservations()
    ledger = AuditLedger(tmp_path / "audit.jsonl", durable=False)
    fs = Fs(backend, observations=store, load_entrypoints=False, plugins=[ledger])
    ctx = fs.context(owner="agent")
    await backend.write("a.txt", b"one\n", expect=ABSENT)
    seen = await ctx.fs.read("a.txt")
    store.fail_next("update")
    with pytest.raises(FsError):
        await ctx.fs.edit("a.txt", "one", "two")
    last = ledger.records()[-1]
    assert (last["op"], last["outcome"], last["error_code"]) == ("edit", "error", "unavailable")
    assert (last["before"], last["after"]) == (seen.version, None)


# -- a commit that fails part way --------------------------------------------------------------


async def local_or_memory(where: str, tmp_path: Path) -> Backend:
    if where == "memory":
        return MemoryBackend()
    (tmp_path / "root").mkdir()
    return LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")


@pytest.mark.parametrize("where", ["memory", "local"])
@pytest.mark.parametrize(
    ("tool", "arguments", "reads", "recorded"),
    [
        ("move", {"source_path": "a.txt", "destination_path": "b.txt"}, ["a.txt"], 1),
        ("move", {"source_path": "dir", "destination_path": "moved"}, ["dir/c.txt", "dir/d.txt"],
         2),
        ("apply_patch", {"input": PATCH}, ["a.txt", "b.txt"], 2),
    ],
    ids=["move", "move-directory", "apply_patch"],
)  # fmt: skip
async def test_a_commit_the_store_fails_part_way_leaves_what_the_owner_saw(
    where: str,
    tool: str,
    arguments: dict[str, Any],
    reads: list[str],
    recorded: int,
    tmp_path: Path,
) -> None:
    # The store records *recorded* changes of what the owner saw, then fails: the files and
    # the owner's observations are put back, so the same call succeeds once the store works.
    backend, store = await local_or_memory(where, tmp_path), FaultyObservations()
    for path, data in {"a.txt": b"alpha\nbeta\n", "b.txt": b"bravo\n", "dir/c.txt": b"c\n",
                       "dir/d.txt": b"d\n"}.items():  # fmt: skip
        await backend.write(path, data, expect=ABSENT)
    if tool == "move" and arguments["destination_path"] == "b.txt":
        await backend.delete("b.txt")
    tools = FsToolset()
    async with Fs(backend, observations=store, load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        for path in reads:
            assert not (await tools.execute(ctx, "read", {"file_path": path})).is_error
        keys = [(await backend.locate(path)).key for path in reads]
        before, seen = await snapshot(backend), [await store.get("agent", key) for key in keys]
        store.fail_next("update", after=recorded)
        failed = await tools.execute(ctx, tool, arguments)
        assert failed.error_code is ErrorCode.UNAVAILABLE, failed.text
        assert await snapshot(backend) == before
        assert [await store.get("agent", key) for key in keys] == seen
        retried = await tools.execute(ctx, tool, arguments)
        assert not retried.is_error, retried.text


@pytest.mark.parametrize("where", ["memory", "local"])
async def test_an_observer_that_fails_leaves_the_owner_what_it_saw(
    where: str, tmp_path: Path
) -> None:
    failures = Failures()
    failures.queued.append(Unavailable("the observer's own store is down"))
    backend = await local_or_memory(where, tmp_path)
    await backend.write("a.txt", b"one\n", expect=ABSENT)
    async with Fs(backend, load_entrypoints=False, plugins=[Committed(failures)]) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.read("a.txt")
        with pytest.raises(Unavailable, match="nothing changed"):
            await ctx.fs.edit("a.txt", "one", "two")
        assert (await backend.read("a.txt")).data == b"one\n"
        await ctx.fs.edit("a.txt", "one", "two")  # not stale: the owner's observation is back
        assert (await backend.read("a.txt")).data == b"two\n"


async def test_a_move_that_cannot_be_undone_leaves_the_file_at_one_path_at_least() -> None:
    backend, ctx = await undone_but_for("a.txt", b"one\n")
    with pytest.raises(FsError) as caught:
        await ctx.fs.move("a.txt", "b.txt")
    assert caught.value.code is ErrorCode.BACKEND_ERROR
    assert sorted(caught.value.details["changed"]) == ["a.txt", "b.txt"]
    assert (await backend.read("b.txt")).data == b"one\n"  # not deleted: a.txt did not come back


class AnswerLost(MemoryBackend):
    """A store whose next delete fails ``Unavailable``: landed or not, then what happens after."""

    def __init__(self, *, landed: bool, then: str) -> None:
        super().__init__()
        self.landed, self.then, self.failing = landed, then, True

    async def _delete(self, path: str, expect: Version | None) -> None:
        if not self.failing:
            return await super()._delete(path, expect)
        self.failing = False
        if self.landed:
            await super()._delete(path, expect)
        if self.then == "another writer makes it":
            self._force(path, b"another writer's\n")
        elif self.then == "no look succeeds":
            self.faults.fail_next("stat", Unavailable("the store went away"), path=path)
        raise Unavailable("the store went away")


@pytest.mark.parametrize(
    ("landed", "then", "left"),
    [
        (False, "nothing", {"a.txt": b"one\n", "b.txt": b"one\n"}),
        (False, "no look succeeds", {"a.txt": b"one\n", "b.txt": b"one\n"}),
        (True, "another writer makes it", {"a.txt": b"another writer's\n", "b.txt": b"one\n"}),
    ],
)
async def test_a_move_whose_removal_is_unanswered_keeps_its_copy_where_a_file_is_left(
    landed: bool, then: str, left: dict[str, bytes]
) -> None:
    # The removal may land yet (a request still on its way): the copy may become the only
    # one, so it stays, and the error says so.
    backend = AnswerLost(landed=landed, then=then)
    ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
    await ctx.fs.write("a.txt", "one\n")
    with pytest.raises(FsError) as caught:
        await ctx.fs.move("a.txt", "b.txt")
    assert caught.value.code is ErrorCode.BACKEND_ERROR
    assert "b.txt keeps the content read" in caught.value.message
    assert {
        entry.path: (await backend.read(entry.path)).data for entry in await backend.list("")
    } == left


async def test_a_removal_that_landed_unanswered_is_done_in_a_move_and_an_undo() -> None:
    # No file is left where the removal ran: a move is done, and so is putting back the
    # absence of a file a write created (an observer failed the write).
    backend = AnswerLost(landed=True, then="nothing")
    failures = Failures()
    fs = Fs(backend, load_entrypoints=False, plugins=[Committed(failures)])
    ctx = fs.context(owner="agent")
    await ctx.fs.write("a.txt", "one\n")
    await ctx.fs.move("a.txt", "b.txt")
    assert [entry.path for entry in await backend.list("")] == ["b.txt"]
    assert await ctx.fs.changed() == []  # the move is the owner's: it saw where the file went
    backend.failing = True
    failures.queued.append(Unavailable("the observer failed"))
    with pytest.raises(Unavailable, match="nothing changed"):
        await ctx.fs.write("new.txt", "two\n")
    assert [entry.path for entry in await backend.list("")] == ["b.txt"]


async def test_a_delete_that_landed_unanswered_is_done_in_every_call_that_deletes() -> None:
    # No file is left: the delete happened, and what goes with it (a patch's new file, the
    # step an undo needs) is kept.
    backend = AnswerLost(landed=True, then="nothing")
    ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
    await ctx.fs.write("a.txt", "alpha\nbeta\n")
    await ctx.fs.delete("a.txt")
    assert (await ctx.fs.undo()).steps == (2,)  # the delete, recorded
    assert (await backend.read("a.txt")).data == b"alpha\nbeta\n"
    backend.failing = True
    failed = await FsToolset().execute(ctx, "apply_patch", {"input": MOVING_PATCH})
    assert not failed.is_error, failed.text
    assert (await backend.read("moved.txt")).data == b"alpha\nBETA\n"
    assert [entry.path for entry in await backend.list("")] == ["moved.txt"]


async def test_a_patch_moving_a_file_with_new_text_keeps_it_if_its_old_path_cannot_come_back() -> (
    None
):
    backend, ctx = await undone_but_for("a.txt", b"alpha\nbeta\n")
    tools = FsToolset()
    failed = await tools.execute(ctx, "apply_patch", {"input": MOVING_PATCH})
    assert failed.error_code is ErrorCode.BACKEND_ERROR
    assert (await backend.read("moved.txt")).data == b"alpha\nBETA\n"


async def test_fs_local_puts_a_file_back_with_its_mode_and_a_moved_one_by_its_inode(
    tmp_path: Path,
) -> None:
    failures = Failures()
    (tmp_path / "root").mkdir()
    secret, notes = tmp_path / "root" / "secret.env", tmp_path / "root" / "notes.txt"
    secret.write_bytes(b"KEY=1\n")
    secret.chmod(0o600)
    notes.write_bytes(b"notes\n")
    inode = notes.stat().st_ino
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    async with Fs(backend, load_entrypoints=False, plugins=[Committed(failures)]) as fs:
        ctx = fs.context(owner="agent")
        for path in ("secret.env", "notes.txt"):
            await ctx.fs.read(path)
        failures.queued.append(Unavailable("the observer failed"))
        with pytest.raises(Unavailable):
            await ctx.fs.delete("secret.env")
        failures.queued.append(Unavailable("the observer failed"))
        with pytest.raises(Unavailable):
            await ctx.fs.move("notes.txt", "sub/notes.txt")
    assert secret.read_bytes() == b"KEY=1\n"
    assert secret.stat().st_mode & 0o777 == 0o600
    assert notes.stat().st_ino == inode


async def test_fs_local_puts_back_a_file_too_large_to_keep_from_the_file_it_held_open(
    tmp_path: Path,
) -> None:
    # a delete or move reads such a file for its version alone: an undo takes the content from
    # the file read (unlinked, or replaced by the move), still open
    failures = Failures()
    (tmp_path / "root").mkdir()
    log, old, new = (tmp_path / "root" / name for name in ("log.txt", "old.txt", "new.txt"))
    for path, line in ((log, b"log\n"), (old, b"old\n"), (new, b"new\n")):
        path.write_bytes(line * 10_000)
    log.chmod(0o640)
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    sessions = MemorySessions(max_bytes_per_owner=1024)
    plugins = [Committed(failures)]
    async with Fs(backend, load_entrypoints=False, plugins=plugins, sessions=sessions) as fs:
        ctx = fs.context(owner="agent")
        for name in ("log.txt", "old.txt", "new.txt"):
            await ctx.fs.read(name, limit=1)
        failures.queued.append(Unavailable("the observer failed"))
        with pytest.raises(Unavailable, match="nothing changed"):
            await ctx.fs.delete("log.txt")
        failures.queued.append(Unavailable("the observer failed"))
        with pytest.raises(Unavailable, match="nothing changed"):
            await ctx.fs.move("new.txt", "old.txt", overwrite=True)
    assert log.read_bytes() == b"log\n" * 10_000
    assert log.stat().st_mode & 0o777 == 0o640
    assert (old.read_bytes(), new.read_bytes()) == (b"old\n" * 10_000, b"new\n" * 10_000)


async def test_the_ledger_of_a_patch_undone_records_nothing_stored(tmp_path: Path) -> None:
    backend = MemoryBackend()
    ledger = AuditLedger(tmp_path / "audit.jsonl", durable=False)
    fs = Fs(backend, load_entrypoints=False, plugins=[ledger])
    backend.faults.fail_next("write", Unavailable("the disk went away"), path="z.txt")
    patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Add File: z.txt\n+z\n*** End Patch"
    failed = await FsToolset().execute(fs.context(owner="agent"), "apply_patch", {"input": patch})
    assert failed.error_code is ErrorCode.UNAVAILABLE
    records = {record["path"]: record for record in ledger.records()}
    assert (records["a.txt"]["outcome"], records["a.txt"]["after"]) == ("error", None)
