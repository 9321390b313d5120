"""Session memory in a SQLite file: it survives restarts, and a host's processes share it.

Tables: ``blobs`` (each content once, by version), ``uses`` (each blob's size, last use
and how many of its holders name it, apart so that a use rewrites no content), ``kept``
(the versions kept for each owner, with their last use and whether a kept step names
them), ``names`` (the versions each step names:
:func:`~ctxfs.core.sessions.base.step_names`), ``owners`` (an owner's bytes and steps
kept, and the last step and checkpoint numbers given), ``totals`` (the bytes of all blobs,
and the clock that orders the uses), ``steps`` and ``checkpoints`` (encoded, by owner and
number), ``active`` (when a call last named an owner; -1 while its contents go for
idleness, none once they went). Each call is one transaction, after
:meth:`~ctxfs.core.sessions.SessionStore.active`'s own.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Final, TypeVar

from ctxfs.core.observations.base import stored_bytes, stored_owner
from ctxfs.core.sessions.base import (
    ACTIVITY_LAG,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_BYTES_PER_OWNER,
    DEFAULT_MAX_IDLE_DAYS,
    DEFAULT_MAX_STEPS,
    SWEEP_CONTENTS,
    Checkpoint,
    FileChange,
    SessionStore,
    Step,
    decoded,
    step_names,
)
from ctxfs.core.sqlite_file import SqliteFile, immediate
from ctxfs.core.versions import Version

__all__ = ["SqliteSessions"]

D = TypeVar("D")

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS blobs (version BLOB PRIMARY KEY, data BLOB NOT NULL)",
    """CREATE TABLE IF NOT EXISTS uses (
        version BLOB PRIMARY KEY, size INTEGER NOT NULL, used INTEGER NOT NULL,
        namers INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS uses_by_turn ON uses (namers > 0, used)",
    """CREATE TABLE IF NOT EXISTS kept (
        owner BLOB NOT NULL, version BLOB NOT NULL, used INTEGER NOT NULL,
        named INTEGER NOT NULL, PRIMARY KEY (owner, version)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS kept_by_turn ON kept (owner, named, used)",
    "CREATE INDEX IF NOT EXISTS kept_by_version ON kept (version)",
    """CREATE TABLE IF NOT EXISTS owners (
        owner BLOB PRIMARY KEY, kept_bytes INTEGER NOT NULL DEFAULT 0,
        numbered INTEGER NOT NULL DEFAULT 0, marked INTEGER NOT NULL DEFAULT 0,
        given_up INTEGER NOT NULL DEFAULT 0, steps INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS totals (
        id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL, clock INTEGER NOT NULL
    )""",
    "INSERT OR IGNORE INTO totals VALUES (0, 0, 0)",
    """CREATE TABLE IF NOT EXISTS steps (
        owner BLOB NOT NULL, number INTEGER NOT NULL, step TEXT NOT NULL,
        PRIMARY KEY (owner, number)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS names (
        owner BLOB NOT NULL, number INTEGER NOT NULL, version BLOB NOT NULL,
        PRIMARY KEY (owner, number, version)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS names_by_version ON names (owner, version)",
    """CREATE TABLE IF NOT EXISTS checkpoints (
        owner BLOB NOT NULL, number INTEGER NOT NULL, checkpoint TEXT NOT NULL,
        PRIMARY KEY (owner, number)
    ) WITHOUT ROWID""",
    "CREATE TABLE IF NOT EXISTS active (owner BLOB PRIMARY KEY, at REAL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS active_by_time ON active (at)",
)
_ON_THE_LOOP: Final = 64 * 1024
"""Bytes of content a call writes on the event loop at most; a larger one runs in a thread."""
SWEEP_STEPS: Final = 64
"""Steps of an idle owner one look gives up at most (oldest first, as ``max_steps`` does)."""
SWEEP_BYTES: Final = 8 * 1024 * 1024
"""Bytes of contents one look lets go of at most (one content at least)."""


class SqliteSessions(SessionStore):
    """Contents and histories in a SQLite file, bounded as :class:`SessionStore` says.

    Shared by the host's processes, surviving restarts; a content kept for several
    owners is stored once. Each call is one transaction (write-ahead log; writes
    ``BEGIN IMMEDIATE``), so step numbers and checkpoint ids are never given twice,
    whichever process asks. Owners in a file made before activity was noted count as
    active from its first opening here. A call runs on the event loop when the file is free at
    once and it moves little data, else in a worker thread.

    Args:
        path: The file (made if missing).
        max_bytes: Bytes of contents kept in all.
        max_bytes_per_owner: Bytes of contents kept for one owner.
        max_steps: Steps (and checkpoints) kept per owner.
        max_idle_days: Days without a call after which an owner's history is given up.
        timeout: Seconds a call waits for another process's lock before ``Busy``.
        clock: Seconds since the epoch (:attr:`SessionStore.clock`).

    Raises:
        ValueError: A bound is not a positive number.
        Unavailable: The file cannot be opened, is not a SQLite database, or was made
            by a ctxfs whose tables differ.

    """

    def __init__(
        self,
        path: str | Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_bytes_per_owner: int = DEFAULT_MAX_BYTES_PER_OWNER,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_idle_days: int = DEFAULT_MAX_IDLE_DAYS,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            max_bytes=max_bytes,
            max_bytes_per_owner=max_bytes_per_owner,
            max_steps=max_steps,
            max_idle_days=max_idle_days,
            clock=clock,
        )
        self.path = Path(path)
        self._file = SqliteFile(
            self.path,
            schema=_SCHEMA,
            timeout=timeout,
            what="session store",
            hint="Check that the file is a ctxfs session store (SQLite) and is writable; "
            "remove a damaged one (the sessions' contents and steps are then forgotten).",
        )
        try:
            self._file.now(partial(_adopt, self.clock()))
        except BaseException:
            self._file.close()
            raise

    async def keep(self, owner: str, version: Version, data: bytes) -> bool:
        """See :meth:`SessionStore.keep`: one transaction, the bounds kept in it."""
        await self.active(owner)
        if not self.fits(data):
            return False
        call = partial(self._keep, stored_owner(owner), stored_bytes(version), data)
        return await self._file.run(call, off_loop=len(data) > _ON_THE_LOOP)

    async def content(self, owner: str, version: Version) -> bytes | None:
        """See :meth:`SessionStore.content`: one transaction, in a worker thread."""
        await self.active(owner)
        call = partial(_content, stored_owner(owner), stored_bytes(version))
        return await self._file.run(call, off_loop=True)  # (a content may be large)

    async def record(
        self,
        owner: str,
        changes: Sequence[FileChange],
        *,
        at: float,
        contents: Sequence[tuple[Version, bytes]] = (),
    ) -> Step:
        """See :meth:`SessionStore.record`: one transaction, the contents' bounds kept in it."""
        await self.active(owner)
        kept = [(stored_bytes(v), data) for v, data in contents if self.fits(data)]
        names = [stored_bytes(v) for v in step_names(owner, changes)]
        call = partial(self._record, stored_owner(owner), tuple(changes), at, kept, names=names)
        return await self._file.run(call, off_loop=sum(len(d) for _, d in kept) > _ON_THE_LOOP)

    async def steps(self, owner: str, *, after: int = 0) -> list[Step]:
        """See :meth:`SessionStore.steps`."""
        await self.active(owner)
        query = "SELECT step FROM steps WHERE owner = ? AND number > ? ORDER BY number"
        return await self._decoded(Step.decode, query, stored_owner(owner), after)

    async def given_up(self, owner: str) -> int:
        """See :meth:`SessionStore.given_up`."""
        await self.active(owner)
        return await self._file.run(partial(_counted, owner=stored_owner(owner), column="given_up"))

    async def drop_steps(self, owner: str, numbers: Sequence[int]) -> None:
        """See :meth:`SessionStore.drop_steps`: one transaction."""
        await self.active(owner)
        await self._file.run(partial(_drop_steps, stored_owner(owner), sorted(set(numbers))))

    async def mark(self, owner: str, label: str | None, *, at: float) -> Checkpoint:
        """See :meth:`SessionStore.mark`: one transaction."""
        await self.active(owner)
        call = partial(_mark, stored_owner(owner), label, at, self.max_steps, now=self.clock())
        return await self._file.run(call)

    async def checkpoints(self, owner: str) -> list[Checkpoint]:
        """See :meth:`SessionStore.checkpoints`."""
        await self.active(owner)
        query = "SELECT checkpoint FROM checkpoints WHERE owner = ? ORDER BY number"
        return await self._decoded(Checkpoint.decode, query, stored_owner(owner))

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`SessionStore.forget_owner`: one transaction."""
        self._noted.pop(owner, None)
        await self._file.run(partial(_forget, stored_owner(owner)))

    async def note_active(self, owner: str, at: float) -> None:
        """See :meth:`SessionStore.note_active`: one statement."""
        await self._file.run(partial(_note_active, stored_owner(owner), at), wait=False)

    async def forget_idle(self, before: float) -> bool:
        """See :meth:`SessionStore.forget_idle`: one transaction, in a worker thread.

        It gives up :data:`SWEEP_STEPS` steps at most, then contents up to
        :data:`SWEEP_BYTES` (a history of large steps goes over several calls).
        """
        return await self._file.run(partial(_forget_idle, before), off_loop=True, wait=False)

    async def aclose(self) -> None:
        """Close the connections (once a call under way in a worker thread has ended)."""
        await self._file.aclose()

    def close(self) -> None:
        """Close the connections, blocking (see :meth:`aclose`)."""
        self._file.close()

    def _keep(self, owner: bytes, version: bytes, data: bytes, db: sqlite3.Connection) -> bool:
        with immediate(db):
            db.execute(_NEW_OWNER, (owner,))
            db.execute(_CALLED, (owner, self.clock()))
            _keep_in(db, owner, version, data, _tick(db))
            self._bound(db, owner)
            held = db.execute(
                "SELECT 1 FROM kept WHERE owner = ? AND version = ?", (owner, version)
            )
            return held.fetchone() is not None

    def _record(
        self,
        owner: bytes,
        changes: tuple[FileChange, ...],
        at: float,
        contents: list[tuple[bytes, bytes]],
        db: sqlite3.Connection,
        *,
        names: list[bytes],
    ) -> Step:
        with immediate(db):
            number, kept_steps = db.execute(_NEXT_STEP, (owner,)).fetchone()
            db.execute(_CALLED, (owner, self.clock()))
            step = Step(number=number, changes=changes, at=at)
            db.execute("INSERT INTO steps VALUES (?, ?, ?)", (owner, number, step.encode()))
            db.executemany(
                "INSERT INTO names VALUES (?, ?, ?)", [(owner, number, v) for v in names]
            )
            _count_namers(db, db.execute(_NAMED, (owner, number)).fetchall(), 1)
            tick = _tick(db, len(contents)) if contents else 0
            for later, (version, data) in enumerate(contents):
                _keep_in(db, owner, version, data, tick + later)
            if kept_steps > self.max_steps:
                _give_up_steps(db, owner, kept_steps - self.max_steps)
            self._bound(db, owner)
            return step

    def _bound(self, db: sqlite3.Connection, owner: bytes) -> None:
        """Give up the least recently used until *owner*'s bytes and all bytes are in bounds."""
        while _counted(db, owner, "kept_bytes") > self.max_bytes_per_owner:
            _let_go(db, owner, db.execute(_OWNERS_OLDEST, (owner,)).fetchone()[0])
        while db.execute("SELECT bytes FROM totals").fetchone()[0] > self.max_bytes:
            oldest = db.execute(_OLDEST).fetchone()[0]
            holders = db.execute("SELECT owner FROM kept WHERE version = ?", (oldest,))
            for (holder,) in holders.fetchall():
                _let_go(db, holder, oldest)
            _drop_if_unheld(db, oldest)  # (held by none: a blob left behind)

    async def _decoded(self, decode: Callable[[str], D], query: str, *args: object) -> list[D]:
        hint = "Remove the damaged session store (the sessions' steps are then forgotten)."

        def read(db: sqlite3.Connection) -> list[D]:  # decoded where the call runs
            texts = [text for (text,) in db.execute(query, args).fetchall()]
            return decoded(decode, texts, store=str(self.path), hint=hint)

        return await self._file.run(read, off_loop=True)  # (a history may be long)

    def __repr__(self) -> str:
        return f"SqliteSessions({str(self.path)!r})"


_TOUCH: Final = "UPDATE kept SET used = ? WHERE owner = ? AND version = ?"
_ADD_BYTES: Final = "UPDATE owners SET kept_bytes = kept_bytes + ? WHERE owner = ?"
_NEW_OWNER: Final = "INSERT OR IGNORE INTO owners (owner) VALUES (?)"
_ACTIVE: Final = (
    "INSERT INTO active VALUES (?, ?) ON CONFLICT (owner) DO UPDATE SET at = excluded.at"
)
"""An owner's activity noted (the last wins)."""
_CALLED: Final = f"{_ACTIVE} WHERE at IS NULL OR at < excluded.at - {ACTIVITY_LAG}"
"""An owner's activity as each call that keeps, records or marks notes it (a note is Busy
while another writer holds the file, a look included): unless noted in the last
:data:`ACTIVITY_LAG`, so that a call mostly writes no activity."""
_NEXT_STEP: Final = (
    "INSERT INTO owners (owner, numbered, steps) VALUES (?, 1, 1) ON CONFLICT (owner) "
    "DO UPDATE SET numbered = numbered + 1, steps = steps + 1 RETURNING numbered, steps"
)
_NEW_BLOB: Final = "INSERT INTO blobs VALUES (?, ?)"
_USE_BLOB: Final = "UPDATE uses SET used = ? WHERE version = ? RETURNING size"
_NAMES: Final = "SELECT 1 FROM names WHERE owner = ?1 AND version = ?2"
_NEW_KEPT: Final = f"INSERT INTO kept VALUES (?1, ?2, ?3, EXISTS ({_NAMES})) RETURNING named"
_NAMED: Final = (
    "UPDATE kept SET named = 1 WHERE owner = ?1 AND NOT named AND version IN "
    "(SELECT version FROM names WHERE owner = ?1 AND number = ?2) RETURNING version"
)
"""What the owner keeps of what its step names, named now."""
_NAMER: Final = "UPDATE uses SET namers = namers + ? WHERE version = ?"
"""A blob's holders naming it, counted (the store gives up those no holder names first)."""
_OLDEST: Final = "SELECT version FROM uses ORDER BY namers > 0, used LIMIT 1"
"""The blob the store gives up first: the least recently used of those no holder names, else
of all."""
_OWNERS_OLDEST: Final = "SELECT version FROM kept WHERE owner = ? ORDER BY named, used LIMIT 1"
"""The content an owner gives up first: the least recently used of those no kept step names,
else of all."""


def _keep_in(db: sqlite3.Connection, owner: bytes, version: bytes, data: bytes, tick: int) -> None:
    """Keep *data* for *owner* (whose row exists) as used at *tick*, the bounds not yet kept.

    Inside the caller's transaction; *tick* is above every use in the file.
    """
    used = db.execute(_USE_BLOB, (tick, version)).fetchone()
    if used is None:
        db.execute(_NEW_BLOB, (version, data))
        db.execute("INSERT INTO uses VALUES (?, ?, ?, 0)", (version, len(data), tick))
        db.execute("UPDATE totals SET bytes = bytes + ?", (len(data),))
    if not db.execute(_TOUCH, (tick, owner, version)).rowcount:
        if db.execute(_NEW_KEPT, (owner, version, tick)).fetchone()[0]:
            db.execute(_NAMER, (1, version))
        db.execute(_ADD_BYTES, (len(data) if used is None else used[0], owner))


def _tick(db: sqlite3.Connection, uses: int = 1) -> int:
    """The first of *uses* ticks of the file's clock, each past every use before."""
    (clock,) = db.execute("UPDATE totals SET clock = clock + ? RETURNING clock", (uses,)).fetchone()
    return int(clock) - uses + 1


def _count_namers(db: sqlite3.Connection, versions: list[tuple[bytes]], by: int) -> None:
    """Count *by* more holders naming each of *versions* (rows of one column)."""
    db.executemany(_NAMER, [(by, version) for (version,) in versions])


def _counted(db: sqlite3.Connection, owner: bytes, column: str) -> int:
    """*owner*'s *column* of ``owners`` (0 without a row)."""
    row = db.execute(f"SELECT {column} FROM owners WHERE owner = ?", (owner,)).fetchone()
    return 0 if row is None else int(row[0])


def _let_go(db: sqlite3.Connection, owner: bytes, version: bytes) -> None:
    """*owner* keeps *version* no more; the blob goes when no owner keeps it."""
    (size,) = db.execute("SELECT size FROM uses WHERE version = ?", (version,)).fetchone()
    query = "DELETE FROM kept WHERE owner = ? AND version = ? RETURNING named"
    if db.execute(query, (owner, version)).fetchone()[0]:
        db.execute(_NAMER, (-1, version))
    db.execute(_ADD_BYTES, (-size, owner))
    _drop_if_unheld(db, version)


def _drop_if_unheld(db: sqlite3.Connection, version: bytes) -> None:
    if db.execute("SELECT 1 FROM kept WHERE version = ?", (version,)).fetchone() is None:
        size = db.execute("SELECT size FROM uses WHERE version = ?", (version,)).fetchone()
        if size is not None:
            db.execute("DELETE FROM blobs WHERE version = ?", (version,))
            db.execute("DELETE FROM uses WHERE version = ?", (version,))
            db.execute("UPDATE totals SET bytes = bytes - ?", size)


def _content(owner: bytes, version: bytes, db: sqlite3.Connection) -> bytes | None:
    with immediate(db):
        held = db.execute("SELECT 1 FROM kept WHERE owner = ? AND version = ?", (owner, version))
        if held.fetchone() is None:
            return None
        tick = _tick(db)
        db.execute(_TOUCH, (tick, owner, version))
        db.execute("UPDATE uses SET used = ? WHERE version = ?", (tick, version))
        row = db.execute("SELECT data FROM blobs WHERE version = ?", (version,)).fetchone()
        return None if row is None else bytes(row[0])


def _mark(
    owner: bytes, label: str | None, at: float, most: int, db: sqlite3.Connection, *, now: float
) -> Checkpoint:
    with immediate(db):
        db.execute(_NEW_OWNER, (owner,))
        db.execute(_CALLED, (owner, now))
        query = "UPDATE owners SET marked = marked + 1 WHERE owner = ? RETURNING marked, numbered"
        number, last = db.execute(query, (owner,)).fetchone()
        checkpoint = Checkpoint(id=Checkpoint.id_of(number), label=label, step=last, at=at)
        db.execute("INSERT INTO checkpoints VALUES (?, ?, ?)", (owner, number, checkpoint.encode()))
        newest_gone = db.execute(
            "SELECT number FROM checkpoints WHERE owner = ? ORDER BY number DESC LIMIT 1 OFFSET ?",
            (owner, most),
        ).fetchone()
        if newest_gone is not None:  # the oldest beyond *most* go
            query = "DELETE FROM checkpoints WHERE owner = ? AND number <= ?"
            db.execute(query, (owner, newest_gone[0]))
        return checkpoint


def _give_up_steps(db: sqlite3.Connection, owner: bytes, excess: int) -> None:
    """Give up *owner*'s oldest *excess* steps, noting the newest of them as ``given_up``."""
    (last,) = db.execute(
        "SELECT number FROM steps WHERE owner = ? ORDER BY number LIMIT 1 OFFSET ?",
        (owner, excess - 1),
    ).fetchone()
    db.execute("DELETE FROM steps WHERE owner = ? AND number <= ?", (owner, last))
    _unname(db, owner, "number <= ?2", last)
    query = "UPDATE owners SET given_up = ?, steps = steps - ? WHERE owner = ?"
    db.execute(query, (last, excess, owner))


def _drop_steps(owner: bytes, numbers: list[int], db: sqlite3.Connection) -> None:
    with immediate(db):
        dropped = 0
        for number in numbers:
            query = "DELETE FROM steps WHERE owner = ? AND number = ?"
            if db.execute(query, (owner, number)).rowcount:
                dropped += 1
                _unname(db, owner, "number = ?2", number)
        db.execute("UPDATE owners SET steps = steps - ? WHERE owner = ?", (dropped, owner))


def _unname(db: sqlite3.Connection, owner: bytes, steps: str, number: int) -> None:
    """Forget what *owner*'s steps where *steps* (with *number*) name, now no other names."""
    unnamed = db.execute(
        "UPDATE kept SET named = 0 WHERE owner = ?1 AND named AND version IN "
        f"(SELECT version FROM names WHERE owner = ?1 AND {steps}) AND NOT EXISTS "
        "(SELECT 1 FROM names n WHERE n.owner = ?1 AND n.version = kept.version "
        f"AND NOT ({steps})) RETURNING version",
        (owner, number),
    ).fetchall()
    _count_namers(db, unnamed, -1)
    db.execute(f"DELETE FROM names WHERE owner = ?1 AND {steps}", (owner, number))


def _forget(owner: bytes, db: sqlite3.Connection) -> None:
    with immediate(db):
        for (version,) in db.execute(
            "SELECT version FROM kept WHERE owner = ?", (owner,)
        ).fetchall():
            _let_go(db, owner, version)
        for table in ("owners", "steps", "names", "checkpoints", "active"):
            db.execute(f"DELETE FROM {table} WHERE owner = ?", (owner,))


def _adopt(now: float, db: sqlite3.Connection) -> None:
    """Note the owners of a file made before activity was noted as active *now*."""
    if db.execute("SELECT 1 FROM active LIMIT 1").fetchone() is None:
        with immediate(db):
            db.execute("INSERT OR IGNORE INTO active SELECT owner, ? FROM owners", (now,))


def _note_active(owner: bytes, at: float, db: sqlite3.Connection) -> None:
    db.execute(_ACTIVE, (owner, at))


def _forget_idle(before: float, db: sqlite3.Connection) -> bool:
    with immediate(db):
        row = db.execute("SELECT owner FROM active WHERE at = -1 LIMIT 1").fetchone()
        if row is None:
            query = "SELECT owner FROM active WHERE at >= 0 AND at < ? ORDER BY at LIMIT 1"
            row = db.execute(query, (before,)).fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM checkpoints WHERE owner = ?", row)
            db.execute("UPDATE active SET at = -1 WHERE owner = ?", row)
        owner = row[0]
        if _counted(db, owner, "steps") > SWEEP_STEPS:
            _give_up_steps(db, owner, SWEEP_STEPS)
            return True
        db.execute("DELETE FROM steps WHERE owner = ?", row)
        db.execute("DELETE FROM names WHERE owner = ?", row)
        query = "UPDATE kept SET named = 0 WHERE owner = ? AND named RETURNING version"
        _count_namers(db, db.execute(query, row).fetchall(), -1)
        db.execute("UPDATE owners SET steps = 0, given_up = numbered WHERE owner = ?", row)
        if _let_go_some(db, owner):  # all gone: only its numbering stays, if any
            numbering = db.execute("SELECT numbered, marked FROM owners WHERE owner = ?", row)
            if not any(numbering.fetchone() or ()):
                db.execute("DELETE FROM owners WHERE owner = ?", row)
                db.execute("DELETE FROM active WHERE owner = ?", row)
            else:
                db.execute("UPDATE active SET at = NULL WHERE owner = ?", row)
        return True


def _let_go_some(db: sqlite3.Connection, owner: bytes) -> bool:
    """Let go of *owner*'s contents up to :data:`SWEEP_BYTES` (one at least); whether all went."""
    query = (  # (the least recently used first: none is named now)
        "SELECT version, size FROM kept JOIN uses USING (version) WHERE owner = ? "
        "ORDER BY kept.named, kept.used LIMIT ?"
    )
    kept = db.execute(query, (owner, SWEEP_CONTENTS)).fetchall()
    bytes_let_go = 0
    for count, (version, size) in enumerate(kept):
        if count and bytes_let_go + size > SWEEP_BYTES:
            return False
        _let_go(db, owner, version)
        bytes_let_go += size
    return len(kept) < SWEEP_CONTENTS
