"""Observations in a SQLite file: they survive restarts, and a host's processes share them."""

from __future__ import annotations

import sqlite3
import time
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

from ctxfs.core.errors import FsError
from ctxfs.core.observations.base import (
    DEFAULT_MAX_AGE,
    Change,
    Observation,
    ObservationStore,
    stored_bytes,
    stored_owner,
    stored_text,
)
from ctxfs.core.sqlite_file import SqliteFile, immediate

__all__ = ["SqliteObservations"]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS observations (
    owner BLOB NOT NULL,
    key BLOB NOT NULL,
    observation TEXT NOT NULL,
    seen REAL NOT NULL,
    PRIMARY KEY (owner, key)
) WITHOUT ROWID
"""
_SELECT: Final = "SELECT observation, seen FROM observations WHERE owner = ? AND key = ?"
_EXPIRIES_PER_AGE: Final = 4
"""How often, per *max_age*, a store that is written to removes the entries expired."""
_RENEWALS_PER_AGE: Final = 64
"""How often, per *max_age*, an entry that a call leaves as it is gets written anew (renewed)."""


class SqliteObservations(ObservationStore):
    """Observations in a SQLite file, shared by the host's processes, surviving restarts.

    Each update is one ``BEGIN IMMEDIATE`` transaction (write-ahead log); a call that
    leaves the entry as it is (the same file read again) writes nothing, unless the entry
    was last written a 64th of *max_age* ago or more (it is then renewed). A call runs
    on the event loop when the file is free at once, else waits in a worker thread.
    Entries not renewed for *max_age* seconds are removed when the store is opened, and
    again by a write once a quarter of *max_age* has passed since (in a worker thread).

    Raises:
        Unavailable: The file cannot be opened, is not a SQLite database, or was made
            by a ctxfs whose tables differ.

    """

    def __init__(
        self, path: str | Path, *, max_age: float = DEFAULT_MAX_AGE, timeout: float = 10.0
    ) -> None:
        self.path = Path(path)
        self.max_age = max_age
        self._file = SqliteFile(
            self.path,
            schema=[_SCHEMA],
            timeout=timeout,
            what="observation store",
            hint="Check that the file is a ctxfs observation store (SQLite) and is writable; "
            "remove a damaged one (observations are then forgotten: read again).",
        )
        try:
            self._file.now(partial(_expire, self._ages().expired_before))
        except BaseException:
            self._file.close()
            raise
        self._next_expiry = time.monotonic() + self.max_age / _EXPIRIES_PER_AGE

    async def get(self, owner: str, key: str) -> Observation | None:
        """See :meth:`ObservationStore.get`: one not renewed for *max_age* seconds is none."""
        return await self._file.run(partial(_get, _entry(owner, key), self._ages()))

    async def owned(self, owner: str) -> dict[str, Observation]:
        """See :meth:`ObservationStore.owned`: a ``SELECT`` in a worker thread (it may be long)."""
        since = self._ages().expired_before
        return await self._file.run(partial(_owned, stored_owner(owner), since), off_loop=True)

    async def update(self, owner: str, key: str, change: Change) -> None:
        """See :meth:`ObservationStore.update`: a read, then one ``BEGIN IMMEDIATE`` transaction."""
        await self._file.run(partial(_update, _entry(owner, key), self._ages(), change))
        await self._expire_if_due()

    async def put(self, owner: str, key: str, observation: Observation | None) -> None:
        """See :meth:`ObservationStore.put`: a read, then one statement, only where needed."""
        await self._file.run(partial(_put, _entry(owner, key), self._ages(), observation))
        await self._expire_if_due()

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`ObservationStore.forget_owner`: one ``DELETE``."""
        await self._file.run(partial(_forget, stored_owner(owner)))

    async def aclose(self) -> None:
        """Close the connections (once a call under way in a worker thread has ended)."""
        await self._file.aclose()

    def close(self) -> None:
        """Close the connections, blocking (see :meth:`aclose`)."""
        self._file.close()

    async def _expire_if_due(self) -> None:
        """Remove the expired entries if a quarter of *max_age* has passed since the last time.

        A failure is left for the next time: the write before it is done.
        """
        if time.monotonic() < self._next_expiry:
            return
        self._next_expiry = time.monotonic() + self.max_age / _EXPIRIES_PER_AGE
        with suppress(FsError):
            await self._file.run(partial(_expire, self._ages().expired_before), off_loop=True)

    def _ages(self) -> _Ages:
        now = time.time()
        return _Ages(
            expired_before=now - self.max_age, renew_before=now - self.max_age / _RENEWALS_PER_AGE
        )

    def __repr__(self) -> str:
        return f"SqliteObservations({str(self.path)!r})"


@dataclass(frozen=True, kw_only=True)
class _Ages:
    """The times an entry's last write is compared with."""

    expired_before: float
    """An entry last written before it has expired."""
    renew_before: float
    """An entry last written before it is written anew by a call that leaves it as it is."""


def _entry(owner: str, key: str) -> tuple[bytes, bytes]:
    return stored_owner(owner), stored_bytes(key)


def _expire(before: float, db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM observations WHERE seen < ?", (before,))


def _get(entry: tuple[bytes, bytes], ages: _Ages, db: sqlite3.Connection) -> Observation | None:
    return _current(db.execute(_SELECT, entry).fetchone(), ages)


def _owned(owner: bytes, since: float, db: sqlite3.Connection) -> dict[str, Observation]:
    rows = db.execute(
        "SELECT key, observation FROM observations WHERE owner = ? AND seen >= ?", (owner, since)
    ).fetchall()
    owned = {stored_text(bytes(key)): Observation.stored(text) for key, text in rows}
    return {key: seen for key, seen in owned.items() if seen is not None}


def _update(
    entry: tuple[bytes, bytes], ages: _Ages, change: Change, db: sqlite3.Connection
) -> None:
    row = db.execute(_SELECT, entry).fetchone()  # (a change it leaves as it is is done as of it)
    if not _holds(row, ages, change(_current(row, ages))):
        with immediate(db):
            _write(entry, change(_current(db.execute(_SELECT, entry).fetchone(), ages)), db)


def _put(
    entry: tuple[bytes, bytes], ages: _Ages, observation: Observation | None, db: sqlite3.Connection
) -> None:
    if not _holds(db.execute(_SELECT, entry).fetchone(), ages, observation):
        _write(entry, observation, db)


def _holds(row: tuple[str, float] | None, ages: _Ages, observation: Observation | None) -> bool:
    """Whether the entry read as *row* is *observation* already (then nothing need be written).

    One last written before ``ages.renew_before`` is not: it is written anew (renewed).
    """
    if observation is None:
        return _current(row, ages) is None
    return row is not None and row[1] >= ages.renew_before and row[0] == observation.encode()


def _current(row: tuple[str, float] | None, ages: _Ages) -> Observation | None:
    return None if row is None or row[1] < ages.expired_before else Observation.stored(row[0])


def _write(
    entry: tuple[bytes, bytes], observation: Observation | None, db: sqlite3.Connection
) -> None:
    """Store *observation* in one statement (a transaction of its own, or the caller's)."""
    if observation is None:
        db.execute("DELETE FROM observations WHERE owner = ? AND key = ?", entry)
    else:
        db.execute(
            "INSERT OR REPLACE INTO observations VALUES (?, ?, ?, ?)",
            (*entry, observation.encode(), time.time()),
        )


def _forget(owner: bytes, db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM observations WHERE owner = ?", (owner,))
