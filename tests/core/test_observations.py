"""Observation stores: in-process, SQLite (a host's processes) and Redis (every host)."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest

from ctxfs.core import (
    ABSENT,
    Fs,
    InvalidArgument,
    MemoryBackend,
    MemoryObservations,
    NotObserved,
    Observation,
    ObservationStore,
    SqliteObservations,
    Stale,
    Unavailable,
    Version,
    open_observations,
    sqlite_url,
)
from ctxfs.core.observations import RedisObservations

pytestmark = pytest.mark.anyio

SEEN = Observation(version=Version("xxh3:1"), complete=False, lines=((1, 4), (9, 9)))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the Redis client is asyncio's (memory and SQLite run on trio too)


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObservationStore]:
    if request.param == "memory":
        opened: ObservationStore = MemoryObservations()
    elif request.param == "sqlite":
        opened = SqliteObservations(tmp_path / "o")
    else:
        opened = open_observations(request.getfixturevalue("redis_url"))
    yield opened
    await opened.aclose()


async def test_an_update_replaces_and_none_forgets(store: ObservationStore) -> None:
    assert await store.get("a", "f") is None
    await store.update("a", "f", lambda current: SEEN if current is None else None)
    assert await store.get("a", "f") == SEEN
    assert await store.get("b", "f") is None  # per owner
    await store.update("a", "f", lambda current: None if current == SEEN else SEEN)
    assert await store.get("a", "f") is None


async def test_a_put_replaces_whatever_was_seen_and_none_forgets(
    store: ObservationStore,
) -> None:
    changed = Observation(version=Version("xxh3:2"), complete=True, path="/r/f")
    await store.put("a", "f", SEEN)
    await store.put("b", "f", SEEN)
    await store.put("a", "f", changed)
    assert (await store.get("a", "f"), await store.get("b", "f")) == (changed, SEEN)
    await store.put("a", "f", None)
    assert await store.get("a", "f") is None
    await store.put("a", "f", None)  # (nothing to forget)
    assert await store.owned("a") == {}
    assert await store.get("b", "f") == SEEN


async def test_owners_and_keys_never_run_together(store: ObservationStore) -> None:
    await store.update("a:b", "c", lambda _: SEEN)
    assert await store.get("a", "b:c") is None
    assert await store.get("a:", "bc") is None
    assert await store.get("a:b", "c") == SEEN


async def test_names_that_are_not_utf8_keep_their_identity(store: ObservationStore) -> None:
    await store.update("a", "/r/bad\udcff.txt", lambda _: SEEN)
    assert await store.get("a", "/r/bad\udcff.txt") == SEEN
    assert await store.get("a", "/r/bad\udcfe.txt") is None
    # an owner is any string: two spellings of one name's bytes are two owners
    for owner, alias in [
        ("\u00e9", "\udcc3\udca9"),
        ("\udc80\ud800", "\udced\udcb2\udc80\udced\udca0\udc80"),
    ]:
        await store.put(owner, "a.txt", SEEN)
        assert await store.get(alias, "a.txt") is None
        assert await store.owned(alias) == {}


async def test_an_update_that_raises_changes_nothing(store: ObservationStore) -> None:
    await store.update("a", "f", lambda _: SEEN)

    def broken(current: Observation | None) -> Observation | None:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        await store.update("a", "f", broken)
    assert await store.get("a", "f") == SEEN


async def test_concurrent_updates_of_one_entry_all_count(store: ObservationStore) -> None:
    # 50 tasks each add one line range to the same entry: a lost update would leave a gap.
    async def add(line: int) -> None:
        def merged(seen: Observation | None) -> Observation:
            lines = (seen.lines if seen else ()) + ((line, line),)
            return Observation(version=Version("xxh3:1"), complete=False, lines=lines)

        await store.update("a", "f", merged)

    async with anyio.create_task_group() as group:
        for line in range(1, 51):
            group.start_soon(add, line)
    seen = await store.get("a", "f")
    assert seen is not None
    assert sorted(seen.lines) == [(line, line) for line in range(1, 51)]


async def test_the_memory_store_forgets_the_least_recently_used() -> None:
    store = MemoryObservations(max_observations=2)
    for key in ("x", "y", "z"):
        await store.update("a", key, lambda _: SEEN)
    assert [await store.get("a", key) is not None for key in ("x", "y", "z")] == [
        False,
        True,
        True,
    ]
    assert len(store) == 2


async def test_forgetting_an_owner_forgets_all_it_saw_and_no_other(
    store: ObservationStore,
) -> None:
    for owner in ("alice/session-1", "alice/session-12", "alice", "bob", "a*?[x]\\"):
        for key in ("/r/a", "/r/b"):
            await store.update(owner, key, lambda _: SEEN)
    await store.forget_owner("alice/session-1")
    await store.forget_owner("a*?[x]\\")  # glob characters are matched literally (Redis)
    assert await store.get("alice/session-1", "/r/a") is None
    assert await store.get("alice/session-1", "/r/b") is None
    assert await store.get("a*?[x]\\", "/r/a") is None
    for owner in ("alice/session-12", "alice", "bob"):  # a longer owner with the same start too
        assert await store.get(owner, "/r/a") == SEEN
        assert await store.get(owner, "/r/b") == SEEN
    await store.forget_owner("nobody")  # nothing to forget: fine


async def test_owned_gives_every_key_an_owner_saw_and_no_other(store: ObservationStore) -> None:
    other = Observation(version=Version("xxh3:2"), complete=True)
    odd_owner, odd_key = "agent\udcff*?[x]", "/r/bad\udcfe.txt"  # not UTF-8, glob characters
    for owner in ("a", "a:", "ab", odd_owner, odd_owner + "2"):  # owners with the same start
        for key in ("/r/a", "/r/b", "/r/gone", odd_key):
            await store.update(owner, key, lambda _: SEEN)
    await store.update("a", "/r/b", lambda _: other)
    await store.update("a", "/r/gone", lambda _: None)  # forgotten
    await store.update(odd_owner, "/r/gone", lambda _: None)
    assert await store.owned("a") == {"/r/a": SEEN, "/r/b": other, odd_key: SEEN}
    assert await store.owned(odd_owner) == {"/r/a": SEEN, "/r/b": SEEN, odd_key: SEEN}
    assert await store.owned("nobody") == {}
    await store.forget_owner("ab")
    assert await store.owned("ab") == {}
    assert await store.get("a:", "/r/gone") == SEEN  # the others' untouched


async def test_owned_leaves_out_expired_and_damaged_entries(tmp_path: Path, redis_url: str) -> None:
    store = SqliteObservations(tmp_path / "o", max_age=0.3)
    await store.update("a", "old", lambda _: SEEN)
    await anyio.sleep(0.4)
    await store.update("a", "new", lambda _: SEEN)
    await store.update("a", "damaged", lambda _: SEEN)
    with sqlite3.connect(tmp_path / "o") as other:  # another writer damaged one
        other.execute("UPDATE observations SET observation = 'x' WHERE key = ?", (b"damaged",))
    assert await store.owned("a") == {"new": SEEN}
    await store.aclose()
    shared = open_observations(redis_url + "&max_age=0.3")
    assert isinstance(shared, RedisObservations)
    await shared.update("a", "old", lambda _: SEEN)
    await anyio.sleep(0.4)
    await shared.update("a", "new", lambda _: SEEN)
    await shared.update("a", "damaged", lambda _: SEEN)
    await shared._client.set(shared._name("a", "damaged"), b"garbage")  # another writer
    assert await shared.owned("a") == {"new": SEEN}
    await shared.aclose()


async def test_the_sqlite_store_writes_only_what_changes_and_renews_the_rest(
    tmp_path: Path,
) -> None:
    # The same file read again (the same observation) costs a read of the file, not a write,
    # until a 64th of max_age has passed since the entry was written.
    store = SqliteObservations(tmp_path / "o", max_age=6400.0)
    other = sqlite3.connect(tmp_path / "o", isolation_level=None)

    def version() -> int:  # changes when another connection commits a write
        return int(other.execute("PRAGMA data_version").fetchone()[0])

    def seen() -> float:
        query = "SELECT seen FROM observations WHERE key = ?"
        return float(other.execute(query, (b"f",)).fetchone()[0])

    changed = Observation(version=Version("xxh3:2"), complete=True)
    await store.put("a", "f", SEEN)
    for key in ("expired", "damaged"):
        await store.put("a", key, SEEN)
    other.execute("UPDATE observations SET seen = seen - 7000 WHERE key = ?", (b"expired",))
    other.execute("UPDATE observations SET observation = 'x' WHERE key = ?", (b"damaged",))
    before = version()
    await store.put("a", "f", SEEN)
    await store.update("a", "f", lambda current: current)
    for key in ("expired", "damaged"):  # no observation already: forgetting it writes nothing
        await store.put("a", key, None)
        await store.update("a", key, lambda current: current)
        assert await store.get("a", key) is None
    assert version() == before
    await store.update("a", "f", lambda _: changed)
    assert version() != before
    assert await store.get("a", "f") == changed
    before = version()
    await store.put("a", "f", changed)
    assert version() == before
    aged = "UPDATE observations SET seen = seen - ? WHERE key = ?"
    other.execute(aged, (101, b"f"))  # written past a 64th of max_age
    before, last = version(), seen()
    await store.put("a", "f", changed)
    assert version() != before
    assert seen() >= last + 101  # renewed
    other.execute(aged, (101, b"f"))
    before, last = version(), seen()
    await store.update("a", "f", lambda current: current)
    assert (version() != before, seen() >= last + 101) == (True, True)
    other.execute(aged, (7000, b"f"))  # expired: no observation
    assert await store.get("a", "f") is None
    await store.put("a", "f", changed)
    assert await store.get("a", "f") == changed
    other.close()
    await store.aclose()


async def test_one_owner_cannot_push_the_others_out_of_the_memory_store() -> None:
    store = MemoryObservations(max_observations=100, max_per_owner=10)
    await store.update("live", "kept", lambda _: SEEN)
    for n in range(1000):  # a flood: only its own ten newest stay
        await store.update("flood", f"f{n}", lambda _: SEEN)
    assert await store.get("live", "kept") == SEEN
    assert [await store.get("flood", f"f{n}") is not None for n in (989, 990, 999)] == [
        False,
        True,
        True,
    ]
    assert (len(store), store.owners) == (11, 2)


async def test_owners_that_stopped_give_way_before_the_ones_still_working() -> None:
    # 500 sessions a client dropped, 20 files each, against room for 1,000 in all: the
    # agent that keeps working keeps every one of its observations.
    store = MemoryObservations(max_observations=1000, max_per_owner=100)
    for n in range(500):
        for key in range(20):
            await store.update(f"dropped-{n}", f"/r/{key}", lambda _: SEEN)
        await store.update("live", f"/r/{n % 50}", lambda _: SEEN)  # still at work
    assert all([await store.get("live", f"/r/{n}") == SEEN for n in range(50)])
    assert len(store) == 1000
    assert await store.get("dropped-0", "/r/0") is None  # the longest idle went first
    assert await store.get("dropped-499", "/r/19") == SEEN
    await store.forget_owner("live")
    assert len(store) == 950


async def test_fs_forgets_an_owner_that_ended(memory_backend: MemoryBackend) -> None:
    fs = Fs(memory_backend, load_entrypoints=False)
    await memory_backend.write("a.txt", b"one\n", expect=ABSENT)
    session, other = fs.context(owner="s1"), fs.context(owner="s2")
    for ctx in (session, other):
        await ctx.fs.read("a.txt")
    await fs.forget_owner("s1")
    with pytest.raises(NotObserved):
        await session.fs.edit("a.txt", "one", "two")
    await other.fs.edit("a.txt", "one", "two")


async def test_open_observations_by_url(tmp_path: Path) -> None:
    assert isinstance(open_observations(None), MemoryObservations)
    assert isinstance(open_observations("memory:"), MemoryObservations)
    bounded = open_observations("memory:?max_observations=50&max_per_owner=5")
    assert isinstance(bounded, MemoryObservations)
    assert (bounded.max_observations, bounded.max_per_owner) == (50, 5)
    opened = open_observations(f"sqlite:///{tmp_path}/o.db?max_age=60")
    assert isinstance(opened, SqliteObservations)
    assert (opened.path, opened.max_age) == (tmp_path / "o.db", 60)
    await opened.aclose()
    remote = open_observations("redis://:secret@127.0.0.1:1/3?max_age=5&prefix=p:")
    assert isinstance(remote, RedisObservations)
    assert (remote.max_age, remote.prefix) == (5, b"p:")
    assert "secret" not in repr(remote)
    await remote.aclose()
    bad_urls = (
        "sqlite://host/o.db",
        "sqlite:///",
        "postgres://x",
        "o.db",
        f"sqlite:///{tmp_path}/o.db?max_age=-1",
        f"sqlite:///{tmp_path}/o.db?max_age=soon",
        "redis://127.0.0.1:1/0?max_age=nan",
        "memory:?max_per_owner=0",
        "memory:?max_observations=lots",
        "memory:?max_age=5",
        f"sqlite:///{tmp_path}/o.db?maxage=5",  # (a misspelt option)
        "sqlite:///:memory:",  # (no file: each connection a database of its own)
        "sqlite:///a%00b.db",
        "redis://127.0.0.1:1/0?max_ag=5",
    )
    for bad in bad_urls:
        with pytest.raises(InvalidArgument):
            open_observations(bad)


async def test_a_damaged_or_unusable_file_is_unavailable_not_ignored(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    damaged.write_bytes(b"this is not a database" * 100)
    with pytest.raises(Unavailable) as caught:
        SqliteObservations(damaged)
    assert "cannot be used" in caught.value.message
    assert "remove a damaged one" in (caught.value.hint or "")
    with pytest.raises(Unavailable):
        SqliteObservations(tmp_path / "no such directory" / "o")


async def test_a_damaged_entry_is_no_observation(tmp_path: Path) -> None:
    store = SqliteObservations(tmp_path / "o")
    await store.update("a", "f", lambda _: SEEN)
    with sqlite3.connect(tmp_path / "o") as other:  # another writer damaged it
        other.execute("UPDATE observations SET observation = 'garbage'")
    assert await store.get("a", "f") is None  # the owner must read again
    await store.aclose()


async def test_a_store_another_process_holds_is_waited_for_off_the_event_loop(
    tmp_path: Path,
) -> None:
    store = SqliteObservations(tmp_path / "o")
    await store.update("a", "f", lambda _: SEEN)  # free: answered on the loop
    holder = sqlite3.connect(tmp_path / "o", isolation_level=None)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async def release() -> None:
        await anyio.sleep(0.3)
        holder.execute("COMMIT")

    changed = Observation(version=Version("xxh3:2"), complete=True)
    writes: list[tuple[Callable[[], Awaitable[None]], Observation]] = [
        (lambda: store.update("a", "f", lambda _: changed), changed),
        (lambda: store.put("a", "f", SEEN), SEEN),  # a put alike
    ]
    for write, expected in writes:
        holder.execute("BEGIN IMMEDIATE")  # the write lock, as another process would hold it
        ticks = 0
        async with anyio.create_task_group() as group:
            group.start_soon(tick)
            group.start_soon(release)
            await write()  # waits for the lock, in a thread
            group.cancel_scope.cancel()
        assert ticks >= 15  # the loop kept running meanwhile
        assert await store.get("a", "f") == expected
    holder.execute("BEGIN IMMEDIATE")
    assert await store.get("a", "f") == SEEN  # readers never wait (write-ahead log)
    holder.execute("ROLLBACK")
    holder.close()
    await store.aclose()


async def test_observations_not_renewed_expire(tmp_path: Path, redis_url: str) -> None:
    store = SqliteObservations(tmp_path / "o")
    await store.update("a", "f", lambda _: SEEN)
    await store.aclose()
    await anyio.sleep(0.3)
    again = SqliteObservations(tmp_path / "o", max_age=0.2)
    assert await again.get("a", "f") is None
    await again.update("a", "f", lambda _: SEEN)
    assert await again.get("a", "f") == SEEN
    await anyio.sleep(0.4)  # (expired while the store is open: get and update agree)
    assert await again.get("a", "f") is None
    await again.update("a", "f", lambda seen: seen)
    assert await again.get("a", "f") is None
    await again.aclose()
    shared = open_observations(redis_url + "&max_age=0.2")
    await shared.update("a", "f", lambda _: SEEN)
    assert await shared.get("a", "f") == SEEN
    await anyio.sleep(0.4)
    assert await shared.get("a", "f") is None
    await shared.aclose()


async def test_redis_finds_an_owners_entries_without_walking_the_database(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_observations(redis_url + "&max_age=60")
    assert isinstance(store, RedisObservations)
    for number in range(30):
        await store.put("a", f"/r/{number}", SEEN)
    await store.update("a", "/r/changed", lambda _: SEEN)
    await store.update("b", "/r/other", lambda _: SEEN)
    client = store._client

    def walk(*args: object, **kwargs: object) -> None:
        raise AssertionError("the whole database was walked")

    monkeypatch.setattr(client, "scan", walk)
    expected = {f"/r/{number}": SEEN for number in range(30)} | {"/r/changed": SEEN}
    assert await store.owned("a") == expected
    await store.forget_owner("a")
    assert await store.owned("a") == {}
    assert await store.owned("b") == {"/r/other": SEEN}
    monkeypatch.undo()
    left = await client.keys(store.prefix + b"*")
    assert sorted(left) == sorted([store._name("b", "/r/other"), store._index("b")])
    assert 0 < await client.pttl(store._index("b")) <= 60_000  # (it expires with its entries)
    await store.forget_owner("b")
    assert await client.keys(store.prefix + b"*") == []
    await store.aclose()


async def test_redis_sets_name_only_the_entries_still_there(redis_url: str) -> None:
    store = open_observations(redis_url + "&max_age=0.3")
    assert isinstance(store, RedisObservations)
    client, index = store._client, store._index("a")
    for number in range(100):
        await store.put("a", f"/r/{number}", SEEN)
    for number in range(100):
        await (store.put if number % 2 else store.update)(
            "a", f"/r/{number}", *([None] if number % 2 else [lambda _: None])
        )
    await store.put("a", "/r/old", SEEN)
    assert await client.zcard(index) == 1
    await anyio.sleep(0.4)  # /r/old expires
    await store.put("a", "/r/new", SEEN)
    assert await client.zrange(index, 0, -1) == [store._name("a", "/r/new")]
    assert await store.owned("a") == {"/r/new": SEEN}
    await store.forget_owner("a")
    await store.aclose()


async def test_redis_an_entry_written_while_its_owner_is_forgotten_stays_findable(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = open_observations(redis_url), open_observations(redis_url)
    assert isinstance(store, RedisObservations)
    await store.put("a", "/r/seen", SEEN)
    client, unlink = store._client, store._client.unlink

    async def late_write_then_unlink(*names: bytes) -> object:
        monkeypatch.undo()
        await other.put("a", "/r/late", SEEN)  # another process, between the steps
        return await unlink(*names)

    monkeypatch.setattr(client, "unlink", late_write_then_unlink)
    await store.forget_owner("a")
    assert await store.get("a", "/r/seen") is None
    assert await store.owned("a") == {"/r/late": SEEN}  # not left where nothing finds it
    await store.forget_owner("a")
    assert await store.get("a", "/r/late") is None
    assert await client.keys(store.prefix + b"*") == []
    await store.aclose()
    await other.aclose()


async def test_a_store_kept_open_removes_expired_entries_from_its_file(tmp_path: Path) -> None:
    store = SqliteObservations(tmp_path / "o", max_age=0.4)
    for key in ("old", "older"):
        await store.update("a", key, lambda _: SEEN)
    await anyio.sleep(0.5)
    await store.update("a", "new", lambda _: SEEN)  # (a quarter of max_age has passed)
    await store.put("b", "newer", SEEN)
    with sqlite3.connect(tmp_path / "o") as reader:
        keys = {bytes(key) for (key,) in reader.execute("SELECT key FROM observations")}
    assert keys == {b"new", b"newer"}
    await store.aclose()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_redis_refuses_every_guarded_change() -> None:
    # Nothing listens: reads and edits fail `unavailable` (retryable); nothing is written.
    backend = MemoryBackend()
    await backend.write("a.txt", b"one\n", expect=ABSENT)
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    async with Fs(backend, load_entrypoints=False, observations=url) as fs:
        ctx = fs.context(owner="agent")
        with pytest.raises(Unavailable) as caught:
            await ctx.fs.read("a.txt")
        assert caught.value.retryable
        for change in (
            ctx.fs.edit("a.txt", "one", "two"),
            ctx.fs.write("a.txt", "two\n"),
            ctx.fs.delete("a.txt"),
        ):
            with pytest.raises(Unavailable):
                await change
    assert (await backend.read("a.txt")).data == b"one\n"


RECORDER = textwrap.dedent(
    """
    import sys
    import anyio
    from ctxfs.core import FileContextPlugin, MemoryBackend, Version, open_observations

    async def main(url, which):
        store = open_observations(url)
        guard = FileContextPlugin(MemoryBackend(), observations=store)
        for window in range(which, 100, 4):  # every fourth window of 4 lines
            first = 1 + 4 * window
            await guard.observe("a", "f", Version("xxh3:1"), complete=False,
                                lines=((first, first + 3),), total_lines=400)
        await store.aclose()

    anyio.run(main, sys.argv[1], int(sys.argv[2]))
    """
)


async def test_sqlite_urls_read_as_sqlalchemy_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sqlite:///relative.db is relative to the working directory; sqlite:////abs.db absolute.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub dir?").mkdir()
    for url, made in [
        ("sqlite:///relative.db", tmp_path / "relative.db"),
        (f"sqlite:///{tmp_path}/absolute.db", tmp_path / "absolute.db"),
        (sqlite_url(tmp_path / "sub dir?" / "o.db"), tmp_path / "sub dir?" / "o.db"),
        (sqlite_url("sub dir?/p.db"), tmp_path / "sub dir?" / "p.db"),
    ]:
        store = open_observations(url)
        await store.update("a", "f", lambda _: SEEN)
        await store.aclose()
        assert made.is_file(), url


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_windows_recorded_by_four_processes_at_once_add_up(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Each update is a transaction: windows recorded by four processes at the same time all
    # count, so the owner's observation ends complete (a lost update would leave a gap).
    url = f"sqlite:///{tmp_path}/o" if kind == "sqlite" else request.getfixturevalue("redis_url")
    await open_observations(url).aclose()
    recorders = [
        subprocess.Popen([sys.executable, "-c", RECORDER, url, str(first)]) for first in range(4)
    ]
    assert [recorder.wait(timeout=60) for recorder in recorders] == [0, 0, 0, 0]
    store = open_observations(url)
    assert await store.get("a", "f") == Observation(version=Version("xxh3:1"), complete=True)
    await store.aclose()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_two_fs_on_one_shared_store_share_an_owners_observations(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    backend = MemoryBackend()
    await backend.write("a.txt", b"one\n", expect=ABSENT)
    url = f"sqlite:///{tmp_path}/o.db" if kind == "sqlite" else request.getfixturevalue("redis_url")
    async with (
        Fs(backend, load_entrypoints=False, observations=url) as first,
        Fs(backend, load_entrypoints=False, observations=url) as second,
    ):
        await first.context(owner="agent").fs.read("a.txt")
        await second.context(owner="agent").fs.edit("a.txt", "one", "two")  # read via first
        await second.context(owner="other").fs.read("a.txt")
        await first.context(owner="other").fs.edit("a.txt", "two", "three")
        with pytest.raises(Stale):
            await first.context(owner="agent").fs.edit("a.txt", "two", "four")
        with pytest.raises(NotObserved):
            await second.context(owner="third").fs.edit("a.txt", "three", "four")


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
@pytest.mark.parametrize("loops", ["threads", "one_after_another"])
def test_one_fs_on_a_shared_store_serves_any_number_of_event_loops(
    kind: str, loops: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Four threads each running a loop of their own, or a loop per call (as sync wrappers run
    # ctxfs): every edit lands, and each loop's connections close with it.
    url = f"sqlite:///{tmp_path}/o.db" if kind == "sqlite" else request.getfixturevalue("redis_url")
    sessions = f"sqlite:///{tmp_path}/s.db" if kind == "sqlite" else url
    fs = Fs(MemoryBackend(), load_entrypoints=False, observations=url, sessions=sessions)
    rounds: dict[int, int] = {}

    async def work(agent: int, times: int) -> None:
        ctx = fs.context(owner=f"agent-{agent}")
        for _ in range(times):
            count = rounds.get(agent, 0)
            if count == 0:
                await ctx.fs.write(f"f{agent}.txt", "count 0\n")
            await ctx.fs.read(f"f{agent}.txt")
            await ctx.fs.edit(f"f{agent}.txt", f"count {count}\n", f"count {count + 1}\n")
            rounds[agent] = count + 1

    def in_a_loop(agent: int, times: int) -> None:
        asyncio.run(asyncio.wait_for(work(agent, times), 30))

    if loops == "threads":
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(in_a_loop, range(4), [20] * 4))
    else:
        for agent in range(4):
            for _ in range(5):
                in_a_loop(agent, 1)
    assert rounds == dict.fromkeys(range(4), 20 if loops == "threads" else 5)

    async def undone() -> int:
        async with fs:
            return len((await fs.context(owner="agent-0").fs.undo()).steps)

    assert asyncio.run(undone()) == 1
