"""Conditional removals of one object, one at a time: a lock object each remover takes in turn.

A store answers a conditional ``DELETE`` whose object is gone the same way, whether another
remover took it or this remover's own request landed and was sent again (aiohttp repeats an
idempotent request once when its connection drops) with the first answer lost. Removers that
take turns leave only the second: two moves of one file cannot both succeed.

The lock of a key is the object ``.ctxfs-removing-HASH`` at the root, made by a create-only
write carrying the holder's write id (so a lost answer is told by a look) and JSON
``{"token": ..., "expires": time}``. Another remover waits for it (then ``Busy``); one past its
lease (its holder crashed) is removed at its version, which only one breaker can do. The holder
removes it at the version it made; if that fails, it lapses with its lease.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import anyio

from ctxfs.core import AlreadyExists, Busy, FsError, NotFound, Stale
from ctxfs.core.kit import ABSENT, RESERVED_PREFIX, ReadRequest, Version
from ctxfs.remote.keys import KeySpace
from ctxfs.remote.store import ObjectStore

__all__ = ["REMOVAL_LEASE", "REMOVAL_TIMEOUT", "RemovalLocks"]

REMOVAL_LEASE: Final = 30.0
"""Seconds a removal lock lasts; a removal holds it for a few requests."""
REMOVAL_TIMEOUT: Final = 10.0
"""Seconds a removal waits for another's lock before ``Busy``."""

Io = Callable[..., Awaitable[Any]]
"""How a call reaches the store: the backend's, with its retries (``io(what, fn, *args)``)."""


class RemovalLocks:
    """The removal locks of one store's keys (see the module's docstring).

    Args:
        store: The store the locks live in.
        keys: Where its internal objects go.
        io: The backend's way of calling the store (on its IO loop, with retries).
        lease: Seconds a lock lasts before another remover may break it.
        timeout: Seconds to wait for another remover's lock.

    """

    def __init__(
        self,
        store: ObjectStore,
        keys: KeySpace,
        io: Io,
        *,
        lease: float = REMOVAL_LEASE,
        timeout: float = REMOVAL_TIMEOUT,
    ) -> None:
        self.store, self.keys, self.io = store, keys, io
        self.lease, self.timeout = lease, timeout

    @asynccontextmanager
    async def held(self, key: str, path: str) -> AsyncIterator[None]:
        """Hold the removal lock of *key* (file *path*, as errors name it).

        Raises:
            Busy: Another remover held it for *timeout* seconds.

        """
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:40]
        lock = self.keys.internal(f"{RESERVED_PREFIX}removing-{digest}")
        token = uuid.uuid4().hex
        version = await self._take(lock, path, token)
        try:
            yield
        finally:
            # (if that fails, another broke it as expired, or it lapses with its lease)
            with anyio.CancelScope(shield=True), suppress(FsError):
                await self.io(path, self.store.remove, lock, expect=version)

    async def _take(self, lock: str, path: str, token: str) -> Version:
        deadline, delay = anyio.current_time() + self.timeout, 0.005
        while True:
            lease = {"token": token, "expires": time.time() + self.lease}
            try:
                return await self.io(  # type: ignore[no-any-return]
                    path, self.store.put, lock, json.dumps(lease).encode(),
                    expect=ABSENT, write_id=token,
                )  # fmt: skip
            except AlreadyExists:
                held = await self._held(lock, path)
            if held is not None:
                version, holder = held
                if holder.get("token") == token:
                    return version  # the answer to our create was lost: it landed
                if float(holder.get("expires", 0.0)) < time.time():  # its holder crashed
                    await self._break(lock, path, version)
                    continue
            if anyio.current_time() > deadline:
                raise Busy(
                    f"{path} is being moved or deleted by someone else (waited {self.timeout:g}s)",
                    path=path,
                    details={"waited_seconds": self.timeout},
                )
            await anyio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.2)

    async def _held(self, lock: str, path: str) -> tuple[Version, dict[str, Any]] | None:
        """The lock's version and lease; None if it is gone (then take it again)."""
        try:
            data, info = await self.io(path, self.store.get, lock, ReadRequest())
        except NotFound:
            return None
        try:
            holder = json.loads(data)
        except ValueError:
            holder = {}  # (no store writes half an object: another writer's, not ours)
        return info.version, holder if isinstance(holder, dict) else {}

    async def _break(self, lock: str, path: str, version: Version) -> None:
        """Remove an expired lock at *version*: only one breaker removes it."""
        with suppress(NotFound, Stale):  # (another breaker did, or a new holder took it)
            await self.io(path, self.store.remove, lock, expect=version)
