"""Conditional removals of one object, one at a time: a lock object each remover takes in turn.

A store answers a conditional ``DELETE`` whose object is gone the same way, whether another
remover took it or this remover's own request landed and was sent again (aiohttp repeats an
idempotent request once when its connection drops) with the first answer lost. Removers that
take turns leave only the second: two moves of one file cannot both succeed.

The lock of an object ``DIR/NAME`` is ``DIR/.ctxfs-removing-HASH`` beside it (so every root
holding the object finds the same lock), made by a create-only write carrying the holder's
token as its write id (a lost answer is told by a look) and JSON ``{"token", "expires"}``.
Another remover waits for it (then ``Busy``); one past its lease (its holder crashed) is
removed at its version, which only one breaker can do. Hosts' clocks are taken to agree to
well within a lease. A holder sends no request once a third of its lease is over (an attempt
started earlier ends within its client's timeouts: S3's, 10 s to connect and 60 s to read), and
removes its lock at the version it made, unless its removal's outcome is unknown: then the lock
lapses with its lease, so that no other remover acts while a late request may still land.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any, Final

import anyio

from ctxfs.core import (
    AlreadyExists,
    Busy,
    FsError,
    InvalidArgument,
    NotFound,
    Stale,
    Unavailable,
)
from ctxfs.core.kit import ABSENT, RESERVED_PREFIX, ReadRequest, Version
from ctxfs.remote.leases import lease_expiry
from ctxfs.remote.store import ObjectStore

__all__ = ["REMOVAL_LEASE", "REMOVAL_TIMEOUT", "HeldLock", "RemovalLocks"]

REMOVAL_LEASE: Final = 120.0
"""Seconds a removal lock lasts; a removal holds it for a few requests. More than three
times the longest attempt the store's client may make."""
REMOVAL_TIMEOUT: Final = 10.0
"""Seconds a removal waits for another's lock before ``Busy``."""

Io = Callable[..., Awaitable[Any]]
"""How a call reaches the store: the backend's, with its retries (``io(what, fn, *args)``)."""


@dataclass(kw_only=True)
class HeldLock:
    """A removal lock held."""

    send_by: float
    """The ``time.monotonic()`` after which no request may be sent under it."""
    lapsing: bool = False
    """Left to lapse with its lease rather than removed (:meth:`lapse`)."""

    def lapse(self) -> None:
        """Leave the lock to lapse: a request sent under it may still land."""
        self.lapsing = True


class RemovalLocks:
    """The removal locks of one store's objects (see the module's docstring).

    Args:
        store: The store the locks live in.
        io: The backend's way of calling the store (on its IO loop, with retries).
        lease: Seconds a lock lasts before another remover may break it.
        timeout: Seconds to wait for another remover's lock.

    Raises:
        InvalidArgument: *lease* or *timeout* is not a positive number of seconds.

    """

    def __init__(
        self,
        store: ObjectStore,
        io: Io,
        *,
        lease: float = REMOVAL_LEASE,
        timeout: float = REMOVAL_TIMEOUT,
    ) -> None:
        for name, seconds in (("removal_lease", lease), ("removal_timeout", timeout)):
            given: object = seconds  # (a caller without type checks may pass anything)
            if not isinstance(given, int | float) or not 0 < given < float("inf"):
                raise InvalidArgument(
                    f"{name} must be a positive number of seconds, not {seconds!r}",
                    details={"field": name},
                )
        self.store, self.io = store, io
        self.lease, self.timeout = float(lease), float(timeout)

    @asynccontextmanager
    async def held(self, key: str, path: str) -> AsyncIterator[HeldLock]:
        """Hold the removal lock of *key* (file *path*, as errors name it).

        Raises:
            Busy: Another remover held it for *timeout* seconds, or the store was unavailable
                while it was taken: nothing was removed.

        """
        parent, _, name = key.rpartition("/")
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:40]
        lock = f"{parent}/{RESERVED_PREFIX}removing-{digest}".lstrip("/")
        token = uuid.uuid4().hex
        try:
            version, taken_at = await self._take(lock, path, token)
        except BaseException as failure:
            with anyio.CancelScope(shield=True), suppress(FsError):
                await self._let_go(lock, path, token)  # (its create may have landed unanswered)
            if not isinstance(failure, Unavailable):
                raise
            raise Busy(
                f"{path} could not be locked for its removal ({failure.message}); "
                "nothing was removed",
                path=path,
            ) from failure
        held = HeldLock(send_by=taken_at + self.lease / 3)
        try:
            yield held
        finally:
            if not held.lapsing:  # (if that fails, another broke it, or it lapses)
                with anyio.CancelScope(shield=True), suppress(FsError):
                    await self.io(path, self.store.remove, lock, expect=version)

    async def _take(self, lock: str, path: str, token: str) -> tuple[Version, float]:
        """The lock's version, and the ``time.monotonic()`` before the write of its lease."""
        deadline, delay = anyio.current_time() + self.timeout, 0.005
        while True:
            lease = {"token": token, "expires": time.time() + self.lease}
            started = time.monotonic()
            try:
                version = await self.io(
                    path, self.store.put, lock, json.dumps(lease).encode(),
                    expect=ABSENT, write_id=token,
                )  # fmt: skip
            except AlreadyExists:
                held = await self._held(lock, path)
            else:
                return version, started
            if held is not None:
                version, holder = held
                if holder.get("token") == token:
                    return version, started  # the answer to our create was lost: it landed
                if lease_expiry(holder, self.lease) < time.time():  # its holder crashed
                    await self._break(lock, path, version)
                    continue
            if anyio.current_time() > deadline:
                raise Busy(
                    f"{path} is being moved or deleted by someone else (waited {self.timeout:g}s)",
                    path=path,
                    details={"waited_seconds": self.timeout},
                )
            await anyio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.5)

    async def _held(self, lock: str, path: str) -> tuple[Version, dict[str, Any]] | None:
        """The lock's version and lease; None if it is gone (then take it again)."""
        try:
            data, info = await self.io(path, self.store.get, lock, ReadRequest())
        except NotFound:
            return None
        try:
            holder = json.loads(data)
        except ValueError:
            holder = {}  # (no store writes half an object: a foreign one, broken as expired)
        return info.version, holder if isinstance(holder, dict) else {}

    async def _break(self, lock: str, path: str, version: Version) -> None:
        """Remove an expired lock at *version*: only one breaker removes it."""
        with suppress(NotFound, Stale):  # (another breaker did, or a new holder took it)
            await self.io(path, self.store.remove, lock, expect=version)

    async def _let_go(self, lock: str, path: str, token: str) -> None:
        """Remove the lock if *token* holds it (a create that landed, its answer lost)."""
        held = await self._held(lock, path)
        if held is not None and held[1].get("token") == token:
            await self._break(lock, path, held[0])
