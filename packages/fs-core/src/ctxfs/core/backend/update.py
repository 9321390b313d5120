"""The read-compare-write of one file: :class:`Update`, the routine every store shares.

A store supplies two primitives, :meth:`~Update._put` and :meth:`~Update._remove`
(and, where it renames, :meth:`~Update._move` and :meth:`~Update._undo_move`);
:class:`ConditionalUpdate` supplies them through the store's compare-and-swap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import anyio

from ctxfs.core.backend.files import NO_PERMISSIONS, Blob, FileKind, Permissions
from ctxfs.core.errors import (
    AlreadyExists,
    BackendError,
    FsError,
    IsADirectory,
    NotARegularFile,
    NotFound,
    Stale,
    Unavailable,
)
from ctxfs.core.versions import ABSENT, Expect, Version

if TYPE_CHECKING:
    from ctxfs.core.backend.template import Backend

__all__ = [
    "ConditionalUpdate",
    "Update",
    "check_expect",
    "link_refusal",
    "may_have_landed",
    "missing_file",
]


class Update:
    """A file read for a read-compare-write, as :meth:`Backend.open_update` yields it.

    Its changes succeed only if the file is still as read (:attr:`current`), as far
    as :attr:`Capabilities.cas_scope` reaches. Each change runs to its end once
    begun, a cancellation being delivered after, so the caller always knows what
    the store holds.
    """

    def __init__(self, backend: Backend, path: str, current: Blob | None) -> None:
        self.backend = backend
        """The backend the file lives in."""
        self.path = path
        """The canonical path being updated."""
        self.current = current
        """The whole file as it was read, or None when it did not exist.

        Opened with ``content_max`` (:meth:`Backend.open_update`), a store may leave out the
        content of a larger file: its :attr:`Blob.data` is then empty (``current.whole`` is
        False), its version and size are the file's. Such a store gives the content back
        where a move's copy or an undo needs it (:meth:`_content`)."""
        self.moved_to: Update | None = None
        """The update of the destination :meth:`move` moved the file to, once it has."""
        self.permissions = NO_PERMISSIONS
        """The file's permission bits and owner when read, where the store keeps them."""

    async def write(self, data: bytes, *, permissions: Permissions = NO_PERMISSIONS) -> Version:
        """Replace the file read (or create it, if it did not exist) with *data*.

        The file keeps its permission bits (a new one gets the store's default), and its
        owner and group where this process may give them (root), unless *permissions*
        gives them, where the store keeps them.

        Raises:
            Stale: The file changed since it was read (or was deleted).
            AlreadyExists: It did not exist, and was created meanwhile.
            TooLarge: *data* exceeds :attr:`Capabilities.max_cas_size`.

        """
        self.backend.capabilities.check_size(self.path, data)
        was = None if self.current is None else self.current.version
        with anyio.CancelScope(shield=True):
            version = await self._put(data, was=was, permissions=permissions)
        return version  # noqa: RET504 - (a return inside the shield reads as fall-through to mypy)

    async def delete(self) -> None:
        """Delete the file read.

        A removal that fails unrefused (its answer lost) and leaves no file here has landed:
        the delete is done (as is any removal of this class's changes and undos).

        Raises:
            NotFound: It did not exist when read (``IsADirectory`` for a prefix).
            Stale: It changed since it was read.

        """
        if self.current is None:
            raise await self.missing()
        with anyio.CancelScope(shield=True):
            await self._removed(was=self.current.version)

    async def move(self, destination: Update) -> Version:
        """Move the file read to the path of *destination*, an update open there too.

        Succeeds only if this file is still as read and the destination still as
        it was read (missing, or at its version, which the move replaces), as far
        as :attr:`Capabilities.cas_scope` reaches. Returns the file's version at
        the destination. A store without a rename copies, then deletes the
        source: a crash in between leaves both, never neither.

        Raises:
            NotFound: The file did not exist when read.
            Stale: Either changed since it was read (nothing moved).
            AlreadyExists: The destination was missing when read, and was created meanwhile.

        """
        if self.current is None:
            raise await self.missing()
        with anyio.CancelScope(shield=True):
            version = await self._move(destination)
        self.moved_to = destination
        return version

    async def undo(self, written: Version | None) -> None:
        """Put back what the file held when read, over what this update did since.

        *written* is the version this update stored, or None if it deleted the
        file. Succeeds only if the file is still as this update left it, as far
        as :attr:`Capabilities.cas_scope` reaches. A file this update moved is
        put back with :meth:`undo_move` instead.

        Raises:
            Stale: The file changed since this update wrote it.

        """
        with anyio.CancelScope(shield=True):
            await self._undo(written)

    async def undo_move(self, written: Version) -> None:
        """Put back the file :meth:`move` moved: here, and the destination as it was read.

        *written* is the version the move left at the destination. The file is
        back here before the destination is undone: a failure in between leaves
        it at both paths, never at neither.

        Raises:
            Stale: Either path changed since the move.

        """
        assert self.moved_to is not None, "undo_move() of an update that moved nothing"
        with anyio.CancelScope(shield=True):
            await self._undo_move(self.moved_to, written)

    async def missing(self) -> FsError:
        """The error for a file missing when read: ``NotFound``, or ``IsADirectory`` (a prefix)."""
        return await missing_file(self.backend, self.path)

    # -- the store's primitives ---------------------------------------------------------------

    async def _put(self, data: bytes, *, was: Version | None, permissions: Permissions) -> Version:
        """Store *data* over version *was* (None: no file) and return its version.

        ``Stale`` or ``AlreadyExists`` where the file is no longer so, as far as the
        store's condition or lock reaches. *permissions*: see :meth:`write`.
        """
        raise NotImplementedError  # pragma: no cover - every Update subclass has its own

    async def _remove(self, *, was: Version) -> None:
        """Delete the file, which holds version *was*; ``Stale`` where it no longer does."""
        raise NotImplementedError  # pragma: no cover

    async def _move(self, destination: Update) -> Version:
        """Copy to *destination* under its condition, with this file's permissions, then remove.

        The removal is under this update's condition. If it is refused (any error but
        ``Unavailable`` and ``BackendError``: nothing was removed), the copy is undone. If it
        fails otherwise (its answer lost; it may even land later), the move is done where no
        file is left here, and else the copy is kept (``BackendError``): it may be the only one.
        """
        assert self.current is not None
        data = await self._content()
        version = await destination.write(data, permissions=self.permissions)
        try:
            await self._remove(was=self.current.version)
        except BaseException as failure:
            with anyio.CancelScope(shield=True):
                if isinstance(failure, FsError) and not may_have_landed(failure):
                    await self._undo_copy(destination, version, failure)
                    raise
                if await self._version_now() == _NO_FILE and isinstance(failure, FsError):
                    return version  # the removal landed
                if isinstance(failure, FsError):
                    raise BackendError(
                        f"moving {self.path} to {destination.path} failed half way ({failure}); "
                        f"{self.path} may yet be removed by it, so {destination.path} keeps the "
                        "content read",
                        path=self.path,
                        hint=f"Read {self.path} and {destination.path} again before going on.",
                        details={"destination": destination.path, "version": version},
                    ) from failure
            raise
        return version

    async def _undo_copy(self, destination: Update, version: Version, failure: FsError) -> None:
        """Undo the copy of a move whose removal was refused (*failure*)."""
        try:
            await destination.undo(version)
        except FsError as undo:
            raise BackendError(
                f"moving {self.path} to {destination.path} failed half way, and the "
                f"copy could not be undone: both paths now hold the file ({undo})",
                path=self.path,
                details={"destination": destination.path, "version": version},
            ) from failure

    async def _undo_move(self, destination: Update, written: Version) -> None:
        """Put the file back here (create-only), then undo the destination."""
        await self._undo(None)
        await destination._undo(written)

    async def _undo(self, written: Version | None) -> None:
        if self.current is None:
            if written is not None:
                await self._removed(was=written)
        else:
            await self._put(await self._content(), was=written, permissions=self.permissions)

    async def _content(self) -> bytes:
        """The whole content read (:attr:`current`, which exists), for a move's copy or an undo.

        A store that left it out of :attr:`current` gives it here (this default refuses, never
        putting back what was not read).

        Raises:
            Stale: The content read is no longer at hand (the store's own refusal).
            BackendError: It was left out, and this update cannot give it.

        """
        assert self.current is not None
        if not self.current.whole:
            raise BackendError(
                f"the content of {self.path} was not read, and cannot be put back",
                path=self.path,
            )
        return self.current.data

    async def _removed(self, *, was: Version) -> None:
        """:meth:`_remove`, done too where it fails unrefused and no file is left here."""
        try:
            await self._remove(was=was)
        except FsError as failure:
            if not may_have_landed(failure) or await self._version_now() != _NO_FILE:
                raise

    async def _version_now(self) -> Version | None:
        """The version of the file here now (``_NO_FILE``: none); None if the store cannot tell."""
        try:
            found = await self.backend.stat(self.path)
            if found.kind is FileKind.DIRECTORY:
                return _NO_FILE
            if found.version is None:  # (a store that knows it only by reading)
                return (await self.backend.read(self.path)).version
        except NotFound:
            return _NO_FILE
        except FsError:
            return None
        return found.version


