"""Observations in a Redis server: every host that uses it shares them."""

from __future__ import annotations

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
    WatchError,
    unavailable,
)

__all__ = ["RedisObservations"]

_CONFLICT_SECONDS: Final = 10.0
"""How long an update retries while other writers keep changing its entry."""
_BATCH: Final = 1000
"""Keys asked for per ``SSCAN`` step (its ``COUNT``), and per ``MGET`` or ``UNLINK``."""


class RedisObservations(ObservationStore):
    """Observations in a Redis server, shared by every process and host that uses it.

    One Redis string per entry, and a set per owner naming its entries (its expiry
    renewed with theirs); every update is a ``WATCH``/``MULTI`` transaction, retried on
    conflict, that renews the expiry (*max_age*). Point the URL at a primary, not a
    lagging replica.

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
        """See :meth:`ObservationStore.owned`: the owner's set walked, each step read by ``MGET``.

        An entry that expired or was forgotten is left out, as is a damaged one.
        """
        start = len(self._name(owner, ""))
        owned: dict[str, Observation] = {}
        with self._errors():
            async for names in self._named(owner):
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
                            pipe.delete(name)
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
        """See :meth:`ObservationStore.put`: one ``MULTI``/``EXEC`` (or ``DEL``)."""
        name = self._name(owner, key)
        with self._errors():
            if observation is None:
                await self._client.delete(name)
                return
            async with self._client.pipeline(transaction=True) as pipe:
                self._kept(pipe, owner, name, observation)
                await pipe.execute()

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`ObservationStore.forget_owner`: the entries its set names, then the set."""
        with self._errors():
            async for names in self._named(owner):
                await self._client.unlink(*names)
            await self._client.unlink(self._index(owner))

    async def aclose(self) -> None:
        """Close the connections."""
        await self._clients.aclose()

    def _name(self, owner: str, key: str) -> bytes:
        """The Redis key: the prefix, the owner's length, the owner, the file key (unambiguous)."""
        raw_owner = stored_owner(owner)
        return b"%s%d:%s%s" % (self.prefix, len(raw_owner), raw_owner, stored_bytes(key))

    def _index(self, owner: str) -> bytes:
        """The Redis set naming *owner*'s entries (no entry's name starts so)."""
        raw_owner = stored_owner(owner)
        return b"%sseen-by:%d:%s" % (self.prefix, len(raw_owner), raw_owner)

    def _kept(self, pipe: Any, owner: str, name: bytes, observation: Observation) -> None:
        """Queue on *pipe* (in ``MULTI``) the entry *name* set, named in *owner*'s set."""
        index = self._index(owner)
        pipe.set(name, observation.encode(), px=self._expiry)
        pipe.sadd(index, name)
        pipe.pexpire(index, self._expiry)

    @property
    def _expiry(self) -> int:
        """*max_age* in milliseconds (``PX``), at least one."""
        return max(1, round(self.max_age * 1000))

    async def _named(self, owner: str) -> AsyncIterator[list[bytes]]:
        """The names in *owner*'s set, by ``SSCAN`` (``COUNT`` ``_BATCH``), ``_BATCH`` at a time.

        An entry may be named twice, or be gone (expired, deleted).
        """
        batch: list[bytes] = []
        async for name in self._client.sscan_iter(self._index(owner), count=_BATCH):
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
