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

    Shared by the host's processes, surviving restarts. Each update is one
    ``BEGIN IMMEDIATE`` transaction (write-ahead log). A call runs on the event
    loop when the file is free at once, else waits in a worker thread. Entries
    not renewed for *max_age* seconds are removed when the store is opened.

    Raises:
        Unavailable: The file cannot be opened, or is not a SQLite database.

    """

    def __init__(
        self, path: str | Path, *, max_age: float = DEFAULT_MAX_AGE, timeout: float = 10.0
    ) -> None:
        self.path = Path(path)
        self.max_age = max_age
        self._limiter: anyio.CapacityLimiter | None = None  # made in the loop that uses it
        self._waiting = _Connection(partial(self._opened, timeout))  # in a worker thread
        try:
            self._at_once = _Connection(partial(self._opened, 0))  # on the loop: never waits
            with self._using(self._waiting) as db:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
                expired = time.time() - self.max_age
                db.execute("DELETE FROM observations WHERE seen < ?", (expired,))
        except BaseException:
            self._waiting.db.close()
            if hasattr(self, "_at_once"):
                self._at_once.db.close()
            raise

    async def get(self, owner: str, key: str) -> Observation | None:
        """See :meth:`ObservationStore.get`."""
        return await self._run(partial(_get, (stored_bytes(owner), stored_bytes(key))))

    async def update(self, owner: str, key: str, change: Change) -> None:
        """See :meth:`ObservationStore.update`: one ``BEGIN IMMEDIATE`` transaction."""
        await self._run(partial(_update, (stored_bytes(owner), stored_bytes(key)), change))

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`ObservationStore.forget_owner`: one ``DELETE``."""
        await self._run(partial(_forget, stored_bytes(owner)))

    async def aclose(self) -> None:
        """Close the connections."""
        for connection in (self._at_once, self._waiting):
            with connection.lock:
                connection.closed = True
                connection.db.close()

    def _opened(self, timeout: float) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA synchronous=NORMAL")  # (the write-ahead log keeps it safe)
        except sqlite3.Error as error:
            raise self._unavailable(error) from error
        return db

    async def _run(self, call: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return await self._attempt(call, last=False)
        except _ReadOnly:  # a connection SQLite opened read-only, the file being so then
            return await self._attempt(call, last=True)  # (opened again, as it failed)

    async def _attempt(self, call: Callable[[sqlite3.Connection], T], *, last: bool) -> T:
        if self._at_once.lock.acquire(blocking=False):  # (another thread's loop may hold it)
            try:
                with self._using(self._at_once, at_once=True, last=last) as db:
                    return call(db)
            except _Locked:
                pass  # another process holds the file: wait for it off the loop
            finally:
                self._at_once.lock.release()
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)  # one connection: one thread at a time
        waited = partial(self._waited, call, last=last)
        return await anyio.to_thread.run_sync(waited, limiter=self._limiter)

    def _waited(self, call: Callable[[sqlite3.Connection], T], *, last: bool) -> T:
        with self._waiting.lock, self._using(self._waiting, last=last) as db:
            return call(db)

    @contextmanager
    def _using(
        self, connection: _Connection, *, at_once: bool = False, last: bool = True
    ) -> Iterator[sqlite3.Connection]:
        """*connection*'s database, SQLite's errors as ctxfs errors (``_Locked`` if *at_once*).

        After any other error the connection is opened again at its next use (SQLite
        keeps a file it could not write read-only for good). A read-only refusal is
        ``_ReadOnly`` unless this is the *last* attempt.
        """
        try:
            yield connection.usable()
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                if at_once:
                    raise _Locked from error
                raise Busy(
                    f"the observation store {self.path} stayed locked: {error}",
                    hint="Try again; another process holds the store.",
                ) from error
            connection.failed = True
            if "readonly" in str(error) and not last:
                raise _ReadOnly from error
            raise self._unavailable(error) from error
        except sqlite3.Error as error:
            connection.failed = True
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


class _Connection:
    """One SQLite connection, used by one thread at a time, opened again after a failure."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self.connect = connect
        self.db = connect()
        self.lock = threading.Lock()
        self.failed = False  # opened again at its next use
        self.closed = False

    def usable(self) -> sqlite3.Connection:
        """The connection, opened again if it failed (the file set up anew if it was replaced).

        Raises:
            sqlite3.ProgrammingError: The store was closed.

        """
        if self.closed:
            raise sqlite3.ProgrammingError("the observation store is closed")
        if self.failed:
            self.db.close()
            self.db = self.connect()
            self.db.execute(_SCHEMA)
            self.failed = False
        return self.db


class _ReadOnly(Exception):
    """A connection refused a write as read-only: the call is tried once more, on a new one."""


class _Locked(Exception):
    """Another process holds the file: the call waits for it in a worker thread."""


def _get(entry: tuple[bytes, bytes], db: sqlite3.Connection) -> Observation | None:
    row = db.execute(_SELECT, entry).fetchone()
    return None if row is None else Observation.stored(row[0])


def _update(entry: tuple[bytes, bytes], change: Change, db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute(_SELECT, entry).fetchone()
        observation = change(None if row is None else Observation.stored(row[0]))
        if observation is None:
            db.execute("DELETE FROM observations WHERE owner = ? AND key = ?", entry)
        else:
            db.execute(
                "INSERT OR REPLACE INTO observations VALUES (?, ?, ?, ?)",
                (*entry, observation.encode(), time.time()),
            )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # (a COMMIT refused too: the connection is left clean)
            db.execute("ROLLBACK")
        raise


def _forget(owner: bytes, db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM observations WHERE owner = ?", (owner,))
