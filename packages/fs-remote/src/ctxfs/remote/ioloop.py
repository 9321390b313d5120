"""Run the stores' asyncio clients from any anyio event loop.

fsspec's async filesystems, aiobotocore, aiohttp, the Azure SDK and asyncssh all
need asyncio, while ctxfs runs under asyncio or trio. Every store call therefore
runs on fsspec's own IO loop (a daemon thread it starts once per process, and
restarts after a fork); the caller's task waits in a worker thread for the result.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

import anyio.to_thread
from fsspec.asyn import get_loop

__all__ = ["io_loop", "on_io_loop"]

P = ParamSpec("P")
T = TypeVar("T")


def io_loop() -> asyncio.AbstractEventLoop:
    """The IO loop of fsspec (started on first use)."""
    loop: asyncio.AbstractEventLoop = get_loop()
    return loop


async def on_io_loop(fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
    """Await ``fn(*args, **kwargs)`` on the IO loop; cancelling the caller cancels it there."""

    async def call() -> T:
        return await fn(*args, **kwargs)

    # A fresh context: the caller's (e.g. sniffio saying "trio") must not leak into the IO loop.
    future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, call(), io_loop())
    try:
        return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
    except BaseException:
        future.cancel()
        raise
