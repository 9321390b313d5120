"""The three session stores answer random sequences of calls alike, and stay consistent inside."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import redis.asyncio as aioredis

from ctxfs.core import Version
from ctxfs.core.sessions import (
    FileChange,
    MemorySessions,
    RedisSessions,
    SessionStore,
    SqliteSessions,
    Step,
    open_sessions,
)
from ctxfs.core.sessions.base import reference_entry, step_names
from tests.conftest import REDIS_PORT
from tests.core.test_session_stores import DAY, Clock

pytestmark = pytest.mark.anyio

OWNERS = ("a", "b", "c")
PLAIN = [Version(f"xxh3:{n}") for n in range(6)]
DATA = {version: bytes([65 + n]) * (10 + 13 * n) for n, version in enumerate(PLAIN)}
"""Each version's content, 10 to 75 bytes (a version's content is the same for every owner)."""
BOUNDS: dict[str, Any] = {
    "max_bytes_per_owner": 120,
    "max_bytes": 250,
    "max_steps": 3,
    "max_idle_days": 1,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the Redis client is asyncio's


def entries(owner: str) -> list[tuple[Version, bytes]]:
    """What may be kept for *owner*: each plain content, and a reference for each."""
    references = [reference_entry(owner, v, f"f{n}/" * (n + 1)) for n, v in enumerate(PLAIN)]
    return [(v, DATA[v]) for v in PLAIN] + references


def random_call(draw: random.Random, numbered: dict[str, int]) -> tuple[str, str, Any]:
    owner = draw.choice(OWNERS)
    kind = draw.choices(
        ["keep", "content", "record", "drop_steps", "steps", "forget_owner", "idle", "back"],
        weights=[30, 25, 25, 10, 8, 2, 6, 3],
    )[0]
    if kind in ("keep", "content"):
        return kind, owner, draw.choice(entries(owner))
    if kind == "record":
        changes = [
            FileChange(
                path=f"f{n}",
                key=f"k{n}",
                kind="edit",
                before=draw.choice([None, *PLAIN]),
                after=draw.choice([None, *PLAIN]),
            )
            for n in range(draw.randint(0, 2))
        ]
        return kind, owner, (changes, draw.sample(entries(owner), draw.randint(0, 3)))
    if kind == "drop_steps":
        top = numbered[owner] + 1
        return kind, owner, [draw.randint(1, top) for _ in range(draw.randint(0, 3))]
    if kind == "idle":  # time passes, then a look for idle owners
        return kind, owner, draw.choice([0.0, 3600.0, 0.6 * DAY, 1.5 * DAY])
    return kind, owner, None


async def call(store: SessionStore, kind: str, owner: str, arguments: Any) -> Any:  # noqa: PLR0911 - one return per kind
    clock = store.clock
    assert isinstance(clock, Clock)
    clock.now += 0.001
    if kind == "idle":
        clock.now += arguments
        return await store.forget_idle(clock.now - DAY)
    if kind == "back":
        return await store.note_active(owner, clock.now)
    if kind == "keep":
        return await store.keep(owner, *arguments)
    if kind == "content":
        return await store.content(owner, arguments[0])
    if kind == "record":
        changes, contents = arguments
        return (await store.record(owner, changes, at=1.0, contents=contents)).number
    if kind == "drop_steps":
        return await store.drop_steps(owner, arguments)
    if kind == "steps":
        return [step.number for step in await store.steps(owner)], await store.given_up(owner)
    return await store.forget_owner(owner)


def named_by(owner: str, steps: list[Step]) -> Counter[Version]:
    return Counter(v for step in steps for v in step_names(owner, step.changes))


async def check_memory(store: MemorySessions) -> None:
    for owner, mine in store._owners.items():
        assert mine.names == named_by(owner, mine.steps)
        assert mine.kept_bytes == sum(mine.sizes.values())
    namers = Counter(
        v for mine in store._owners.values() for v in mine.names.keys() & mine.sizes.keys()
    )
    assert store._namers == namers


async def check_sqlite(store: SqliteSessions) -> None:
    with sqlite3.connect(store.path) as db:
        for (owner,) in db.execute("SELECT owner FROM owners").fetchall():
            steps = [
                Step.decode(t)
                for (t,) in db.execute("SELECT step FROM steps WHERE owner = ?", (owner,))
            ]
            names = db.execute("SELECT version FROM names WHERE owner = ?", (owner,)).fetchall()
            name = owner.decode("utf-8", "surrogateescape")
            assert Counter(Version(v.decode()) for (v,) in names) == named_by(name, steps)
            flagged = db.execute(
                "SELECT count(*) FROM kept WHERE owner = ?1 AND named != "
                "EXISTS (SELECT 1 FROM names n WHERE n.owner = ?1 AND n.version = kept.version)",
                (owner,),
            ).fetchone()
            assert flagged == (0,)
            total = db.execute(
                "SELECT coalesce(sum(size), 0) FROM kept JOIN uses USING (version) WHERE owner = ?",
                (owner,),
            ).fetchone()[0]
            assert db.execute(
                "SELECT kept_bytes FROM owners WHERE owner = ?", (owner,)
            ).fetchone() == (total,)
        wrong = db.execute(
            "SELECT count(*) FROM uses WHERE namers != "
            "(SELECT count(*) FROM kept WHERE kept.version = uses.version AND named)"
        ).fetchone()
        assert wrong == (0,)
    db.close()


async def check_redis(store: RedisSessions) -> None:
    client: Any = aioredis.Redis(port=REDIS_PORT)
    try:
        namers: Counter[Version] = Counter()
        for owner in OWNERS:
            key = store._owned(owner, b"").decode()
            steps = [Step.decode(t) for t in await client.zrange(key + "steps", 0, -1)]
            refs = {
                Version(v.decode()): int(n) for v, n in (await client.hgetall(key + "refs")).items()
            }
            assert refs == named_by(owner, steps)
            named = {Version(v.decode()) for v in await client.zrange(key + "named", 0, -1)}
            unnamed = {Version(v.decode()) for v in await client.zrange(key + "kept", 0, -1)}
            assert named <= set(refs)
            assert not unnamed & set(refs)
            namers.update(named)
        counted = await client.hgetall(store.prefix + b"sessions:namers")
        assert {Version(v.decode()): int(n) for v, n in counted.items()} == namers
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    "seeds", [range(30), pytest.param(range(30, 300), marks=pytest.mark.slow)], ids=["30", "270"]
)
async def test_the_stores_agree_call_by_call(seeds: range, tmp_path: Path, redis_url: str) -> None:
    for seed in seeds:
        stores: list[SessionStore] = [
            MemorySessions(**BOUNDS, clock=Clock()),
            SqliteSessions(tmp_path / f"{seed}.db", **BOUNDS, clock=Clock()),
            open_sessions(seeded(redis_url, seed)),
        ]
        stores[2].clock = Clock()
        try:
            await agree(random.Random(seed), stores)
        except AssertionError as failure:
            raise AssertionError(f"seed {seed}: {failure}") from failure
        finally:
            for store in stores:
                await store.aclose()


def seeded(redis_url: str, seed: int) -> str:
    """*redis_url* with a key prefix of the seed's own, and the bounds."""
    parts = urlsplit(redis_url)
    query = dict(parse_qsl(parts.query))
    query["prefix"] = f"{query['prefix']}{seed}:"
    return urlunsplit(parts._replace(query=urlencode(query | BOUNDS)))


async def agree(draw: random.Random, stores: list[SessionStore]) -> None:
    """The three *stores* answer 100 random calls alike, then keep the same, each consistent."""
    numbered = dict.fromkeys(OWNERS, 0)
    for number in range(100):
        kind, owner, arguments = random_call(draw, numbered)
        answers = [await call(store, kind, owner, arguments) for store in stores]
        assert answers[1:] == answers[:1] * 2, (number, kind, owner, arguments)
        if kind == "record":
            numbered[owner] = answers[0]
        elif kind == "forget_owner":
            numbered[owner] = 0
    for owner in OWNERS:
        left = [[await s.content(owner, v) is not None for v, _ in entries(owner)] for s in stores]
        assert left[1:] == left[:1] * 2, owner
    await check_memory(stores[0])  # type: ignore[arg-type]
    await check_sqlite(stores[1])  # type: ignore[arg-type]
    await check_redis(stores[2])  # type: ignore[arg-type]
