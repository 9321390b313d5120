"""fs-local's :class:`~ctxfs.core.kit.Update`: the CAS lock held from the read to the change."""

from __future__ import annotations

import stat
from functools import partial

from anyio.to_thread import run_sync

from ctxfs.core.kit import ABSENT, Backend, Blob, Permissions, Update, Version
from ctxfs.local import writes
from ctxfs.local.reads import HeldFile
from ctxfs.local.root import RootDirectory, Seen

__all__ = ["LockedUpdate"]


class LockedUpdate(Update):
    """An update whose CAS lock is held since the read.

    Its first change checks only that the entry is still the one read (its
    identity, :class:`~ctxfs.local.root.Seen`); an undo, after it, checks the
    version this update left. A move is a rename. A first change of up to
    *inline_max* bytes runs on the event loop (-1: none does). A file read for
    its version alone is *held* open, its content read from there if needed
    (an undo of its delete, or of a move over it).
    """

    def __init__(
        self,
        backend: Backend,
        root: RootDirectory,
        path: str,
        current: Blob | None,
        seen: Seen,
        *,
        inline_max: int = -1,
        held: HeldFile | None = None,
    ) -> None:
        super().__init__(backend, path, current)
        self.root = root
        self.seen = seen
        self.inline_max = inline_max
        self.held = held
        self._as_read = True
        if seen.info is not None:
            owner = (seen.info.st_uid, seen.info.st_gid)
            self.permissions = Permissions(mode=stat.S_IMODE(seen.info.st_mode), owner=owner)

    async def _put(self, data: bytes, *, was: Version | None, permissions: Permissions) -> Version:
        expect = self.seen if self._as_read else (ABSENT if was is None else was)
        own = not self._as_read  # (an undo of this update's change: the file there is its own)
        write = partial(writes.write, like=self.seen.info, permissions=permissions, own=own)
        if self._as_read and len(data) <= self.inline_max:  # (an undo may hash what is there)
            version = write(self.root, self.path, data, expect)
        else:
            version = await run_sync(write, self.root, self.path, data, expect)
        self._as_read = False
        return version

    async def _content(self) -> bytes:
        held, current = self.held, self.current
        if held is None or held.fd is None or current is None or current.whole:
            return await super()._content()
        return await run_sync(held.content, self.path, current)

    async def _remove(self, *, was: Version) -> None:
        expect = self.seen if self._as_read else was
        await run_sync(writes.delete, self.root, self.path, expect)
        self._as_read = False

    async def _move(self, destination: Update) -> Version:
        assert self.current is not None
        assert isinstance(destination, LockedUpdate)
        await run_sync(
            writes.move, self.root, self.path, self.seen, destination.path, destination.seen
        )
        self._as_read = destination._as_read = False
        return self.current.version

    async def _undo_move(self, destination: Update, written: Version) -> None:
        assert isinstance(destination, LockedUpdate)
        del written  # the file moved is known by its inode
        await run_sync(writes.move_back, self.root, destination.path, self.seen, self.path)
        if destination.current is not None:  # the file the move replaced
            await destination._undo(None)
