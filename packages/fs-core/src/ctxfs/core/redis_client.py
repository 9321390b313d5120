"""The Redis client of a shared store (observations, sessions; ``ctxfs-core[redis]``)."""

from __future__ import annotations

import asyncio
from typing import Any

from ctxfs.core.errors import InvalidArgument, Unavailable

try:
    import redis.asyncio as aioredis
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError, WatchError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as missing:  # pragma: no cover - the extra is part of the dev environment
    raise InvalidArgument(
        "ctxfs's Redis stores need the redis package",
        hint="Install ctxfs-core[redis] (or the redis package).",
    ) from missing

__all__ = ["RedisError", "WatchError", "opened_client", "require_asyncio", "unavailable"]


def opened_client(url: str, *, timeout: float, shown: str) -> Any:
    """An asyncio client of the server at *url* (*shown*: the store, as messages name it).

    Raises:
        InvalidArgument: *url* is no usable Redis URL.

    """
    try:
        return aioredis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    except (ValueError, TypeError, RedisError) as error:
        raise InvalidArgument(
            f"{shown} is not a usable Redis URL: {error}",
            hint="Write redis://HOST:PORT/DB (or rediss://, unix:///SOCKET).",
        ) from error


def unavailable(error: RedisError, shown: str) -> Unavailable:
    """*error* as ``Unavailable`` (retryable if the server was unreachable or slow)."""
    transient = isinstance(error, RedisConnectionError | RedisTimeoutError)
    return Unavailable(
        f"the {shown} cannot be used: {error}",
        retryable=transient,
        hint="Check that the Redis server runs and the URL is right; nothing was changed."
        if transient
        else "Check the Redis URL, its credentials and the server's state.",
    )


def require_asyncio(what: str, instead: str) -> None:
    """Refuse any other event loop than asyncio's (redis-py's client runs on it only).

    Raises:
        InvalidArgument: The running loop is not asyncio's.

    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise InvalidArgument(
            f"Redis {what} run on asyncio only (redis-py's client)",
            hint=f"Run ctxfs on asyncio, or use {instead}.",
        ) from None
