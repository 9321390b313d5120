"""The SQLite file of a shared store (observations, sessions): connections, threads, errors.

A call runs on the event loop when the file is free at once, else waits in a worker
thread (a long call that must not wait runs in a thread, ``Busy`` if the file is in use).
The log is copied back into the file (checkpointed) in a worker thread too, never on the
loop. SQLite's errors become ``Busy`` and ``Unavailable``; a failed connection is opened
again. A file whose tables differ from the schema's is refused at opening.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Final, TypeVar

import anyio

from ctxfs.core.errors import Busy, FsError, InvalidArgument, Unavailable

__all__ = ["CHECKPOINT_CHANGES", "SqliteFile", "immediate"]

CHECKPOINT_CHANGES: Final = 512
"""Rows the calls on the event loop change between two checkpoints (each in a worker thread)."""

T = TypeVar("T")


class SqliteFile:
    """The file at *path* (write-ahead log), its *schema* made on opening.

    Args:
        path: The file.
        schema: The statements that set it up (``CREATE ... IF NOT EXISTS``), run at
            opening and whenever a connection is opened again.
        timeout: Seconds a call waits for another process's lock before ``Busy``.
        what: The store, as messages name it (``observation store``).
        hint: What to do when the file cannot be used (``Unavailable``'s hint).

    Raises:
        Unavailable: The file cannot be opened, is not a SQLite database, or has a table
            the schema declares otherwise (made by another version of ctxfs).

    """

    def __init__(
        self, path: Path, *, schema: Sequence[str], timeout: float, what: str, hint: str
    ) -> None:
        if str(path) in ("", ":memory:") or "\x00" in str(path):
            raise InvalidArgument(
                f"the {what} must be a file, not {str(path)!r}",
                hint="Name a file (./:memory: for one so named); use memory: for this process.",
            )
        self.path = path
        self.schema = tuple(schema)
        self.what = what
        self.hint = hint
        self._limiters = threading.local()
        """Each thread's (its loop's) limiter of the waits in worker threads: one at a time."""
        self._waiting = _Connection(partial(self._opened, timeout), self)  # in a worker thread
        try:
            self._at_once = _Connection(partial(self._opened, 0, on_loop=True), self)  # never waits
            self._called(self._waiting, self._opening)
        except BaseException:
            self._waiting.db.close()
            if hasattr(self, "_at_once"):
                self._at_once.db.close()
            raise

    def _opening(self, db: sqlite3.Connection) -> None:
        db.execute("PRAGMA journal_mode=WAL")
        self._check_layout(db)
        self.set_up(db)

    def set_up(self, db: sqlite3.Connection) -> None:
        """Run the schema on *db*."""
        for statement in self.schema:
            db.execute(statement)

    def now(self, call: Callable[[sqlite3.Connection], T]) -> T:
        """``call(db)`` in this thread, waiting for the file (for a store's constructor).

        Raises:
            Unavailable: The file cannot be used.
            Busy: Another process held it past the timeout.

        """
        with self._waiting.lock:
            return self._called(self._waiting, call)

    async def run(
        self, call: Callable[[sqlite3.Connection], T], *, off_loop: bool = False, wait: bool = True
    ) -> T:
        """``call(db)``: on the loop if the file is free now (unless *off_loop*), else in a thread.

        *call* makes its own transaction (``BEGIN IMMEDIATE`` to write); it may run
        twice (a connection SQLite opened read-only is opened again), never half. Unless
        *wait*, a file in use now is ``Busy`` at once (*call* then runs on the loop, or in
        a thread if *off_loop*).

        Raises:
            Unavailable: The file cannot be used.
            Busy: Another process held it past the timeout (or now, unless *wait*).

        """
        try:
            result = await self._attempt(call, last=False, off_loop=off_loop, wait=wait)
        except _ReadOnly:  # a connection SQLite opened read-only, the file being so then
            result = await self._attempt(call, last=True, off_loop=off_loop, wait=wait)
        if self._at_once.changes_since_checkpoint() >= CHECKPOINT_CHANGES:
            await self._checkpoint()
        return result

    async def aclose(self) -> None:
        """:meth:`close` in a worker thread: a call under way there ends first, off the loop."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Close the connections; the file may not be used afterwards."""
        for connection in (self._at_once, self._waiting):
            with connection.lock:
                connection.closed = True
                connection.db.close()

    def _check_layout(self, db: sqlite3.Connection) -> None:
        """Refuse a file whose tables differ from the schema's (made by another ctxfs)."""
        declared = sqlite3.connect(":memory:")
        try:
            self.set_up(declared)
            for (table,) in declared.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                found = _columns(db, table)
                if found and found != _columns(declared, table):
                    raise Unavailable(
                        f"the {self.what} {self.path} was made by another version of ctxfs "
                        f"(its table {table} differs)",
                        retryable=False,
                        hint=self.hint,
                        details={"other_layout": str(self.path)},
                    )
        finally:
            declared.close()

    async def _checkpoint(self) -> None:
        """Copy the log written on the loop back into the file, in a worker thread.

        The connection used on the loop never does (its own automatic checkpoint, a few
        milliseconds of ``fsync``, would stall every call meanwhile). A checkpoint that
        cannot run now is left to the next: the changes it would copy are committed already,
        and the call that was made is not cancelled after the fact.
        """
        self._at_once.checkpointed()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._checkpoint_now)

    def _checkpoint_now(self) -> None:
        """A passive checkpoint through the thread's connection, unless it is in use now."""
        if not self._waiting.lock.acquire(blocking=False):
            return  # (a call of its may wait for another process: the next mark will do)
        try:
            with suppress(FsError):
                self._called(self._waiting, _passive_checkpoint)
        finally:
            self._waiting.lock.release()

    def _opened(self, timeout: float, *, on_loop: bool = False) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise self._unavailable(error) from error
        try:
            db.execute("PRAGMA synchronous=NORMAL")  # (the write-ahead log keeps it safe)
            if on_loop:
                db.execute("PRAGMA wal_autocheckpoint=0")  # (see _checkpoint)
        except sqlite3.Error as error:
            db.close()
            raise self._unavailable(error) from error
        return db

    async def _attempt(
        self, call: Callable[[sqlite3.Connection], T], *, last: bool, off_loop: bool, wait: bool
    ) -> T:
        try:
            if not off_loop:
                return self._unwaited(call, last=last, blocking=False)
            if not wait:  # (a long call that must not wait for the file)
                unwaited = partial(self._unwaited, call, last=last, blocking=True)
                return await anyio.to_thread.run_sync(unwaited)
        except _Locked:  # another process (or another thread's loop) holds the file
            if not wait:
                raise Busy(f"the {self.what} {self.path} is in use", hint="Try again.") from None
        limiter = getattr(self._limiters, "limiter", None)
        if limiter is None:  # (a limiter wakes only the loop it was made in)
            limiter = self._limiters.limiter = anyio.CapacityLimiter(1)
        waited = partial(self._waited, call, last=last)
        return await anyio.to_thread.run_sync(waited, limiter=limiter)

    def _unwaited(
        self, call: Callable[[sqlite3.Connection], T], *, last: bool, blocking: bool
    ) -> T:
        """``call(db)`` on the connection that never waits for the file (else ``_Locked``).

        Unless *blocking*, a connection in use by another thread is ``_Locked`` too.
        """
        if not self._at_once.lock.acquire(blocking=blocking):
            raise _Locked
        try:
            return self._called(self._at_once, call, at_once=True, last=last)
        finally:
            self._at_once.lock.release()

    def _waited(self, call: Callable[[sqlite3.Connection], T], *, last: bool) -> T:
        with self._waiting.lock:
            return self._called(self._waiting, call, last=last)

    def _called(
        self,
        connection: _Connection,
        call: Callable[[sqlite3.Connection], T],
        *,
        at_once: bool = False,
        last: bool = True,
    ) -> T:
        """``call`` of *connection*'s database, SQLite's errors as ctxfs errors.

        ``_Locked`` if the file is in use and *at_once*. After another error the connection
        is opened again at its next use (SQLite keeps a file it could not write read-only for
        good); a read-only refusal is ``_ReadOnly`` unless this is the *last* attempt.
        """
        try:
            return call(connection.usable())
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                if at_once:
                    raise _Locked from error
                raise Busy(
                    f"the {self.what} {self.path} stayed locked: {error}",
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
            f"the {self.what} {self.path} cannot be used: {error}", retryable=False, hint=self.hint
        )


