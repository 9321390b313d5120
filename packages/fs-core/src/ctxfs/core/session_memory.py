"""Session memory: the contents each owner saw and wrote, and the steps it took.

From it a ``stale`` refusal carries the diff since the owner's version, and undo
and rewind put the owner's files back (:mod:`ctxfs.core.rewinds`).
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Final

import anyio

from ctxfs.core.backend import NO_PERMISSIONS
from ctxfs.core.directories import directory_changes
from ctxfs.core.errors import EncodingError, FsError, Stale
from ctxfs.core.locks import KeyedLocks
from ctxfs.core.sessions import FileChange, SessionStore
from ctxfs.core.sessions.base import UNRECORDED, reference_entry
from ctxfs.core.text import decode_document
from ctxfs.core.text.diffs import INLINE_DIFF_LINES, VersionDiff, version_diff
from ctxfs.core.textwork import text_work

if TYPE_CHECKING:
    from ctxfs.core.backend import Backend, Blob, Update
    from ctxfs.core.context import Context
    from ctxfs.core.reports import Report
    from ctxfs.core.versions import Version

__all__ = ["MAX_AUTHORS", "MAX_READ_BYTES", "SessionMemory"]

MAX_READ_BYTES: Final = 4 * 1024 * 1024
"""A read keeps a file's content up to this size (its memory stays bounded); a larger file is
kept from the owner's own changes only, within the store's bounds."""

MAX_AUTHORS: Final = 100_000
"""Changes whose author a session memory remembers (about 200 bytes each)."""

KEPT_RECENTLY_SECONDS: Final = 10.0
"""A version kept for an owner this recently is not sent to the store again by a read."""

MAX_KEPT_RECENTLY: Final = 10_000
"""Versions a session memory remembers having kept recently."""

log = logging.getLogger(__name__)


class SessionMemory:
    """What the owners of one ``Fs`` saw and wrote, in *store*.

    A store that fails never fails a call: what it could not keep or record is logged,
    and is then not there. A step it could not record is marked in the owner's history
    (an :data:`~ctxfs.core.sessions.base.UNRECORDED` change) as soon as the store takes
    one (a mark pending in this process): no undo or rewind reaches past it, or runs
    while it is pending. A step being recorded is recorded whole, even if cancelled.

    Where *backend* keeps versions itself (``Capabilities.kept_versions``), a version
    seen at a known path is kept per owner as a reference to it
    (:func:`~ctxfs.core.sessions.base.reference_entry`), its bytes read back when needed.
    """

    def __init__(
        self,
        store: SessionStore,
        backend: Backend | None = None,
        *,
        max_read_bytes: int = MAX_READ_BYTES,
    ) -> None:
        self.store = store
        self.backend = backend
        self.max_read_bytes = min(max_read_bytes, store.max_bytes_per_owner)
        self._authors: OrderedDict[tuple[str, Version], tuple[str, float]] = OrderedDict()
        self._kept: OrderedDict[tuple[str, Version], float] = OrderedDict()
        self._unrecorded: set[str] = set()  # owners whose history misses a step, not yet marked
        self._undoing = KeyedLocks()

    @asynccontextmanager
    async def undoing(self, owner: str) -> AsyncIterator[None]:
        """Hold *owner*'s undos and rewinds in this process one at a time, across threads.

        Each then reads the history the one before left.
        """
        async with self._undoing.hold(owner, timeout=math.inf):
            yield

    def author(self, key: str, version: Version) -> tuple[str, float] | None:
        """Who stored *version* of the file *key*, and when: known for recent changes here.

        The last :data:`MAX_AUTHORS` changes made through this process are remembered.
        """
        return self._authors.get((key, version))

    def authored(self, owner: str, key: str, version: Version, *, at: float) -> None:
        """Note that *owner* stored *version* of the file *key* at *at* (see :meth:`author`)."""
        self._authors[(key, version)] = (owner, at)
        self._authors.move_to_end((key, version))
        if len(self._authors) > MAX_AUTHORS:
            self._authors.popitem(last=False)

    async def keep(
        self,
        owner: str,
        version: Version,
        data: bytes,
        *,
        path: str | None = None,
        again: bool = True,
    ) -> None:
        """Keep *data*, the content of *version* at *path*, for *owner*.

        A reference (the path) where the backend keeps versions and *path* is known.
        Unless *again*, a version sent in the last :data:`KEPT_RECENTLY_SECONDS` is not
        sent again (kept, or given up at once by a store full of what steps name).
        """
        now = time.monotonic()
        kept_at = self._kept.get((owner, version))
        if not again and kept_at is not None and now - kept_at < KEPT_RECENTLY_SECONDS:
            return
        entry = self._entry(owner, version, data, path)
        if entry is None:
            return
        try:
            await self.store.keep(owner, *entry)
        except Exception:  # (a store's bug too: it never fails the call)
            log.warning("the session store could not keep a version", exc_info=True)
            return
        self._kept_now(owner, [version], now)

    def _entry(
        self, owner: str, version: Version, data: bytes, path: str | None
    ) -> tuple[Version, bytes] | None:
        """What the store keeps for *version*: a copy, a reference, or nothing (too large)."""
        backend = self.backend
        if not self.store.fits(data):
            return None
        if path is not None and backend is not None and backend.capabilities.kept_versions:
            return reference_entry(owner, version, path)
        return version, data

    def _kept_now(self, owner: str, versions: Sequence[Version], now: float) -> None:
        for version in versions:
            self._kept[(owner, version)] = now
            self._kept.move_to_end((owner, version))
        while len(self._kept) > MAX_KEPT_RECENTLY:
            self._kept.popitem(last=False)

    async def content(self, owner: str, version: Version) -> bytes | None:
        """The content of *version* kept for *owner* (a copy, or read back by reference), if any.

        None if the store or the backend fails.
        """
        try:
            data = await self.store.content(owner, version)
            path = None if data is not None else await self.store.reference(owner, version)
        except Exception:  # (a store's bug too: it never fails the call)
            log.warning("the session store could not be read", exc_info=True)
            return None
        if path is None or self.backend is None:
            return data
        try:
            return await self.backend.read_version(path, version)
        except FsError:
            log.warning("the backend could not read back a kept version", exc_info=True)
            return None

    async def recorded(self, ctx: Context, stored: Sequence[tuple[Update, Report]]) -> None:
        """Record the committed changes *stored* as one step of *ctx*'s owner, with contents.

        The versions before and after each change are kept in the same store call. A write of
        the bytes a file held already changes nothing: no step records it.
        """
        owner, changes, contents = ctx.owner, [], {}
        sources = {report.op.path: update for update, report in stored}
        for update, report in stored:
            op, current = report.op, update.current
            if report.before == report.after and op.moved_from is None and not report.made:
                continue
            if current is not None and current.whole:
                contents[current.version] = (current.data, op.path)
            written = report.written
            if written is None and op.moved_from is not None:  # a move: the source's content
                source = sources.get(op.moved_from)
                moved = None if source is None else source.current
                written = moved.data if moved is not None and moved.whole else None
            if report.after is not None and written is not None:
                contents[report.after] = (written, op.path)
            changes += directory_changes(report.made)
            changes.append(
                FileChange(
                    path=op.path,
                    key=op.key,
                    resolved=op.resolved,
                    kind=op.kind.value,
                    before=report.before,
                    after=report.after,
                    moved_from=op.moved_from,
                    permissions=update.permissions if current is not None else NO_PERMISSIONS,
                )
            )
        await self.record(owner, changes, contents)

    async def record(
        self,
        owner: str,
        changes: Sequence[FileChange],
        contents: Mapping[Version, tuple[bytes, str | None]] | None = None,
    ) -> None:
        """Record *changes* as one step of *owner*, keeping *contents* (data, path by version)."""
        if not changes:
            return
        root = None if self.backend is None else self.backend.root_identity
        if root is not None:
            changes = [replace(change, root=root) for change in changes]
        at, now = time.time(), time.monotonic()
        for change in changes:
            if change.after is not None:
                self.authored(owner, change.key, change.after, at=at)
        entries = {
            version: entry
            for version, (data, path) in (contents or {}).items()
            if (entry := self._entry(owner, version, data, path)) is not None
        }
        with anyio.CancelScope(shield=True):  # (the change is made: its step is not left half)
            try:
                if await self.history_complete(owner):
                    await self.store.record(owner, changes, at=at, contents=list(entries.values()))
                    self._kept_now(owner, list(entries), now)
                    return
            except Exception:  # (a store's bug too: it never fails the call)
                log.warning("the session store could not record a step", exc_info=True)
            self._unrecorded.add(owner)

    async def history_complete(self, owner: str) -> bool:
        """Whether *owner*'s history tells every step, marking a missed one now if needed."""
        if owner not in self._unrecorded:
            return True
        mark = FileChange(path="", key="", kind=UNRECORDED, before=None, after=None)
        try:
            await self.store.record(owner, [mark], at=time.time())
        except Exception:  # (a store's bug too)
            log.warning("the session store could not mark a step it missed", exc_info=True)
            return False
        self._unrecorded.discard(owner)
        return True

    @staticmethod
    async def diff(ctx: Context, path: str, old: bytes, new: bytes) -> VersionDiff | None:
        """The diff of *path*'s text from *old* to *new*; None unless both are text."""

        def diffed() -> VersionDiff | None:
            options = ctx.opened_fs.text_options.for_path(path)
            try:
                before = decode_document(old, options, path=path)
                try:  # as an edit would decode it now
                    after = decode_document(new, options, path=path)
                except EncodingError:  # (legacy text too short to tell: as it was)
                    after = decode_document(new, options, path=path, encoding=before.encoding)
                return version_diff(before.logical_text, after.logical_text, path=path)
            except (FsError, UnicodeError):  # binary, or text in no encoding it round-trips
                return None

        lines = sum(data.count(end) for data in (old, new) for end in (b"\n", b"\r"))
        return await text_work(len(old) + len(new), diffed, costly=lines > INLINE_DIFF_LINES)

    async def explained(self, ctx: Context, report: Report, current: Blob, stale: Stale) -> Stale:
        """*stale* (a refusal of *report*'s change of the file now at *current*), with its diff.

        Where the owner's version is kept, ``details`` carry the diff from it; a diff
        shown whole is an observation of *current* (a corrected change needs no read).
        """
        seen = report.seen
        if seen is None or not current.whole:
            return stale
        old = await self.content(ctx.owner, seen.version)
        if old is None:
            return stale
        path = report.op.path
        diff = await self.diff(ctx, path, old, current.data)
        if diff is None:
            return stale
        if diff.whole:
            await ctx.opened_fs.file_context.observe(
                ctx.owner,
                report.op.key,
                current.version,
                complete=seen.complete,
                path=report.op.path,
            )
            await self.keep(ctx.owner, current.version, current.data, path=path)
            hint = (
                "The diff shows what changed since your read; it counts as a read of the "
                "current version: redo your change against it (no read needed)."
            )
        else:
            hint = "Too much changed to show; read the file again, then redo the change."
        return Stale(
            f"{stale.message}; what changed since your version:",
            path=path,
            hint=hint,
            details={**stale.details, "diff": diff.text, "diff_whole": diff.whole},
        )
