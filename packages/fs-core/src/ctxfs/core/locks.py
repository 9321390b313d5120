"""In-process exclusion per key, shared by tasks and threads, with bounded waits.

Acquisition tries without blocking and sleeps with a capped backoff until the deadline,
so a cancelled waiter leaves no acquisition behind. A forked child holds no lock.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from ctxfs.core.errors import Busy

__all__ = ["KeyedLocks", "acquire_with_backoff", "held_by_another"]

_FIRST_DELAY = 0.0005
_MAX_DELAY = 0.02


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class KeyedLocks:
    """A family of locks, one per key, created on demand and dropped when unused."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._slots: dict[str, _Slot] = {}
        _ALL.add(self)

    @asynccontextmanager
    async def hold(self, key: str, *, timeout: float) -> AsyncIterator[None]:
        """Hold the lock of *key*; raise ``Busy`` if *timeout* seconds pass first."""
        with self._guard:
            slot = self._slots.setdefault(key, _Slot())
            slot.users += 1
        try:
            await acquire_with_backoff(slot.lock.acquire, timeout=timeout, what=key)
            try:
                yield
            finally:
                slot.lock.release()
        finally:
            with self._guard:
                slot.users -= 1
                if not slot.users:
                    del self._slots[key]

    def __len__(self) -> int:
        """The number of keys currently held or waited for."""
        return len(self._slots)

    def _forget_all(self) -> None:
        self._guard = threading.Lock()
        self._slots = {}


async def acquire_with_backoff(
    try_acquire: Callable[[bool], bool], *, timeout: float, what: str
) -> None:
    """Call ``try_acquire(False)`` until it returns True, sleeping in between.

    Raises:
        Busy: *timeout* seconds passed without acquiring.

    """
    deadline = anyio.current_time() + timeout
    delay = _FIRST_DELAY
    while not try_acquire(False):
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            raise held_by_another(what, waited=timeout)
        await anyio.sleep(min(delay, remaining))
        delay = min(delay * 2, _MAX_DELAY)


def held_by_another(path: str, *, waited: float) -> Busy:
    """The refusal of a wait of *waited* seconds for the lock of *path*."""
    return Busy(
        f"{path!r} is being changed by someone else (waited {waited:g}s)",
        path=path,
        details={"waited_seconds": waited},
    )


_ALL: weakref.WeakSet[KeyedLocks] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for locks in list(_ALL):
        locks._forget_all()


os.register_at_fork(after_in_child=_after_fork_in_child)