def _passive_checkpoint(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _columns(db: sqlite3.Connection, table: str) -> list[tuple[object, ...]]:
    """Name, type, NOT NULL, default and key of each column of *table* (none: no such table)."""
    return [row[1:] for row in db.execute(f'PRAGMA table_info("{table}")')]


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A ``BEGIN IMMEDIATE`` transaction on *db*: committed at the end, rolled back on error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # (a COMMIT refused too: the connection is left clean)
            db.execute("ROLLBACK")
        raise


class _Connection:
    """One SQLite connection, used by one thread at a time, opened again after a failure."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], file: SqliteFile) -> None:
        self.connect = connect
        self.file = file
        self.db = connect()
        self.lock = threading.Lock()
        self.failed = False  # opened again at its next use
        self.closed = False
        self._checkpointed = (self.db, 0)  # its count of changes at the last checkpoint

    def changes_since_checkpoint(self) -> int:
        """Rows this connection changed since :meth:`checkpointed` (or since it was opened)."""
        db, (counted, count) = self.db, self._checkpointed
        try:
            return db.total_changes - (count if counted is db else 0)
        except sqlite3.ProgrammingError:  # closed meanwhile
            return 0

    def checkpointed(self) -> None:
        """Count its changes from now."""
        db = self.db
        with suppress(sqlite3.ProgrammingError):  # (closed meanwhile: nothing to count)
            self._checkpointed = (db, db.total_changes)

    def usable(self) -> sqlite3.Connection:
        """The connection, opened (and the file set up) again if it failed.

        Raises:
            sqlite3.ProgrammingError: The store was closed.

        """
        if self.closed:
            raise sqlite3.ProgrammingError(f"the {self.file.what} is closed")
        if self.failed:
            self.db.close()
            self.db = self.connect()
            self.file.set_up(self.db)
            self.failed = False
        return self.db


class _ReadOnly(Exception):
    """A connection refused a write as read-only: the call is tried once more, on a new one."""


class _Locked(Exception):
    """Another process holds the file: the call waits for it in a worker thread."""
