"""The cooperative lock of SFTP writers: a lock file beside the file, holding a lease.

``.ctxfs-lock.<name>`` is taken by exclusive create and holds JSON
``{"owner": token, "expires": time}``; other writers wait for it (then ``Busy``).
A lock past its lease, or one older than a lease that holds none (its writer
crashed while filling it), is broken by renaming it away, which only one breaker
can win. A writer that lost its connection finds its own token there and carries
on ("reclaimed"). Only the owner removes a lock, and a change is published (renamed
into place, once uploaded) under it only while a third of the lease is left.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import posixpath
import random
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, Final, Literal

import asyncssh

from ctxfs.core import Busy, Stale
from ctxfs.core.kit import MAX_NAME_BYTES, RESERVED_PREFIX
from ctxfs.remote.leases import lease_expiry
from ctxfs.remote.sftp.client import is_missing

__all__ = ["DEFAULT_LEASE", "DEFAULT_LOCK_TIMEOUT", "LOCK_PREFIX", "Leases"]

LOCK_PREFIX: Final = f"{RESERVED_PREFIX}lock."
DEFAULT_LEASE: Final = 30.0
"""Seconds a lock's lease lasts; a writer holds it for milliseconds."""
DEFAULT_LOCK_TIMEOUT: Final = 10.0
"""Seconds a write waits for another writer's lock before ``Busy``."""

Taken = Literal["taken", "reclaimed"]


class Leases:
    """The lock protocol of one writer (*owner*: its host and process).

    Args:
        owner: Names this writer in its locks.
        lease: Seconds a lock lasts before others may break it.
        timeout: Seconds to wait for another writer's lock.

    """

    def __init__(self, *, owner: str, lease: float, timeout: float) -> None:
        self.owner = owner
        self.lease = lease
        self.timeout = timeout
        self.margin = lease / 3
        """Seconds a lease must still have for a change to be published under it."""

    def token(self) -> str:
        """A new token naming one hold of a lock by this writer."""
        return f"{self.owner}:{uuid.uuid4().hex}"

    @asynccontextmanager
    async def held(
        self, sftp: asyncssh.SFTPClient, full: str, path: str, token: str
    ) -> AsyncIterator[bool]:
        """Hold the lock of file *full* as *token*; yield whether it was ours already.

        One that cannot be given back at the end (a lost connection) lapses with its lease.
        """
        reclaimed = await self.take(sftp, full, path, token)
        try:
            yield reclaimed
        finally:
            with suppress(asyncssh.Error, OSError):
                await asyncio.shield(self.release(sftp, full, token))

    async def take(self, sftp: asyncssh.SFTPClient, full: str, path: str, token: str) -> bool:
        """Take the lock of file *full*; return whether it was *token*'s already.

        Raises:
            Busy: Another writer held it for the whole timeout.

        """
        lock = _lock_of(full)
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        while (taken := await self._try(sftp, lock, token)) is None:
            if time.monotonic() > deadline:
                raise Busy(
                    f"{path} is being written by another writer (lock {posixpath.basename(lock)})",
                    path=path,
                )
            await asyncio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.1)
        return taken == "reclaimed"

    async def remaining(self, sftp: asyncssh.SFTPClient, full: str, token: str) -> float | None:
        """Seconds left on the lease of file *full*'s lock if *token* holds it, else None."""
        held = await self._lease(sftp, _lock_of(full))
        if held is None or held.get("owner") != token:
            return None
        return lease_expiry(held, self.lease) - time.time()

    async def still_held(self, sftp: asyncssh.SFTPClient, full: str, path: str, token: str) -> None:
        """Return while *token* holds file *full*'s lock with a third of its lease left.

        Called just before a change is published (the rename): a slow upload cannot outlive it.

        Raises:
            Stale: The lease ran out or nearly has (another writer may break it).

        """
        left = await self.remaining(sftp, full, token)
        if left is None or left < self.margin:
            raise Stale(
                f"the lock on {path} ran out before the change was written; nothing was written",
                path=path,
                details={"lease_seconds_left": left},
            )

    async def release(self, sftp: asyncssh.SFTPClient, full: str, token: str) -> None:
        """Remove the lock of file *full* if it is still *token*'s (a lost server is raised)."""
        lock = _lock_of(full)
        try:
            held = await self._lease(sftp, lock)
        except ValueError:
            return  # being written by another writer: not ours
        if held is not None and held.get("owner") == token:
            try:
                await sftp.remove(lock)
            except asyncssh.SFTPError as exc:
                if not is_missing(exc):
                    raise

    async def _try(self, sftp: asyncssh.SFTPClient, lock: str, token: str) -> Taken | None:
        """Take the lock file, or find it ours already; None while someone else holds it."""
        lease = json.dumps({"owner": token, "expires": time.time() + self.lease}).encode()
        try:
            async with sftp.open(lock, "xb") as handle:
                await handle.write(lease)
        except asyncssh.SFTPError as exc:
            if exc.code not in (asyncssh.FX_FAILURE, asyncssh.FX_FILE_ALREADY_EXISTS):
                raise  # FX_FAILURE: "exists", on protocol 3
        else:
            return "taken"
        try:
            held = await self._lease(sftp, lock)
        except ValueError:  # being written right now, or left half-written by a crash
            if await self._older_than_a_lease(sftp, lock):
                await self._break(sftp, lock)
            return None
        if held is None:
            return None  # released meanwhile: try again
        if held.get("owner") == token:
            return "reclaimed"
        if lease_expiry(held, self.lease) < time.time():  # (a damaged lease has ended)
            await self._break(sftp, lock)
        return None

    async def _lease(self, sftp: asyncssh.SFTPClient, lock: str) -> dict[str, Any] | None:
        """What *lock* holds, None if there is no such lock.

        Raises:
            ValueError: It holds no lease (yet): being written, or a crash's leftover.

        """
        try:
            async with sftp.open(lock, "rb") as handle:
                held = json.loads(await handle.read() or b"null")
        except asyncssh.SFTPError as exc:
            if is_missing(exc):
                return None
            raise
        if not isinstance(held, dict):
            raise ValueError(f"{lock} holds no lease")  # noqa: TRY004 - read as a parse failure
        return held

    async def _older_than_a_lease(self, sftp: asyncssh.SFTPClient, lock: str) -> bool:
        try:
            modified = (await sftp.stat(lock)).mtime
        except asyncssh.SFTPError:
            return False
        return modified is not None and time.time() - float(modified) > self.lease

    async def _break(self, sftp: asyncssh.SFTPClient, lock: str) -> None:
        """Remove a crashed writer's lock; only one breaker wins the rename."""
        broken = f"{lock}.broken.{uuid.uuid4().hex}"
        try:
            await sftp.rename(lock, broken)
        except asyncssh.SFTPError:
            return
        with suppress(asyncssh.SFTPError):
            await sftp.remove(broken)


def _lock_of(full: str) -> str:
    """The lock file of file *full*: beside it, named after it (hashed where that is too long)."""
    directory, name = posixpath.split(full)
    lock = f"{LOCK_PREFIX}{name}"
    if len(os.fsencode(lock)) > MAX_NAME_BYTES:
        lock = f"{LOCK_PREFIX}sha256.{hashlib.sha256(os.fsencode(name)).hexdigest()}"
    return posixpath.join(directory, lock)
