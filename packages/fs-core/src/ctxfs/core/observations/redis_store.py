"""Observations in a Redis server: every host that uses it shares them."""

from __future__ import annotations

import asyncio
from typing import Any, Final

import anyio

from ctxfs.core.errors import Busy, InvalidArgument, Unavailable
from ctxfs.core.observations.base import (
    DEFAULT_MAX_AGE,
    Change,
    Observation,
    ObservationStore,
    shown_url,
    stored_bytes,
)

try:
    import redis.asyncio as aioredis
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError, WatchError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as missing:  # pragma: no cover - the extra is part of the dev environment
    raise InvalidArgument(
        "Redis observations need the redis package",
        hint="Install ctxfs-core[redis] (or the redis package).",
    ) from missing

__all__ = ["RedisObservations"]

_CONFLICT_SECONDS: Final = 10.0
"""How long an update retries while other writers keep changing its entry."""


class RedisObservations(ObservationStore):
    """Observations in a Redis server, shared by every process and host that uses it.

    One Redis string per entry; every update is a ``WATCH``/``MULTI`` transaction,
    retried on conflict, that renews the expiry (*max_age*). Point the URL at a
    primary, not a lagging replica.

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
        try:
            self._client: Any = aioredis.from_url(
                url, socket_timeout=timeout, socket_connect_timeout=timeout
            )
        except (ValueError, TypeError, RedisError) as error:
            raise InvalidArgument(
                f"{self!r} is not a usable Redis URL: {error}",
                hint="Write redis://HOST:PORT/DB (or rediss://, unix:///SOCKET).",
            ) from error

    async def get(self, owner: str, key: str) -> Observation | None:
        """See :meth:`ObservationStore.get`."""
        _require_asyncio()
        try:
            return Observation.stored(await self._client.get(self._name(owner, key)))
        except RedisError as error:
            raise self._unavailable(error) from error

    async def update(self, owner: str, key: str, change: Change) -> None:
        """See :meth:`ObservationStore.update`: ``WATCH``, read, ``MULTI``/``EXEC``, retried."""
        _require_asyncio()
        name = self._name(owner, key)
        expiry = max(1, round(self.max_age * 1000))
        deadline = anyio.current_time() + _CONFLICT_SECONDS
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        await pipe.watch(name)
                        observation = change(Observation.stored(await pipe.get(name)))
                        pipe.multi()
                        if observation is None:
                            pipe.delete(name)
                        else:
                            pipe.set(name, observation.encode(), px=expiry)
                        await pipe.execute()
                    except WatchError:
                        if anyio.current_time() > deadline:
                            raise Busy(
                                "other writers kept changing the same observation",
                                hint="Try again.",
                            ) from None
                    else:
                        return
        except RedisError as error:
            raise self._unavailable(error) from error

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`ObservationStore.forget_owner`: the owner's keys, found by ``SCAN``."""
        _require_asyncio()
        pattern = _glob_escaped(self._name(owner, "")) + b"*"
        try:
            batch: list[bytes] = []
            async for name in self._client.scan_iter(match=pattern, count=1000):
                batch.append(name)
                if len(batch) >= 1000:
                    await self._client.unlink(*batch)
                    batch.clear()
            if batch:
                await self._client.unlink(*batch)
        except RedisError as error:
            raise self._unavailable(error) from error

    async def aclose(self) -> None:
        """Close the connections."""
        await self._client.aclose()

    def _name(self, owner: str, key: str) -> bytes:
        """The Redis key: the prefix, the owner's length, the owner, the file key (unambiguous)."""
        raw_owner = stored_bytes(owner)
        return b"%s%d:%s%s" % (self.prefix, len(raw_owner), raw_owner, stored_bytes(key))

    def _unavailable(self, error: RedisError) -> Unavailable:
        transient = isinstance(error, RedisConnectionError | RedisTimeoutError)
        return Unavailable(
            f"the observation store {self!r} cannot be used: {error}",
            retryable=transient,
            hint="Check that the Redis server runs and the URL is right; nothing was changed."
            if transient
            else "Check the Redis URL, its credentials and the server's state.",
        )

    def __repr__(self) -> str:
        return f"RedisObservations({shown_url(self._url)!r})"


def _glob_escaped(name: bytes) -> bytes:
    """*name* matched literally by a Redis ``MATCH`` pattern."""
    return bytes(b for byte in name for b in ((92, byte) if byte in b"*?[]\\^-" else (byte,)))


def _require_asyncio() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise InvalidArgument(
            "Redis observations run on asyncio only (redis-py's client)",
            hint="Run ctxfs on asyncio, or use sqlite:/// observations.",
        ) from None