_NO_FILE: Final = Version("")
"""What :meth:`Update._version_now` finds where there is no file (no store's version is empty)."""


class ConditionalUpdate(Update):
    """The default :class:`Update`: the store's compare-and-swap against the version read."""

    async def _put(self, data: bytes, *, was: Version | None, permissions: Permissions) -> Version:
        del permissions  # (a store of objects keeps no permission bits)
        return await self.backend._write(self.path, data, ABSENT if was is None else was)

    async def _remove(self, *, was: Version) -> None:
        await self.backend._delete(self.path, was)


def check_expect(
    path: str, expect: Expect, current: Version | Callable[[], Version] | None
) -> None:
    """Refuse a write whose *expect* the file's *current* state fails (under the store's lock).

    *current* is the file's version, a function computing it (called only when
    *expect* is a version), or None when the file does not exist.

    Raises:
        AlreadyExists: *expect* is ABSENT and the file exists.
        Stale: *expect* is a version and the file is at another one, or missing.

    """
    if expect is ABSENT and current is not None:
        raise AlreadyExists(f"{path} already exists", path=path)
    if isinstance(expect, str):
        actual = current() if callable(current) else current
        if actual != expect:
            raise Stale(
                f"{path} is not at the expected version",
                path=path,
                details={"expected_version": expect, "current_version": actual},
            )


