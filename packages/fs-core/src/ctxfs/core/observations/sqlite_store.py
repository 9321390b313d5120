"""Observations in a SQLite file: they survive restarts, and a host's processes share them."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Final, TypeVar

import anyio

from ctxfs.core.errors import Busy, Unavailable
from ctxfs.core.observations.base import (
    DEFAULT_MAX_AGE,
    Change,
    Observation,
    ObservationStore,
    stored_bytes,
)

__all__ = ["SqliteObservations"]

T = TypeVar("T")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS observations (
    owner BLOB NOT NULL,
    key BLOB NOT NULL,
    observation TEXT NOT NULL,
    seen REAL NOT NULL,
    PRIMARY KEY (owner, key)
) WITHOUT ROWID
"""
_SELECT: Final = "SELECT observation FROM observations WHERE owner = ? AND key = ?"


class SqliteObservations(ObservationStore):
    """Observations in a SQLite file.

    Every process of the host that opens the same file shares them, and they
    survive restarts. Each update is one ``BEGIN IMMEDIATE`` transaction
    (write-ahead log, so readers never wait), run in a worker thread; entries
    not renewed for *max_age* seconds are removed when the store is opened.
    Owners and keys are stored as bytes, so names that are not UTF-8 keep
    their identity. A process killed mid-update leaves the previous entry.

    Raises:
        Unavailable: The file cannot be opened, or is not a SQLite database.

    """

    def __init__(
        self, path: str | Path, *, max_age: float = DEFAULT_MAX_AGE, timeout: float = 10.0
    ) -> None:
        self.path = Path(path)
        self.max_age = max_age
        self._lock = threading.Lock()
        self._limiter: anyio.CapacityLimiter | None = None  # made in the loop that uses it
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise self._unavailable(error) from error
        try:
            with self._using():
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(_SCHEMA)
                expired = time.time() - self.max_age
                self._db.execute("DELETE FROM observations WHERE seen < ?", (expired,))
        except BaseException:
            self._db.close()
            raise

    async def get(self, owner: str, key: str) -> Observation | None:
        """See :meth:`ObservationStore.get`."""
        return await self._run(partial(self._get, (stored_bytes(owner), stored_bytes(key))))

    async def update(self, owner: str, key: str, change: Change) -> None:
        """See :meth:`ObservationStore.update`: one ``BEGIN IMMEDIATE`` transaction."""
        await self._run(partial(self._update, (stored_bytes(owner), stored_bytes(key)), change))

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`ObservationStore.forget_owner`: one ``DELETE``."""
        await self._run(partial(self._forget, stored_bytes(owner)))

    async def aclose(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    async def _run(self, call: Callable[[], T]) -> T:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)  # one connection: one thread at a time
        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    def _get(self, entry: tuple[bytes, bytes]) -> Observation | None:
        with self._using():
            row = self._db.execute(_SELECT, entry).fetchone()
            return None if row is None else Observation.stored(row[0])

    def _update(self, entry: tuple[bytes, bytes], change: Change) -> None:
        with self._using():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(_SELECT, entry).fetchone()
                observation = change(None if row is None else Observation.stored(row[0]))
                if observation is None:
                    self._db.execute("DELETE FROM observations WHERE owner = ? AND key = ?", entry)
                else:
                    self._db.execute(
                        "INSERT OR REPLACE INTO observations VALUES (?, ?, ?, ?)",
                        (*entry, observation.encode(), time.time()),
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _forget(self, owner: bytes) -> None:
        with self._using():
            self._db.execute("DELETE FROM observations WHERE owner = ?", (owner,))

    @contextmanager
    def _using(self) -> Iterator[None]:
        """One thread at a time on the connection; SQLite's errors as ctxfs errors."""
        with self._lock:
            try:
                yield
            except sqlite3.OperationalError as error:
                if "locked" in str(error) or "busy" in str(error):
                    raise Busy(
                        f"the observation store {self.path} stayed locked: {error}",
                        hint="Try again; another process holds the store.",
                    ) from error
                raise self._unavailable(error) from error
            except sqlite3.Error as error:
                raise self._unavailable(error) from error

    def _unavailable(self, error: sqlite3.Error) -> Unavailable:
        return Unavailable(
            f"the observation store {self.path} cannot be used: {error}",
            retryable=False,
            hint="Check that the file is a ctxfs observation store (SQLite) and is writable; "
            "remove a damaged one (observations are then forgotten: read again).",
        )

    def __repr__(self) -> str:
        return f"SqliteObservations({str(self.path)!r})"
