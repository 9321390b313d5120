"""The Redis client of a shared store (observations, sessions; ``ctxfs-core[redis]``)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncGenerator
from functools import partial
from typing import Any, Final

from ctxfs.core.errors import InvalidArgument, Unavailable

try:
    import redis.asyncio as aioredis
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError, ResponseError, WatchError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as missing:  # pragma: no cover - the extra is part of the dev environment
    raise InvalidArgument(
        "ctxfs's Redis stores need the redis package",
        hint="Install ctxfs-core[redis] (or the redis package).",
    ) from missing

__all__ = ["LoopClients", "RedisError", "ResponseError", "WatchError", "unavailable"]


class LoopClients:
    """redis-py asyncio clients of the server at *url*, one per event loop.

    A client serves only the loop it was first used in: so one store may serve several threads'
    loops, or loops run one after another (``asyncio.run`` per call).

    Args:
        url: The server.
        timeout: Seconds to connect, and to wait for each answer.
        shown: The store, as messages name it.
        instead: What to use on another event loop than asyncio's (a message's hint).

    Raises:
        InvalidArgument: *url* is no usable Redis URL.

    """

    def __init__(self, url: str, *, timeout: float, shown: str, instead: str) -> None:
        self.shown, self.instead = shown, instead
        self._opened = partial(
            aioredis.from_url, url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        try:
            self.unbound = self._opened()
            """A client no loop uses (it checks the URL; scripts are registered on it)."""
            self.unbound.connection_pool.make_connection()  # type: ignore[no-untyped-call]  # (its options: none unknown)
        except (ValueError, TypeError, RedisError) as error:
            raise InvalidArgument(
                f"{shown} is not a usable Redis URL: {error}",
                hint="Write redis://HOST:PORT/DB (or rediss://, unix:///SOCKET).",
            ) from error
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._closers: dict[asyncio.AbstractEventLoop, AsyncGenerator[None]] = {}
        self._lock = threading.Lock()

    def current(self) -> Any:
        """The running loop's client (made at its first use, closed when the loop shuts down).

        Raises:
            InvalidArgument: The running loop is not asyncio's.

        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise InvalidArgument(
                f"the {self.shown} runs on asyncio only (redis-py's client)",
                hint=f"Run ctxfs on asyncio, or use {self.instead}.",
            ) from None
        client = self._clients.get(loop)
        if client is None:
            with self._lock:
                for closed in [other for other in self._closers if other.is_closed()]:
                    del self._closers[closed]  # (shut down without closing its generators)
                client = self._clients.get(loop)
                if client is None:
                    client = self._clients[loop] = self._opened()
                    self._closers[loop] = _closer(client, self._closers, loop)
        return client

    async def aclose(self) -> None:
        """Close every loop's client: this loop's here, another running loop's in that loop.

        A loop closed without shutting down its async generators (``asyncio.run`` does) leaves
        its client's connections to the garbage collector.
        """
        current = asyncio.get_running_loop()
        elsewhere = []
        for loop, closer in list(self._closers.items()):
            if loop is current:
                await closer.aclose()
            elif loop.is_running():
                closing = asyncio.run_coroutine_threadsafe(closer.aclose(), loop)
                elsewhere.append(asyncio.wrap_future(closing))
        self._closers.clear()
        self._clients.clear()
        with contextlib.suppress(TimeoutError):  # (each loop's failure is its own: gathered)
            await asyncio.wait_for(asyncio.gather(*elsewhere, return_exceptions=True), _CLOSING)


_CLOSING: Final = 5.0
"""Seconds :meth:`LoopClients.aclose` waits for other loops to close their clients."""


def _closer(
    client: Any,
    closers: dict[asyncio.AbstractEventLoop, AsyncGenerator[None]],
    loop: asyncio.AbstractEventLoop,
) -> AsyncGenerator[None]:
    """An async generator, started in *loop*, that closes *client* when it is closed.

    The loop closes the async generators started in it as it shuts down (``asyncio.run`` does),
    so a client outlives no loop; *closers* holds it until then.
    """

    async def closing() -> AsyncGenerator[None]:
        try:
            yield
        finally:
            closers.pop(loop, None)
            await client.aclose()

    started = closing()
    with contextlib.suppress(StopIteration):
        started.__anext__().send(None)  # (to its yield, which awaits nothing: the loop knows it)
    return started


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
