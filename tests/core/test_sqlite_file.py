"""The SQLite file of the shared stores: its log is copied back into it off the event loop."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from ctxfs.core.sqlite_file import CHECKPOINT_CHANGES, SqliteFile

pytestmark = pytest.mark.anyio

_ROWS = "CREATE TABLE IF NOT EXISTS rows (number INTEGER PRIMARY KEY, data BLOB NOT NULL)"


@pytest.fixture
async def file(tmp_path: Path) -> AsyncIterator[SqliteFile]:
    opened = SqliteFile(tmp_path / "f.db", schema=[_ROWS], timeout=5, what="test store", hint="")
    yield opened
    await opened.aclose()


def _setting(name: str) -> Callable[[sqlite3.Connection], int]:
    return lambda db: int(db.execute(f"PRAGMA {name}").fetchone()[0])


def _insert(number: int) -> Callable[[sqlite3.Connection], None]:
    return lambda db: db.execute("INSERT INTO rows VALUES (?, ?)", (number, bytes(3000))).close()


async def test_calls_on_the_event_loop_never_checkpoint_the_log_themselves(
    file: SqliteFile,
) -> None:
    # SQLite's automatic checkpoint runs in the commit that crosses its mark: an fsync on the loop
    assert await file.run(_setting("wal_autocheckpoint")) == 0
    assert await file.run(_setting("wal_autocheckpoint"), off_loop=True) > 0


async def test_the_log_written_on_the_event_loop_stays_bounded(
    file: SqliteFile, tmp_path: Path
) -> None:
    log = tmp_path / "f.db-wal"
    for number in range(CHECKPOINT_CHANGES - 1):
        await file.run(_insert(number))
    before_the_first = log.stat().st_size
    for number in range(CHECKPOINT_CHANGES - 1, 5 * CHECKPOINT_CHANGES):
        await file.run(_insert(number))
    # never checkpointed, it would hold five times as much; each checkpoint lets it start over
    assert log.stat().st_size <= 2 * before_the_first
    with sqlite3.connect(tmp_path / "f.db") as reader:
        assert reader.execute("SELECT count(*) FROM rows").fetchone()[0] == 5 * CHECKPOINT_CHANGES


async def test_a_checkpoint_never_waits_for_a_call_in_progress(file: SqliteFile) -> None:
    # A call in a worker thread may wait for another process for seconds: the call on the
    # loop that crosses the mark leaves the checkpoint to the next one rather than wait too.
    for number in range(CHECKPOINT_CHANGES - 1):
        await file.run(_insert(number))
    started, release = threading.Event(), threading.Event()

    def long_call(db: sqlite3.Connection) -> None:
        started.set()
        release.wait(10)
        db.execute("SELECT count(*) FROM rows").close()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(partial(file.run, long_call, off_loop=True))
        await anyio.to_thread.run_sync(started.wait)
        crossing = anyio.current_time()
        await file.run(_insert(CHECKPOINT_CHANGES))  # (shielded: a deadline would not tell)
        waited = anyio.current_time() - crossing
        release.set()
    assert waited < 5, f"the call crossing the mark waited {waited:.1f} s"