def link_refusal(path: str, target: str) -> NotARegularFile:
    """The refusal to write over, remove or move symbolic link *path* (to *target*) itself.

    A backend with links changes the files they lead to, by their own paths, never a link.
    """
    return NotARegularFile(
        f"{path} is a symbolic link (to {target}); ctxfs never replaces, removes or moves a link",
        path=path,
        hint=f"Change the file it leads to ({target}) by that path instead.",
        details={"symlink_target": target},
    )


async def missing_file(backend: Backend, path: str, missing: NotFound | None = None) -> FsError:
    """The error for a file that read as *missing*: ``IsADirectory`` where it is a prefix.

    The stat that tells them apart is paid only by a failed read, on a store without directories.
    """
    if not backend.capabilities.real_directories:
        try:
            kind = (await backend._stat(path)).kind
        except FsError:
            kind = None
        if kind is FileKind.DIRECTORY:
            return IsADirectory(f"{path} is a directory", path=path)
    return missing if missing is not None else NotFound(f"{path} does not exist", path=path)


def may_have_landed(failure: FsError) -> bool:
    """Whether a change that failed with *failure* may have been made all the same.

    ``Unavailable`` and ``BackendError``: its answer may have been lost. Any other error is a
    refusal (nothing was changed).
    """
    return isinstance(failure, Unavailable | BackendError)
