"""Session stores: in-process, SQLite (a host's processes) and Redis (every host)."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import pytest
import redis.asyncio as aioredis

from ctxfs.core import Busy, InvalidArgument, Unavailable, Version
from ctxfs.core.kit import Permissions
from ctxfs.core.sessions import (
    DEFAULT_MAX_IDLE_DAYS,
    Checkpoint,
    FileChange,
    MemorySessions,
    RedisSessions,
    SessionStore,
    SqliteSessions,
    Step,
    open_sessions,
    sqlite_store,
)
from ctxfs.core.sessions.base import SWEEP_CONTENTS, reference_entry
from ctxfs.core.sessions.redis_store import LAYOUT
from ctxfs.core.sessions.sqlite_store import SWEEP_BYTES, SWEEP_STEPS
from tests.conftest import REDIS_PORT

pytestmark = pytest.mark.anyio

Opener = Callable[..., SessionStore]
"""Opens the store under test (again, for the shared ones) with the bounds given, and a
``clock`` if one is given."""

V1, V2, V3 = Version("xxh3:1"), Version("xxh3:2"), Version("xxh3:3")
FORTY = b"x" * 40


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the Redis client is asyncio's


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    base = {
        "memory": "memory:?",
        "sqlite": f"sqlite:///{tmp_path}/sessions.db?",
        "redis": request.getfixturevalue("redis_url") + "&" if request.param == "redis" else "",
    }[request.param]
    opened: list[SessionStore] = []

    def open_store(clock: Callable[[], float] | None = None, **bounds: int) -> SessionStore:
        opened.append(open_sessions(base + urlencode(bounds)))
        if clock is not None:
            opened[-1].clock = clock
        return opened[-1]

    yield open_store
    for store in opened:
        await store.aclose()


def change(path: str, after: str | None, before: str | None = None) -> FileChange:
    return FileChange(
        path=path,
        key=f"k{path}",
        kind="write",
        before=None if before is None else Version(before),
        after=None if after is None else Version(after),
    )


@pytest.mark.parametrize("opener", ["sqlite", "redis"], indirect=True)
async def test_a_history_is_decoded_off_the_event_loop(
    opener: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1,000 steps of 100 changes take a second to decode: never on the loop other calls share.
    store = opener()
    await store.record("agent", [change("a.txt", "v1")], at=1.0)
    await store.mark("agent", "start", at=2.0)
    decoded_in: set[threading.Thread] = set()
    decoding = {Step: Step.decode, Checkpoint: Checkpoint.decode}
    for kind, decode in decoding.items():

        def watched(text: str, decode: Callable[[str], Any] = decode) -> Any:
            decoded_in.add(threading.current_thread())
            return decode(text)

        monkeypatch.setattr(kind, "decode", watched)
    assert [step.number for step in await store.steps("agent")] == [1]
    assert [mark.label for mark in await store.checkpoints("agent")] == ["start"]
    assert decoded_in
    assert threading.main_thread() not in decoded_in


async def test_a_kept_content_comes_back(opener: Opener) -> None:
    store = opener()
    large = bytes(range(256)) * 400  # (a large one moves off the event loop)
    assert await store.keep("a", V1, b"one\n")
    assert await store.keep("a", V2, large)
    assert await store.content("a", V1) == b"one\n"
    assert await store.content("a", V2) == large
    assert await store.content("a", V3) is None


async def test_another_owner_reads_only_what_it_was_given(opener: Opener) -> None:
    store = opener()
    await store.keep("a", V1, b"secret")
    assert await store.content("b", V1) is None
    assert await store.content("a:", V1) is None  # owners never run together
    await store.keep("b", V1, b"secret")
    assert await store.content("b", V1) == b"secret"


async def test_a_content_two_owners_keep_is_stored_once(opener: Opener) -> None:
    # Room for 100 bytes in all: 60 kept for two owners fit only if stored once.
    store = opener(max_bytes=100)
    sixty = b"s" * 60
    await store.keep("a", V1, sixty)
    await store.keep("b", V1, sixty)
    assert await store.content("a", V1) == sixty
    assert await store.content("b", V1) == sixty
    if isinstance(store, MemorySessions):
        assert store.kept_bytes == 60
    elif isinstance(store, SqliteSessions):
        with sqlite3.connect(store.path) as db:
            assert db.execute("SELECT count(*), sum(size) FROM uses").fetchone() == (1, 60)
    else:
        assert isinstance(store, RedisSessions)
        client = aioredis.Redis(port=REDIS_PORT)
        blobs = [name async for name in client.scan_iter(match=store.prefix + b"sessions:blob:*")]
        assert len(blobs) == 1
        assert await client.get(store.prefix + b"sessions:bytes") == b"60"
        await client.aclose()


async def test_an_owner_gives_up_its_least_recently_used(opener: Opener) -> None:
    store = opener(max_bytes_per_owner=100)
    await store.keep("a", V1, FORTY)
    await store.keep("a", V2, FORTY)
    await store.keep("b", V2, FORTY)
    assert await store.content("a", V1) == FORTY  # used again: V2 is now a's least recent
    await store.keep("a", V3, FORTY)
    assert await store.content("a", V2) is None
    assert await store.content("a", V1) == FORTY
    assert await store.content("a", V3) == FORTY
    assert await store.content("b", V2) == FORTY  # another owner's bound is its own


async def test_the_store_gives_up_the_least_recently_used_of_all(opener: Opener) -> None:
    store = opener(max_bytes=100)
    await store.keep("a", V1, FORTY)
    await store.keep("b", V2, FORTY)
    await store.keep("c", V2, FORTY)
    assert await store.content("a", V1) == FORTY
    await store.keep("d", V3, FORTY)  # V2 went, for both its owners
    assert [await store.content(owner, V2) for owner in "bc"] == [None, None]
    assert await store.content("a", V1) == FORTY
    assert await store.content("d", V3) == FORTY


async def test_the_store_gives_up_what_a_holders_step_names_after_every_other(
    opener: Opener,
) -> None:
    # Room for 100 bytes in all: b's reads push out b's older read, never a's step's content.
    store = opener(max_bytes=100)
    await store.record("a", [step("f", V1)], at=1.0, contents=[(V1, FORTY)])
    await store.keep("b", V1, FORTY)  # the same content, a read for b: a still names it
    await store.keep("b", V2, FORTY)
    await store.keep("b", V3, FORTY)  # 120 bytes: V2 goes, not V1 (older, but a names it)
    assert [await store.content("b", v) is not None for v in (V1, V2, V3)] == [True, False, True]
    await store.drop_steps("a", [1])  # undone: V1 ranks with the reads again, the least recent
    await store.keep("b", V2, FORTY)
    assert [
        await store.content(o, v) is not None for o, v in [("a", V1), ("b", V1), ("b", V2)]
    ] == [False, False, True]


async def test_a_content_larger_than_a_bound_is_refused_at_once(opener: Opener) -> None:
    for store in (opener(max_bytes_per_owner=100), opener(max_bytes=100)):
        await store.keep("a", V1, FORTY)
        assert not await store.keep("a", V2, b"y" * 101)
        assert await store.content("a", V2) is None
        assert await store.content("a", V1) == FORTY  # nothing given up for it
        assert await store.keep("a", V3, b"z" * 100)


async def test_a_reference_is_kept_per_owner_without_the_bytes(opener: Opener) -> None:
    store = opener()
    assert await store.keep("a", *reference_entry("a", V1, "docs/notes \udcff.txt"))
    assert await store.reference("a", V1) == "docs/notes \udcff.txt"
    assert await store.content("a", V1) is None  # a reference is no content
    assert await store.reference("b", V1) is None  # nor another owner's
    await store.keep("b", *reference_entry("b", V1, "elsewhere.txt"))  # each owner its own path
    assert await store.reference("b", V1) == "elsewhere.txt"
    assert await store.reference("a", V1) == "docs/notes \udcff.txt"
    await store.keep("a", V1, b"copy")  # a copy and a reference live side by side
    assert (await store.content("a", V1), await store.reference("a", V1)) == (
        b"copy",
        "docs/notes \udcff.txt",
    )
    assert await store.reference("a", V2) is None
    await store.forget_owner("a")
    assert await store.reference("a", V1) is None
    assert await store.reference("b", V1) == "elsewhere.txt"


async def test_references_count_their_path_against_the_bounds(opener: Opener) -> None:
    store = opener(max_bytes_per_owner=100)
    await store.keep("a", V1, FORTY)
    await store.keep("a", *reference_entry("a", V2, "p" * 40))
    assert await store.content("a", V1) == FORTY  # V2's reference is now a's least recent
    await store.keep("a", *reference_entry("a", V3, "q" * 40))
    assert await store.reference("a", V2) is None
    assert await store.reference("a", V3) == "q" * 40
    assert await store.content("a", V1) == FORTY
    assert not await store.keep("a", *reference_entry("a", V1, "r" * 101))  # larger than a bound


async def test_steps_are_numbered_bounded_and_never_renumbered(opener: Opener) -> None:
    store = opener(max_steps=3)
    moved = FileChange(
        path="/r/new\udcff", key="k", kind="move", before=None, after=V2, moved_from="/r/old"
    )
    first = await store.record("a", [moved, change("/r/d", None)], at=1.5)
    assert first == Step(number=1, changes=(moved, change("/r/d", None)), at=1.5)
    for n in range(2, 6):
        assert (await store.record("a", [change("/r/f", f"v{n}")], at=float(n))).number == n
    assert [step.number for step in await store.steps("a")] == [3, 4, 5]  # the oldest went
    assert [step.number for step in await store.steps("a", after=3)] == [4, 5]
    assert (await store.steps("a"))[-1] == Step(number=5, changes=(change("/r/f", "v5"),), at=5.0)
    await store.drop_steps("a", [5, 4])  # undone
    assert [step.number for step in await store.steps("a")] == [3]
    assert (await store.record("a", [], at=6.0)).number == 6  # never 4 again
    await store.drop_steps("a", [])
    await store.record("a", [change("/r/f", "v7")], at=7.0)
    assert [step.number for step in await store.steps("a")] == [3, 6, 7]  # undone: room again
    assert await store.given_up("a") == 2
    await store.record("a", [change("/r/f", "v8")], at=8.0)
    assert [step.number for step in await store.steps("a")] == [6, 7, 8]
    assert await store.given_up("a") == 3
    assert await store.steps("b") == []


async def test_a_files_permissions_come_back_with_its_step(opener: Opener) -> None:
    store = opener()
    permissions = Permissions(mode=0o750, owner=(7, 8))
    deleted = FileChange(
        path="/r/f", key="k", kind="delete", before=V1, after=None, permissions=permissions
    )
    await store.record("a", [deleted], at=1.0)
    [step] = await store.steps("a")
    assert step.changes == (deleted,)


@pytest.mark.parametrize(
    "damaged",
    [
        *({"ownership": ids} for ids in ([4294967295, 0], [-1, 5], "12", [1.5, 2], [True, 0], [1])),
        {"ownership": {"3": 0}},
        *({"mode": mode} for mode in (0o10000, -1, "755", 7.5, True, [0o644])),
    ],
)
def test_a_step_whose_mode_or_owner_ids_are_damaged_is_no_step(damaged: dict[str, object]) -> None:
    change = {"path": "f", "key": "k", "kind": "delete", "before": "v", "after": None}
    text = json.dumps({"number": 1, "at": 1.0, "changes": [{**change, **damaged}]})
    with pytest.raises(ValueError, match="not an encoded step"):
        Step.decode(text)


@pytest.mark.parametrize(
    ("name", "whole"), [("mode", 0o7777), ("mode", 0), ("ownership", [4294967294, 0])]
)
def test_a_step_keeps_a_mode_and_owner_ids_at_their_bounds(name: str, whole: object) -> None:
    change = {"path": "f", "key": "k", "kind": "delete", "before": "v", "after": None}
    text = json.dumps({"number": 1, "at": 1.0, "changes": [{**change, name: whole}]})
    permissions = Step.decode(text).changes[0].permissions
    kept = permissions.mode if name == "mode" else permissions.owner
    assert kept == (tuple(whole) if isinstance(whole, list) else whole)


async def test_a_step_keeps_its_contents_in_the_same_call(opener: Opener) -> None:
    store = opener(max_bytes_per_owner=100)
    await store.keep("a", V1, FORTY)
    large = bytes(range(256)) * 400  # (larger than a bound: not kept, the rest is)
    contents = [(V3, b"z" * 40), (V2, FORTY), (V1, large)]
    step = await store.record("a", [change("/r/f", "v3", "v2")], at=1.0, contents=contents)
    assert step.number == 1
    assert (await store.content("a", V3), await store.content("a", V2)) == (b"z" * 40, FORTY)
    assert await store.content("a", V1) is None  # the least recent when V3 and V2 came
    assert await store.content("b", V2) is None  # kept for its owner only
    key, path = reference_entry("a", V1, "docs/x.txt")  # a reference, kept with a step
    await store.record("a", [change("/r/x", "v1")], at=2.0, contents=[(key, path)])
    assert await store.reference("a", V1) == "docs/x.txt"


async def test_a_steps_contents_are_kept_in_their_order(opener: Opener) -> None:
    # Three of 40 bytes in a bound of 100: the first of them is the least recent, whatever
    # its name (V4 sorts last), and is given up.
    store = opener(max_bytes_per_owner=100)
    v4 = Version("xxh3:4")
    contents = [(v4, FORTY), (V3, FORTY), (V2, FORTY)]
    await store.record("a", [change("/r/f", "v2")], at=1.0, contents=contents)
    assert [await store.content("a", v) is not None for v in (v4, V3, V2)] == [False, True, True]


async def test_steps_undone_again_and_again_leave_the_memory_store_small() -> None:
    store = MemorySessions()
    for n in range(100):
        await store.keep("a", Version(f"xxh3:{n}"), b"x")
    for n in range(2_000):  # a move and its undo, say: no content kept in between
        recorded = await store.record("a", [step("f", Version(f"xxh3:{n % 100}"))], at=1.0)
        await store.drop_steps("a", [recorded.number])
    mine = store._owners["a"]
    assert len(mine.sizes) == 100
    assert len(mine.turns._heap) <= 2 * len(mine.sizes) + 65
    assert len(store._turns._heap) <= 2 * len(store._blobs) + 65
    assert mine.names == {}


@pytest.mark.parametrize("opener", ["redis"], indirect=True)
async def test_a_damaged_record_of_what_a_step_names_fails_no_later_call(opener: Opener) -> None:
    store = opener(max_steps=1)
    assert isinstance(store, RedisSessions)
    await store.record("a", [step("f", V1)], at=1.0, contents=[(V1, FORTY)])
    client = aioredis.Redis(port=REDIS_PORT)
    await client.hset(store._owned("a", b"names"), "1", b"\xc1 not msgpack")
    await client.aclose()
    assert (await store.record("a", [step("f", V2)], at=2.0)).number == 2  # step 1 given up
    await store.drop_steps("a", [2])
    assert await store.steps("a") == []


@pytest.mark.parametrize("opener", ["redis"], indirect=True)
async def test_keys_another_layout_wrote_are_refused_and_left_alone(opener: Opener) -> None:
    store = opener()
    assert isinstance(store, RedisSessions)
    client = aioredis.Redis(port=REDIS_PORT)
    layout = store.prefix + b"sessions:layout"
    await store.record("a", [step("f", V1)], at=1.0, contents=[(V1, FORTY)])
    assert await client.get(layout) == LAYOUT.encode()  # set by the first call
    await client.set(layout, b"0")  # as another version of ctxfs would have written it

    async def dumped() -> dict[object, object]:
        return {key: await client.dump(key) for key in await client.keys(store.prefix + b"*")}

    before = await dumped()
    fresh = opener()  # a store object of its own: it would note its owners' activity first
    for each in (store, fresh):
        for call in calls_refused(each):
            with pytest.raises(Unavailable, match="another version of ctxfs") as refused:
                await call()
            assert refused.value.retryable is False
            assert refused.value.details == {"layout": "0", "expected_layout": LAYOUT}
            assert "prefix" in (refused.value.hint or "")
    assert await dumped() == before
    await fresh.aclose()
    await client.aclose()


def calls_refused(store: SessionStore) -> list[Callable[[], Awaitable[object]]]:
    """Calls of every kind on *store*."""
    return [
        lambda: store.keep("b", V2, FORTY),
        lambda: store.record("b", [step("f", V2, V1)], at=2.0, contents=[(V2, FORTY)]),
        lambda: store.content("a", V1),
        lambda: store.mark("a", None, at=2.0),
        lambda: store.drop_steps("a", [1]),
        lambda: store.forget_owner("a"),
        lambda: store.forget_idle(10.0**10),
        lambda: store.steps("a"),
        lambda: store.checkpoints("a"),
        lambda: store.given_up("a"),
    ]


def step(path: str, after: Version | None, before: Version | None = None) -> FileChange:
    return FileChange(path=path, key=f"k{path}", kind="edit", before=before, after=after)


async def kept(store: SessionStore, owner: str, versions: list[Version]) -> list[bool]:
    """Whether each of *versions* is kept for *owner* (each a use, in order)."""
    return [await store.content(owner, version) is not None for version in versions]


async def test_what_a_kept_step_names_goes_after_all_its_owners_reads(opener: Opener) -> None:
    store = opener(max_bytes_per_owner=100)
    twenty, v4, v5 = b"r" * 20, Version("xxh3:4"), Version("xxh3:5")
    assert await store.keep("a", V3, twenty)  # a read, the least recent
    contents = [(V1, FORTY), (V2, FORTY)]
    await store.record("a", [step("f", V2, V1)], at=1.0, contents=contents)
    assert await store.keep("a", v4, twenty)  # 120 bytes: the older read goes
    assert not await store.keep("a", v5, FORTY)  # v4, then v5 itself: the rest is named
    assert await kept(store, "a", [V3, v4, v5, V1, V2]) == [False, False, False, True, True]
    await store.keep("b", V1, FORTY)  # the same content read by another owner: not named
    await store.keep("b", v4, FORTY)
    await store.keep("b", v5, FORTY)
    assert await kept(store, "b", [V1, v4, v5]) == [False, True, True]


async def test_a_step_names_the_reference_kept_for_a_version_too(opener: Opener) -> None:
    store = opener(max_bytes_per_owner=100)
    reference = reference_entry("a", V1, "p" * 40)
    await store.record("a", [step("f", V1)], at=1.0, contents=[reference])
    await store.keep("a", V2, FORTY)
    await store.keep("a", V3, FORTY)  # 120 bytes: the read V2 goes, not the reference
    assert await store.reference("a", V1) == "p" * 40
    assert await kept(store, "a", [V2, V3]) == [False, True]


async def test_contents_no_kept_step_names_rank_with_the_reads_by_their_last_use(
    opener: Opener,
) -> None:
    store = opener(max_bytes_per_owner=100, max_steps=2)
    v4 = Version("xxh3:4")
    await store.record("a", [step("f", V1)], at=1.0, contents=[(V1, b"1" * 30)])  # step 1
    await store.record("a", [step("f", V2, V1)], at=2.0, contents=[(V2, b"2" * 30)])  # 2
    await store.drop_steps("a", [2, 2])  # undone (a number twice): V1 is still step 1's
    await store.keep("a", V3, b"3" * 30)
    await store.keep("a", v4, b"4" * 30)  # 120 bytes: V2 (used before V3) goes, not V1
    assert await kept(store, "a", [V2, V1, V3, v4]) == [False, True, True, True]
    for n in (3, 4):  # V1's step is given up (two steps are kept)
        await store.record("a", [step(f"g{n}", None)], at=float(n))
    assert [s.number for s in await store.steps("a")] == [3, 4]
    await store.keep("a", V2, b"2" * 30)  # 120 bytes again: V1, the least recent, goes
    assert await kept(store, "a", [V1, V3, v4, V2]) == [False, True, True, True]


async def test_an_owner_forgotten_or_idle_starts_again_with_nothing_named(opener: Opener) -> None:
    clock = Clock()
    store = opener(clock, max_bytes_per_owner=100, max_idle_days=1)
    for owner in ("forgotten", "idle"):
        await store.record(owner, [step("f", V1)], at=1.0, contents=[(V1, FORTY)])
    await store.forget_owner("forgotten")
    clock.now += 2 * DAY
    while await store.forget_idle(clock.now - DAY):
        pass
    for owner in ("forgotten", "idle"):
        assert await store.steps(owner) == []
        await store.keep(owner, V1, FORTY)  # a read now, V1 no longer named
        await store.keep(owner, V2, FORTY)
        await store.keep(owner, V3, FORTY)
        assert await kept(store, owner, [V1, V2, V3]) == [False, True, True]


@pytest.mark.parametrize("opener", ["sqlite", "redis"], indirect=True)
async def test_smaller_bounds_given_at_reopening_hold_from_the_next_call(opener: Opener) -> None:
    store = opener()
    for version in (V1, V2, V3):
        await store.keep("a", version, FORTY)
    await store.aclose()
    smaller = opener(max_bytes_per_owner=100)
    await smaller.keep("a", V2, FORTY)  # kept already: only its use changes
    assert [await smaller.content("a", v) is not None for v in (V1, V2, V3)] == [
        False,
        True,
        True,
    ]


async def test_checkpoints_follow_the_last_step(opener: Opener) -> None:
    store = opener()
    before = await store.mark("a", None, at=1.0)
    assert before.step == 0
    await store.record("a", [change("/r/f", "v1")], at=2.0)
    await store.record("a", [change("/r/f", "v2")], at=3.0)
    after = await store.mark("a", "after \udcff two", at=4.0)
    assert (after.step, after.label, after.at) == (2, "after \udcff two", 4.0)
    await store.drop_steps("a", [2])
    again = await store.mark("a", "x", at=5.0)
    assert again.step == 2  # the last number given
    assert len({before.id, after.id, again.id}) == 3
    assert await store.checkpoints("a") == [before, after, again]
    assert await store.checkpoints("b") == []


async def test_forgetting_an_owner_forgets_its_contents_and_history_only(
    opener: Opener,
) -> None:
    store = opener()
    for owner in ("a", "b"):
        await store.keep(owner, V1, b"shared")
        await store.record(owner, [change("/r/f", "v1")], at=1.0)
        await store.mark(owner, "m", at=1.0)
    await store.keep("a", V2, b"a's own")
    await store.forget_owner("a")
    assert [await store.content("a", v) for v in (V1, V2)] == [None, None]
    assert (await store.steps("a"), await store.checkpoints("a")) == ([], [])
    assert await store.content("b", V1) == b"shared"
    assert len(await store.steps("b")) == len(await store.checkpoints("b")) == 1
    if isinstance(store, MemorySessions):
        assert store.kept_bytes == len(b"shared")
    await store.forget_owner("nobody")


async def test_owners_that_are_not_utf8_keep_their_identity(opener: Opener) -> None:
    store = opener()
    await store.keep("a\udcff", V1, b"one")
    await store.record("a\udcff", [change("/r/bad\udcff", "v1")], at=1.0)
    await store.mark("a\udcff", None, at=1.0)
    assert await store.content("a\udcff", V1) == b"one"
    assert await store.content("a\udcfe", V1) is None
    assert (await store.steps("a\udcff"))[0].changes == (change("/r/bad\udcff", "v1"),)
    assert await store.steps("a\udcfe") == []
    assert await store.steps("a\ud800") == []  # (any lone surrogate)
    await store.forget_owner("a\udcff")
    assert await store.content("a\udcff", V1) is None
    # two spellings of one name's bytes are two owners: an owner is any string
    for owner, alias in [
        ("\u00e9", "\udcc3\udca9"),
        ("\udc80\ud800", "\udced\udcb2\udc80\udced\udca0\udc80"),
    ]:
        await store.record(owner, [change("/r/x", "v1")], at=1.0, contents=[(V1, b"one")])
        assert await store.steps(alias) == []
        assert await store.content(alias, V1) is None


@pytest.mark.parametrize("opener", ["sqlite", "redis"], indirect=True)
async def test_a_shared_store_keeps_everything_across_reopening(opener: Opener) -> None:
    store = opener()
    await store.keep("a", V1, b"one")
    step = await store.record("a", [change("/r/f", "v1")], at=1.0)
    mark = await store.mark("a", "m", at=2.0)
    await store.aclose()
    again = opener()
    assert await again.content("a", V1) == b"one"
    assert await again.steps("a") == [step]
    assert await again.checkpoints("a") == [mark]
    assert (await again.record("a", [], at=3.0)).number == 2
    assert (await again.mark("a", None, at=3.0)).id != mark.id


DAY = 86_400.0


class Clock:
    """A clock a test moves: seconds since the epoch, starting at an arbitrary date."""

    def __init__(self) -> None:
        self.now = 1_000_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_an_owner_idle_too_long_is_given_up_and_its_numbering_goes_on(
    opener: Opener,
) -> None:
    clock = Clock()
    store = opener(clock, max_idle_days=2)
    await store.record("gone", [change("a.txt", "v1")], at=1.0, contents=[(V1, b"one")])
    await store.mark("gone", "start", at=1.0)
    await store.record("stays", [change("b.txt", "v2")], at=1.0, contents=[(V2, b"two")])
    clock.now += 1.5 * DAY
    assert [step.number for step in await store.steps("stays")] == [1]  # a read is activity
    clock.now += 1.0 * DAY  # "gone": 2.5 days without a call; "stays": 1
    assert await store.content("stays", V2) == b"two"  # (the call that looks)
    assert await store.steps("gone") == []
    assert await store.checkpoints("gone") == []
    assert await store.content("gone", V1) is None
    assert await store.given_up("gone") == 1  # an undo says its steps were given up
    assert [step.number for step in await store.steps("stays")] == [1]
    assert (await store.record("gone", [], at=2.0)).number == 2
    assert (await store.mark("gone", None, at=2.0)).id == "cp2"
    assert [step.number for step in await store.steps("gone")] == [2]


async def test_a_look_gives_up_one_history_and_a_few_contents_and_calls_go_on(
    opener: Opener,
) -> None:
    # However much an idle owner kept, one look (in some caller's call) stays short.
    clock = Clock()
    store = opener(clock, max_idle_days=1)
    many = [(Version(f"xxh3:m{n}"), b"%d" % n) for n in range(SWEEP_CONTENTS + 8)]
    await store.record("many", [change("a.txt", "v1")], at=1.0, contents=many)
    await store.record("one", [change("b.txt", "v2")], at=1.0, contents=[(V1, b"one")])
    clock.now += 2 * DAY
    before = clock.now - DAY
    assert [await store.forget_idle(before) for _ in range(4)] == [True, True, True, False]
    assert [await store.content("many", version) for version, _ in many] == [None] * len(many)
    assert await store.content("one", V1) is None
    assert (await store.given_up("many"), await store.given_up("one")) == (1, 1)
    await store.record("later", [change("c.txt", "v3")], at=2.0, contents=many)
    clock.now += 2 * DAY
    for _ in range(6):  # each call looks again while idle owners remain
        await store.steps("caller")
    assert not await store.forget_idle(clock.now - DAY)
    assert [await store.content("later", version) for version, _ in many] == [None] * len(many)


async def test_an_idle_owner_loses_its_least_recently_used_first(opener: Opener) -> None:
    # One look lets go of SWEEP_CONTENTS of 40; the owner, back, keeps the 8 it used last.
    clock = Clock()
    store = opener(clock, max_idle_days=1)
    many = [Version(f"xxh3:n{n:02}") for n in range(SWEEP_CONTENTS + 8)]
    await store.record("a", [step("f", many[0]), step("g", many[1])], at=1.0)
    for version in many:
        await store.keep("a", version, b"x")
    for version in many[:5]:
        await store.content("a", version)  # used again: the most recent
    clock.now += 2 * DAY
    assert await store.forget_idle(clock.now - DAY)
    await store.note_active("a", clock.now)  # back before the next look
    assert not await store.forget_idle(clock.now - DAY)
    assert await kept(store, "a", many) == [True] * 5 + [False] * (SWEEP_CONTENTS) + [True] * 3


async def test_a_content_of_no_bytes_is_let_go(opener: Opener) -> None:
    clock = Clock()
    store = opener(clock, max_idle_days=1)
    await store.keep("a", V1, b"")
    await store.keep("b", V1, b"")
    await store.forget_owner("a")
    assert await store.content("b", V1) == b""
    clock.now += 2 * DAY
    await store.steps("caller")
    assert await store.content("b", V1) is None


async def test_an_owner_whose_note_failed_is_given_up_and_a_failed_look_retried(
    tmp_path: Path,
) -> None:
    clock = Clock()
    store = SqliteSessions(tmp_path / "s.db", max_idle_days=1, timeout=5, clock=clock)
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # the note fails at once; the record waits

    def let_go() -> None:
        threading.Event().wait(0.3)
        other.execute("ROLLBACK")

    releasing = threading.Thread(target=let_go)
    releasing.start()
    await store.record("once", [change("a.txt", "v1")], at=1.0)  # (a one-shot agent)
    releasing.join()
    clock.now += 2 * DAY
    other.execute("BEGIN IMMEDIATE")
    await store.steps("caller")  # the look is busy: logged, due again a minute later
    other.execute("ROLLBACK")
    other.close()
    clock.now += 60.0
    await store.steps("caller")
    assert await store.given_up("once") == 1
    await store.aclose()


async def test_a_look_gives_up_a_long_sqlite_history_in_batches_oldest_first(
    tmp_path: Path,
) -> None:
    # A look stays short whatever the steps and contents weigh; the owner back keeps the rest.
    clock = Clock()
    store = SqliteSessions(tmp_path / "s.db", max_idle_days=1, clock=clock)
    count = 2 * SWEEP_STEPS + 1
    half = SWEEP_BYTES // 2 + 1
    contents = [(Version(f"xxh3:{n}"), bytes([n]) * half) for n in range(3)]
    for version, data in contents:
        await store.keep("back", version, data)
    for owner in ("back", "gone"):
        for _ in range(count):
            await store.record(owner, [change("a.txt", "v1")], at=1.0)
        await store.mark(owner, None, at=1.0)
        clock.now += 1.0  # ("back" is idle longest)
    clock.now += 2 * DAY
    before = clock.now - DAY
    assert await store.forget_idle(before)
    assert await store.checkpoints("back") == []  # (a call: "back" is active again)
    assert await store.given_up("back") == SWEEP_STEPS
    steps = [step.number for step in await store.steps("back")]
    assert steps == list(range(SWEEP_STEPS + 1, count + 1))
    while await store.forget_idle(before):
        pass
    assert await store.steps("gone") == []
    assert await store.given_up("gone") == count
    assert [await store.content("back", v) is None for v, _ in contents] == [False] * 3
    await store.drop_steps("back", steps)  # now "back" idles again, steps gone in one look
    clock.now += 2 * DAY
    before = clock.now - DAY
    assert await store.forget_idle(before)  # its history, and a content (no more: bytes)
    assert await store.checkpoints("back") == []
    kept = [await store.content("back", v) is not None for v, _ in contents]
    assert sorted(kept) == [False, True, True]
    await store.aclose()


@pytest.mark.parametrize("meanwhile", ["another task", "closing the store"])
async def test_a_sqlite_look_lets_the_event_loop_go_on(
    meanwhile: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    store = SqliteSessions(tmp_path / "s.db", max_idle_days=1, clock=clock)
    await store.record("idle", [change("a.txt", "v1")], at=1.0)
    clock.now += 2 * DAY
    started, loop_ran, seen = threading.Event(), threading.Event(), []
    look = sqlite_store._forget_idle

    def slow_look(before: float, db: sqlite3.Connection) -> bool:
        started.set()
        seen.append(loop_ran.wait(2.0))  # (times out if the look, or closing, blocks the loop)
        return look(before, db)

    async def go_on() -> None:
        await anyio.to_thread.run_sync(started.wait)  # (its end is seen on the loop)
        async with anyio.create_task_group() as tasks:
            if meanwhile == "closing the store":
                tasks.start_soon(store.aclose)  # (it waits for the look)
                await anyio.sleep(0.05)
            loop_ran.set()

    monkeypatch.setattr(sqlite_store, "_forget_idle", slow_look)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(store.forget_idle, clock.now - DAY)  # (as a call's look)
        tasks.start_soon(go_on)
    assert seen == [True]
    if meanwhile == "closing the store":
        with pytest.raises(Unavailable):  # (closed once the look ended)
            await store.given_up("idle")
    else:
        assert await store.given_up("idle") == 1
        await store.aclose()


@pytest.mark.parametrize("call", ["record", "mark"])
@pytest.mark.parametrize("history", ["idle", "being given up", "given up"])
async def test_an_owner_back_during_a_sqlite_look_keeps_what_it_does_then(
    history: str, call: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its note is Busy (the look holds the file); the call that keeps or records notes it too.
    clock = Clock()
    store = SqliteSessions(tmp_path / "s.db", max_idle_days=1, clock=clock)
    if history == "idle":  # not yet looked at: an owner idle longer is the look's
        await store.keep("idle", V1, b"one")
        clock.now += 1.0
    for _ in range(2 * SWEEP_STEPS + 1):
        await store.record("back", [change("a.txt", "v1")], at=1.0)
    clock.now += 2 * DAY
    if history == "given up":  # only its numbering is left; another owner is the look's
        while await store.forget_idle(clock.now - DAY):
            pass
        await store.keep("idle", V1, b"one")
        clock.now += 2 * DAY
    in_look, go, busy = threading.Event(), threading.Event(), []
    counted, note = sqlite_store._counted, store.note_active

    def slow_count(db: sqlite3.Connection, owner: bytes, column: str) -> int:
        if column == "steps" and not in_look.is_set():  # (in the look's transaction)
            in_look.set()
            go.wait(5.0)
        return counted(db, owner, column)

    async def failing_note(owner: str, at: float) -> None:
        try:
            await note(owner, at)
        except Busy:
            busy.append(owner)
            raise
        finally:
            if owner == "back":
                go.set()  # (the look goes on; the record below waits for it to commit)

    async def back() -> None:
        await anyio.to_thread.run_sync(in_look.wait)
        if call == "record":
            await store.record("back", [change("b.txt", "v2")], at=2.0, contents=[(V2, b"two")])
        else:  # (its time is the caller's, not the store's clock)
            await store.mark("back", "later", at=2.0)

    monkeypatch.setattr(sqlite_store, "_counted", slow_count)
    monkeypatch.setattr(store, "note_active", failing_note)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(store.steps, "caller")  # (its call looks)
        tasks.start_soon(back)
    monkeypatch.undo()
    assert busy == ["back"]
    assert not await store.forget_idle(clock.now - DAY)  # "back" is active: nothing goes
    clock.now += 2 * DAY  # (a call of "back" would note it: none until it is idle again)
    while await store.forget_idle(clock.now - DAY):
        pass
    numbered = 2 * SWEEP_STEPS + (2 if call == "record" else 1)
    assert await store.given_up("back") == numbered  # once idle again, it goes
    assert await store.checkpoints("back") == []
    assert (await store.steps("back"), await store.content("back", V2)) == ([], None)
    await store.aclose()


async def test_a_look_cancelled_with_its_call_comes_again_at_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    store = MemorySessions(max_idle_days=1, clock=clock)
    looks: list[float] = []

    async def hanging_look(before: float) -> bool:
        looks.append(before)
        if len(looks) == 1:
            await anyio.sleep_forever()
        return False

    monkeypatch.setattr(store, "forget_idle", hanging_look)
    with anyio.move_on_after(0.05):  # (a harness's deadline on the call)
        await store.steps("caller")
    clock.now += 60.0
    await store.steps("caller")
    clock.now += 60.0
    await store.steps("caller")  # (a look that ended says when the next is due)
    assert len(looks) == 2
    await store.aclose()


async def test_a_failing_look_is_tried_again_a_minute_later_not_at_every_call(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    store = MemorySessions(max_idle_days=1, clock=clock)
    looks: list[float] = []

    async def failing_look(before: float) -> bool:
        looks.append(before)
        raise Unavailable("the store is down")

    monkeypatch.setattr(store, "forget_idle", failing_look)
    for _ in range(5):  # calls within the minute: one look, one warning
        await store.steps("caller")
        clock.now += 10.0
    assert len(looks) == 1
    assert caplog.text.count("could not give up the owners idle") == 1
    clock.now += 20.0  # a minute since the failed look
    await store.steps("caller")
    assert len(looks) == 2
    await store.aclose()


async def test_a_call_does_not_wait_for_a_busy_file_to_note_or_look(tmp_path: Path) -> None:
    store = SqliteSessions(tmp_path / "s.db", timeout=0.5)
    await store.record("bob", [change("a.txt", "v1")], at=1.0)
    fresh = SqliteSessions(tmp_path / "s.db", timeout=0.5)  # (its first call looks)
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing
    try:
        assert await store.checkpoints("alice") == []  # (alice's activity is due)
        assert [step.number for step in await fresh.steps("bob")] == [1]
    finally:
        other.execute("ROLLBACK")
        other.close()
        await fresh.aclose()
        await store.aclose()


@pytest.mark.parametrize("opener", ["sqlite", "redis"], indirect=True)
async def test_any_store_objects_call_keeps_an_owner_active(opener: Opener) -> None:
    # A read through another object (another process) counts: the owner is used there.
    clock = Clock()
    looking, reading = opener(clock, max_idle_days=2), opener(clock, max_idle_days=2)
    await looking.record("agent", [change("a.txt", "v1")], at=1.0)
    clock.now += 1.5 * DAY
    await reading.checkpoints("agent")
    clock.now += 1.0 * DAY
    await looking.steps("other")
    assert [step.number for step in await reading.steps("agent")] == [1]
    clock.now += 2.5 * DAY
    await looking.steps("other")
    assert await reading.steps("agent") == []


async def test_an_owner_of_a_file_from_before_activity_counts_from_the_first_look(
    tmp_path: Path,
) -> None:
    clock = Clock()
    store = SqliteSessions(tmp_path / "s.db", max_idle_days=2, clock=clock)
    await store.record("old", [change("a.txt", "v1")], at=1.0)
    await store.aclose()
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("DROP TABLE active")  # as an older ctxfs made it
    db.close()
    clock.now += 30 * DAY
    store = SqliteSessions(tmp_path / "s.db", max_idle_days=2, clock=clock)
    await store.steps("other")
    assert [step.number for step in await store.steps("old")] == [1]
    clock.now += 3 * DAY
    await SqliteSessions(tmp_path / "s.db", max_idle_days=2, clock=clock).steps("other")
    assert await store.steps("old") == []
    await store.aclose()


@pytest.mark.parametrize("opener", ["sqlite", "redis"], indirect=True)
async def test_two_store_objects_recording_at_once_never_share_a_number(opener: Opener) -> None:
    stores = [opener(), opener()]
    numbers: list[int] = []

    async def record(store: SessionStore) -> None:
        numbers.extend([(await store.record("a", [], at=1.0)).number for _ in range(25)])

    async with anyio.create_task_group() as group:
        for store in stores:
            group.start_soon(record, store)
    assert sorted(numbers) == list(range(1, 51))


RECORDER = textwrap.dedent(
    """
    import sys
    import anyio
    from ctxfs.core.sessions import open_sessions

    async def main(url):
        store = open_sessions(url)
        numbers = [(await store.record("a", [], at=1.0)).number for _ in range(40)]
        numbers += [int((await store.mark("a", None, at=1.0)).id[2:]) for _ in range(10)]
        print(" ".join(map(str, numbers)))
        await store.aclose()

    anyio.run(main, sys.argv[1])
    """
)


@pytest.mark.parametrize("shared", ["sqlite", "redis"])
async def test_processes_recording_at_once_never_share_a_number(
    shared: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path}/s.db" if shared == "sqlite" else request.getfixturevalue("redis_url")
    )
    await open_sessions(url).aclose()
    recorders = [
        subprocess.Popen([sys.executable, "-c", RECORDER, url], stdout=subprocess.PIPE)
        for _ in range(3)
    ]
    outputs = [recorder.communicate(timeout=60)[0].split() for recorder in recorders]
    assert [recorder.returncode for recorder in recorders] == [0, 0, 0]
    steps = sorted(int(n) for output in outputs for n in output[:40])
    marks = sorted(int(n) for output in outputs for n in output[40:])
    assert (steps, marks) == (list(range(1, 121)), list(range(1, 31)))


async def test_open_sessions_by_url(tmp_path: Path) -> None:
    assert isinstance(open_sessions(None), MemorySessions)
    bounded = open_sessions("memory:?max_bytes=1000&max_bytes_per_owner=10&max_steps=5")
    assert isinstance(bounded, MemorySessions)
    assert (bounded.max_bytes, bounded.max_bytes_per_owner, bounded.max_steps) == (1000, 10, 5)
    assert open_sessions("memory:?max_idle_days=7").max_idle_days == 7
    assert open_sessions("memory:").max_idle_days == DEFAULT_MAX_IDLE_DAYS
    opened = open_sessions(f"sqlite:///{tmp_path}/s.db?max_steps=7")
    assert isinstance(opened, SqliteSessions)
    assert (opened.path, opened.max_steps) == (tmp_path / "s.db", 7)
    await opened.aclose()
    remote = open_sessions("redis://:secret@127.0.0.1:1/3?max_bytes=9&prefix=p:")
    assert isinstance(remote, RedisSessions)
    assert (remote.max_bytes, remote.prefix) == (9, b"p:")
    assert "secret" not in repr(remote)
    await remote.aclose()
    for bad in (
        "memory:?max_bytes=0",
        "memory:?max_idle_days=0",
        "memory:?max_steps=lots",
        "memory:?max_age=5",
        f"sqlite:///{tmp_path}/s.db?max_age=5",
        "sqlite:///",
        "postgres://x",
        "redis://127.0.0.1:1/0?max_steps=-1",
    ):
        with pytest.raises(InvalidArgument):
            open_sessions(bad)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_store_that_cannot_answer_is_unavailable(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    damaged.write_bytes(b"this is not a database" * 100)
    with pytest.raises(Unavailable, match="session store"):
        SqliteSessions(damaged)
    down = RedisSessions(f"redis://127.0.0.1:{_closed_port()}/0", timeout=1.0)
    with pytest.raises(Unavailable) as caught:
        await down.keep("a", V1, b"one")
    assert caught.value.retryable
    with pytest.raises(Unavailable):
        await down.steps("a")
    await down.aclose()


async def test_a_damaged_step_is_unavailable_not_guessed(tmp_path: Path) -> None:
    store = SqliteSessions(tmp_path / "s.db")
    await store.record("a", [], at=1.0)
    with sqlite3.connect(tmp_path / "s.db") as other:
        other.execute("UPDATE steps SET step = 'garbage'")
    with pytest.raises(Unavailable, match="damaged"):
        await store.steps("a")
    await store.aclose()


async def test_a_file_of_another_layout_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    earlier = tmp_path / "s.db"  # blobs as ctxfs kept them before the uses table
    with sqlite3.connect(earlier) as db:
        db.execute("CREATE TABLE blobs (version BLOB PRIMARY KEY, data BLOB, size INT, used INT)")
    with pytest.raises(Unavailable, match="made by another version of ctxfs") as caught:
        SqliteSessions(earlier)
    assert caught.value.details["other_layout"] == str(earlier)
    with sqlite3.connect(earlier) as db:
        tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert tables == [("blobs",)]  # no table of this layout was added
