"""Observations in a Redis server: every host that uses it shares them."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any, Final

import anyio

from ctxfs.core.errors import Busy
from ctxfs.core.observations.base import (
    DEFAULT_MAX_AGE,
    Change,
    Observation,
    ObservationStore,
    shown_url,
    stored_bytes,
    stored_owner,
    stored_text,
)
from ctxfs.core.redis_client import (
    LoopClients,
    RedisError,
    ResponseError,
    WatchError,
    unavailable,
)

__all__ = ["RedisObservations"]

_CONFLICT_SECONDS: Final = 10.0
"""How long an update retries while other writers keep changing its entry."""
_BATCH: Final = 1000
"""Keys asked for per ``ZSCAN`` step (its ``COUNT``), and per ``MGET`` or ``UNLINK``."""


class RedisObservations(ObservationStore):
    """Observations in a Redis server, shared by every process and host that uses it.

    One Redis string per entry, and a sorted set per owner naming its entries, each
    scored by when it expires; every update is a ``WATCH``/``MULTI`` transaction,
    retried on conflict, that renews the expiry (*max_age*) and the entry's score, and
    drops the names expired from the set. Point the URL at a primary, not a lagging
    replica.

    Args:
        url: The server (``redis://HOST:PORT/DB``, ``rediss://`` for TLS, ``unix:///SOCKET``);
            redis-py's own query options apply.
        max_age: Seconds an entry lasts without being renewed.
        prefix: The start of every key written (one Redis database can serve several setups).
        timeout: Seconds to connect, and to wait for each answer, before ``Unavailable``.

    """

    def __init__(
        self,
        url: str,
        *,
        max_age: float = DEFAULT_MAX_AGE,
        prefix: str = "ctxfs:",
        timeout: float = 5.0,
    ) -> None:
        self.max_age = max_age
        self.prefix = prefix.encode()
        self._url = url
        self._clients = LoopClients(
            url, timeout=timeout, shown=f"observation store {self!r}", instead=_INSTEAD
        )

    async def get(self, owner: str, key: str) -> Observation | None:
        """See :meth:`ObservationStore.get`."""
        with self._errors():
            return Observation.stored(await self._client.get(self._name(owner, key)))

    async def owned(self, owner: str) -> dict[str, Observation]:
        """See :meth:`ObservationStore.owned`: the owner's set walked, read by ``MGET`` in steps."""
        start = len(self._name(owner, ""))
        owned: dict[str, Observation] = {}
        with self._errors():
            async for names in self._named(self._index(owner), since=_now_ms()):
                for name, text in zip(names, await self._client.mget(names), strict=True):
                    observation = Observation.stored(text)
                    if observation is not None:
                        owned[stored_text(name[start:])] = observation
        return owned

    async def update(self, owner: str, key: str, change: Change) -> None:
        """See :meth:`ObservationStore.update`: ``WATCH``, read, ``MULTI``/``EXEC``, retried."""
        name = self._name(owner, key)
        deadline = anyio.current_time() + _CONFLICT_SECONDS
        with self._errors():
            async with self._client.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        await pipe.watch(name)
                        observation = change(Observation.stored(await pipe.get(name)))
                        pipe.multi()
                        if observation is None:
                            self._removed(pipe, owner, name)
                        else:
                            self._kept(pipe, owner, name, observation)
                        await pipe.execute()
                    except WatchError:
                        if anyio.current_time() > deadline:
                            raise Busy(
                                "other writers kept changing the same observation",
                                hint="Try again.",
                            ) from None
                    else:
                        return

    async def put(self, owner: str, key: str, observation: Observation | None) -> None:
        """See :meth:`ObservationStore.put`: one ``MULTI``/``EXEC``."""
        name = self._name(owner, key)
        with self._errors():
            async with self._client.pipeline(transaction=True) as pipe:
                if observation is None:
                    self._removed(pipe, owner, name)
                else:
                    self._kept(pipe, owner, name, observation)
                await pipe.execute()

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`ObservationStore.forget_owner`: its set renamed, then what it names.

        An entry written meanwhile goes to a new set: it is kept, and found.
        """
        forgotten = self.prefix + b"forgetting:" + uuid.uuid4().hex.encode()
        with self._errors():
            try:
                await self._client.rename(self._index(owner), forgotten)
            except ResponseError:  # no such key: nothing seen, or all of it expired
                return
            async for names in self._named(forgotten):
                await self._client.unlink(*names)
            await self._client.unlink(forgotten)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._clients.aclose()

    def _name(self, owner: str, key: str) -> bytes:
        """The Redis key: the prefix, the owner's length, the owner, the file key (unambiguous)."""
        raw_owner = stored_owner(owner)
        return b"%s%d:%s%s" % (self.prefix, len(raw_owner), raw_owner, stored_bytes(key))

    def _index(self, owner: str) -> bytes:
        """The sorted set naming *owner*'s entries by expiry (no entry's name starts so)."""
        raw_owner = stored_owner(owner)
        return b"%sseen-by:%d:%s" % (self.prefix, len(raw_owner), raw_owner)

    def _kept(self, pipe: Any, owner: str, name: bytes, observation: Observation) -> None:
        """Queue on *pipe* (in ``MULTI``) the entry *name* set, and scored in *owner*'s set."""
        index, now = self._index(owner), _now_ms()
        pipe.set(name, observation.encode(), px=self._expiry)
        pipe.zadd(index, {name: now + self._expiry})
        pipe.zremrangebyscore(index, "-inf", now)
        pipe.pexpire(index, self._expiry)

    def _removed(self, pipe: Any, owner: str, name: bytes) -> None:
        """Queue on *pipe* (in ``MULTI``) the entry *name* deleted, and out of *owner*'s set."""
        pipe.delete(name)
        pipe.zrem(self._index(owner), name)

    @property
    def _expiry(self) -> int:
        """*max_age* in milliseconds (``PX``), at least one."""
        return max(1, round(self.max_age * 1000))

    async def _named(self, index: bytes, *, since: float = 0) -> AsyncIterator[list[bytes]]:
        """The names in the sorted set *index* scored above *since*, by ``ZSCAN``, in batches.

        A name may come twice, and its entry be gone (deleted by another process).
        """
        batch: list[bytes] = []
        async for name, expires in self._client.zscan_iter(index, count=_BATCH):
            if expires <= since:
                continue
            batch.append(name)
            if len(batch) >= _BATCH:
                yield batch
                batch = []
        if batch:
            yield batch

    @property
    def _client(self) -> Any:
        """The running loop's client (``InvalidArgument`` on a loop other than asyncio's)."""
        return self._clients.current()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Make Redis's errors ``Unavailable``."""
        try:
            yield
        except RedisError as error:
            raise unavailable(error, f"observation store {self!r}") from error

    def __repr__(self) -> str:
        return f"RedisObservations({shown_url(self._url)!r})"


_INSTEAD: Final = "sqlite:/// observations"


def _now_ms() -> int:
    """The clock of the sets' scores, in milliseconds (entries expire by Redis's own)."""
    return int(time.time() * 1000)
