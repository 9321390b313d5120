"""The backend template: :class:`Backend`, whose public methods check, then call primitives."""

from __future__ import annotations

import builtins
from abc import abstractmethod
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial

from anyio.abc import AsyncResource

from ctxfs.core.backend.capabilities import Capabilities
from ctxfs.core.backend.files import Blob, FileKind, Listing, Location, Stat, listing_work
from ctxfs.core.backend.reads import DEFAULT_CHUNK_SIZE, ReadRequest, ReadStream
from ctxfs.core.backend.searches import FileLines, FileMatches, FileSearch, LineSearch
from ctxfs.core.backend.update import ConditionalUpdate, Update, missing_file
from ctxfs.core.errors import (
    FsError,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotFound,
    Stale,
)
from ctxfs.core.paths import check_path
from ctxfs.core.versions import Expect, Version

__all__ = ["Backend"]


class Backend(AsyncResource):
    """A store of files under one root, as a template.

    :attr:`capabilities` declares, as data, what the backend guarantees and which
    optional engines core may call (``tree_listing``: :meth:`_list_tree`;
    ``file_search``: :meth:`search_files`; ``line_search``: :meth:`search_lines`;
    ``directory_moves``: :meth:`_move_directory`; ``kept_versions``:
    :meth:`_read_version`): only those declared, whatever a subclass overrides.

    The public methods check paths (canonical, no reserved name, not the root
    where a file is meant), ranges, sizes and pinned versions, then call the
    primitives (the ``_`` methods), which receive canonical paths only. Every
    method is a coroutine except the ``open_*`` context managers and :meth:`lock`,
    and raises :class:`~ctxfs.core.errors.FsError` subclasses only: a store's
    exceptions are translated at this boundary. ``async with backend:`` closes it.
    """

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this backend can do (a property or a class attribute)."""

    root_identity: str | None = None
    """What names the root wherever reached from, where known (fs-local: filesystem and inode; a
    store: service, name, prefix); an owner's steps made under another root are not undone here."""

    # -- the public contract: shared checks, then the primitive --------------------------------

    async def locate(self, path: str) -> Location:
        """Return what *path* resolves to beneath the root, and the identity of that file.

        A missing part is kept as spelled. Every spelling of one file (a link,
        a nested root) has one key, before and after a create makes its parents.

        Raises:
            OutsideRoot: A symbolic link on the path leads outside the root.
            Denied: A symbolic link is on the path and the backend refuses links.
            NotADirectory: A parent component is a file.

        """
        return await self._locate(check_path(path))

    async def stat(self, path: str) -> Stat:
        """Return the metadata of *path* (a file or a directory; ``""`` is the root).

        Raises:
            NotFound: Nothing exists at *path*.
            NotADirectory: A parent component is a file.
            InvalidPath, OutsideRoot: *path* is not canonical, or names a reserved entry.

        """
        return await self._stat(check_path(path))

    async def read(
        self,
        path: str,
        *,
        start: int | None = None,
        end: int | None = None,
        version: Version | None = None,
        max_size: int | None = None,
    ) -> Blob:
        """Read a file, whole or the byte range ``[start, end)``, with its version.

        A range follows slice rules (clipped, maybe empty). With *version*, the
        read is pinned to it; with *max_size*, a larger file is refused before
        its content is read.

        Raises:
            NotFound: The file does not exist.
            IsADirectory: *path* is a directory (on object stores: a prefix with
                objects under it), or the root.
            NotARegularFile: *path* is a FIFO, socket, device or other special file.
            InvalidArgument: A bound is negative.
            Stale: *version* was given and the file is at another version.
            TooLarge: The file is larger than *max_size* bytes.

        """
        path = _file_path(path)
        request = ReadRequest(start=start, end=end, version=version, max_size=max_size)
        if (start is not None and start < 0) or (end is not None and end < 0):
            raise InvalidArgument(f"byte range bounds must not be negative ({start}, {end})")
        try:
            blob = await self._read(path, request)
        except NotFound as missing:
            raise await missing_file(self, path, missing) from None
        return _checked(path, blob, request)

    def open_read(
        self, path: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AbstractAsyncContextManager[ReadStream]:
        """Open a streamed read of a whole file; memory stays bounded by *chunk_size*.

        Errors are those of :meth:`read`, raised on entering the context or while
        iterating; a non-positive *chunk_size* is ``InvalidArgument``.
        """
        return _checked_stream(self, _file_path(path), chunk_size)

    async def read_version(self, path: str, version: Version) -> bytes | None:
        """The whole content *path* had at *version*, read back from the store's own history.

        None where the store no longer keeps that version (always, unless
        :attr:`Capabilities.kept_versions`); what the file holds now does not matter.

        Raises:
            IsADirectory: *path* is the root.
            PermissionDenied, Unavailable, BackendError: The store failed to answer.

        """
        path = _file_path(path)
        if not self.capabilities.kept_versions:
            return None
        return await self._read_version(path, version)

    async def write(self, path: str, data: bytes, *, expect: Expect) -> Version:
        """Replace or create a file with *data*, atomically, and return its new version.

        *expect*, checked atomically with the write as far as
        :attr:`Capabilities.cas_scope` reaches, is a version (the file must be at
        it), ``ABSENT`` (create-only) or None (no condition). Missing parents are
        made; readers never see a partial write.

        Raises:
            Stale: *expect* is a version and the file is at another one, or is missing.
            AlreadyExists: *expect* is ABSENT and the path exists.
            IsADirectory: *path* is a directory (where the store has real ones), or the root.
            NotADirectory: A parent component is a file.
            TooLarge: *data* exceeds :attr:`Capabilities.max_cas_size`.

        """
        path = _file_path(path)
        self.capabilities.check_size(path, data)
        return await self._write(path, data, expect)

    def open_update(
        self, path: str, *, max_size: int | None = None, content_max: int | None = None
    ) -> AbstractAsyncContextManager[Update]:
        """Read a file whole to change it: the read-compare-write of every ``ctx.fs`` mutation.

        :attr:`Update.current` is the file as read (None: missing; with *content_max*, a
        larger file's content may be left out); the update's changes succeed only while it
        is still so. A backend may hold a lock for the context's lifetime.

        Raises:
            IsADirectory, NotARegularFile, TooLarge: As for :meth:`read`.

        """
        return _checked_update(self, _file_path(path), max_size, content_max)

    async def delete(self, path: str, *, expect: Version | None = None) -> None:
        """Delete a file, or an empty directory; with *expect*, only at that version.

        Raises:
            NotFound: Nothing exists at *path*.
            Stale: *expect* was given and the file is at another version.
            InvalidArgument: *path* is the root, or a directory that is not empty.

        """
        path = check_path(path)
        if not path:
            raise InvalidArgument("the root cannot be deleted", path=path)
        await self._delete(path, expect)

    async def move_directory(self, source: str, destination: str) -> None:
        """Move directory *source*, with everything in it, to *destination*, at once.

        One atomic rename: afterwards *destination* holds what *source* held
        (links moved, not followed), and *source* is gone; on failure nothing
        moved. *destination* must not exist (not even as a link); its missing
        parents are made. Refused untouched where
        :attr:`Capabilities.directory_moves` is False.

        Raises:
            IsADirectory: The backend cannot move a directory whole.
            NotFound: *source* does not exist.
            NotADirectory: *source* is not a directory (a file, a link), or a
                parent of *destination* is a file.
            AlreadyExists: *destination* exists.
            InvalidArgument: Either path is the root, or *destination* is *source*
                or lies inside it.

        """
        source, destination = check_path(source), check_path(destination)
        if not source or not destination:
            raise InvalidArgument("the root cannot be moved, nor replaced", path=source)
        if destination == source or destination.startswith(f"{source}/"):
            raise InvalidArgument(
                f"{destination} is inside {source}: a directory cannot move into itself",
                path=source,
                hint="Choose a destination outside the directory being moved.",
            )
        if not self.capabilities.directory_moves:
            raise _no_directory_moves(self.capabilities, source)
        await self._move_directory(source, destination)

    async def list(self, path: str, *, details: bool = True) -> Listing:
        """List the entries directly inside directory *path*, sorted by name.

        With ``details=False`` the entries may carry their kind only, where the
        store lists faster so; :meth:`details` completes those shown. Reserved
        names never appear, nor do entries no path can name (an empty, ``.`` or
        ``..`` segment, or one outside *path*): those are counted in
        :attr:`Listing.unnamed` and logged.

        Raises:
            NotFound: *path* does not exist.
            NotADirectory: *path* is a file.

        """
        path = check_path(path)
        if not details and (listed := await self._list_names(path)) is not None:
            return listed
        entries = await self._list(path)
        return await listing_work(len(entries), partial(Listing.of, path, entries))

    async def list_tree(self, path: str) -> Listing | None:
        """Every file below directory *path*, at any depth, sorted by path, in one listing.

        None unless :attr:`Capabilities.tree_listing` (the caller walks with
        :meth:`list`). Entries are files, with their details; directories are
        implied by their paths. Reserved names and entries no path can name, at
        any depth, are left out and counted as for :meth:`list`.

        Raises:
            NotFound: *path* does not exist.
            NotADirectory: *path* is a file.

        """
        path = check_path(path)
        listed = await self._list_tree(path) if self.capabilities.tree_listing else None
        if listed is None:
            return None
        tree = await listing_work(len(listed), partial(Listing.tree, path, listed))
        empty = not tree and not tree.unnamed
        if empty and path and (await self._stat(path)).kind is not FileKind.DIRECTORY:
            raise NotADirectory(f"{path} is a file, not a directory", path=path)
        return tree

    async def details(self, entries: Iterable[Stat]) -> builtins.list[Stat]:
        """*entries* of a listing made with ``details=False``, with their size and time.

        An entry that has gone since may be left out (entries that have their
        details already are returned as they are).
        """
        return await self._details(builtins.list(entries))

    async def mkdir(self, path: str) -> None:
        """Create directory *path* and any missing parents; an existing directory is fine.

        Stores without real directories accept the call and keep nothing.

        Raises:
            AlreadyExists: *path* is a file.
            NotADirectory: A parent component is a file.

        """
        path = check_path(path)
        if path:
            await self._mkdir(path)

    async def search_files(self, search: FileSearch) -> FileMatches | None:
        """Find the files below ``search.path`` holding a match, with an engine of its own.

        Called only where :attr:`Capabilities.file_search` is declared. None: the
        engine cannot run this search, and the caller walks and reads through
        ``ctx.fs``. The engine is as confined as :meth:`read` (nothing from
        outside the root); hidden names, ignore files and *skip_dirs* follow
        ripgrep's defaults; policies are the caller's to apply.
        """
        del search
        return None

    async def search_lines(self, search: LineSearch) -> FileLines | None:
        """The matching lines (and context lines) of ``search.paths``, by an engine of its own.

        Called only where :attr:`Capabilities.line_search` is declared; as
        confined as :meth:`search_files`. None, or a file left out of the
        answer: the caller reads through ``ctx.fs`` instead.
        """
        del search
        return None

    def lock(self, key: str, *, timeout: float) -> AbstractAsyncContextManager[None] | None:
        """Return a lock giving exclusion on *key* beyond this process, or None.

        Held around read-compare-write, after the in-process lock. None (the
        default): the compare-and-swap alone. A lock raises ``Busy`` after
        *timeout* seconds.
        """
        del key, timeout
        return None

    def lock_order(self, key: str) -> str:
        """Where *key*'s lock stands among several that one call takes.

        A call holding the locks of several files (a directory move, a patch) takes them in this
        order, so that two calls never wait on each other. The default is the key itself; a
        backend whose locks are shared (hashed buckets) orders by what it locks.
        """
        return key

    async def aclose(self) -> None:
        """Release connections and handles. Further calls are undefined."""

    # -- primitives: what a backend implements --------------------------------------------------

    @abstractmethod
    async def _stat(self, path: str) -> Stat:
        """The metadata of canonical *path*; errors as for :meth:`stat`."""

    @abstractmethod
    async def _read(self, path: str, request: ReadRequest) -> Blob:
        """Read canonical file *path* as *request* asks.

        Refuse ``request.max_size`` before fetching, and pin ``request.version``,
        where the store can (the template checks both afterwards). A directory is
        ``IsADirectory`` where the store has real ones, else ``NotFound`` (the
        template tells a prefix from a missing file).
        """

    async def _read_version(self, path: str, version: Version) -> bytes | None:
        """Canonical file *path*'s content at *version* from the store's history, or None.

        Called only where :attr:`Capabilities.kept_versions` is True; the bytes must
        be those of *version* (a store checks the version it fetched), never a guess.
        """
        del path, version
        return None

    @abstractmethod
    async def _write(self, path: str, data: bytes, expect: Expect) -> Version:
        """Store *data* at canonical file *path* under *expect*; errors as for :meth:`write`.

        Stores without a native condition check it with :func:`check_expect`
        under their own lock.
        """

    @abstractmethod
    async def _delete(self, path: str, expect: Version | None) -> None:
        """Delete canonical *path* (never the root); errors as for :meth:`delete`."""

    @abstractmethod
    async def _list(self, path: str) -> builtins.list[Stat]:
        """The entries of directory *path*, in any order; errors as for :meth:`list`.

        The template sorts them and drops reserved names.
        """

    async def _list_names(self, path: str) -> Listing | None:
        """Directory *path*'s :meth:`listing`, kinds only, where cheaper than :meth:`_list`.

        None (the default): :meth:`list` calls :meth:`_list`. A store that
        overrides it overrides :meth:`_details` too. Callers do not change it.
        """
        return None

    async def _details(self, entries: builtins.list[Stat]) -> builtins.list[Stat]:
        """*entries* (from :meth:`_list_names`) with size and time; the default: as they are."""
        return entries

    async def _list_tree(self, path: str) -> builtins.list[Stat] | None:
        """The files below directory *path* at any depth, in any order (``tree_listing``).

        Errors as for :meth:`list_tree`; an empty answer for a missing *path* or
        a file is fine (the template tells them apart).
        """
        return None

    async def _move_directory(self, source: str, destination: str) -> None:
        """Rename directory *source* to *destination*, as :meth:`move_directory` says.

        Called only where :attr:`Capabilities.directory_moves` is True, with checked paths.
        """
        del destination
        raise _no_directory_moves(self.capabilities, source)

    @abstractmethod
    async def _mkdir(self, path: str) -> None:
        """Create canonical directory *path* (never the root) and its parents."""

    async def _locate(self, path: str) -> Location:
        """What canonical *path* resolves to; the default, for stores without links: itself."""
        return Location(resolved=path, key=path)

    def _open_read(self, path: str, chunk_size: int) -> AbstractAsyncContextManager[ReadStream]:
        """Stream canonical file *path*; the default reads it whole and slices it."""
        return _sliced_stream(self, path, chunk_size)

    @asynccontextmanager
    async def _open_update(self, path: str, request: ReadRequest) -> AsyncIterator[Update]:
        """Read canonical file *path* for an update: by default a :class:`ConditionalUpdate`.

        A backend with a lock of its own may hold it from the read to the change.
        """
        try:
            current: Blob | None = await self._read(path, request)
        except NotFound:
            current = None
        yield ConditionalUpdate(self, path, current)


def _file_path(path: str) -> str:
    """*path*, checked, where a file is meant: the root is a directory."""
    path = check_path(path)
    if not path:
        raise IsADirectory("the root is a directory", path=path)
    return path


def _checked(path: str, blob: Blob, request: ReadRequest) -> Blob:
    """The checks every read gets, whatever the primitive did: size and pinned version."""
    request.check(path, size=blob.size)
    if request.version is not None and blob.version != request.version:
        raise Stale(
            f"{path} is no longer at the requested version",
            path=path,
            details={"expected_version": request.version, "current_version": blob.version},
        )
    return blob


def _no_directory_moves(capabilities: Capabilities, path: str) -> FsError:
    """The refusal of a directory move on a backend that cannot move one whole."""
    if capabilities.real_directories:
        why = "this backend cannot move a directory at once"
    else:
        why = "this store has no real directories"
    return IsADirectory(
        f"{path} is a directory; {why}",
        path=path,
        hint="Move the files in it one by one (list it, then move each file).",
    )


@asynccontextmanager
async def _sliced_stream(backend: Backend, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
    blob = await backend._read(path, ReadRequest())

    async def chunks() -> AsyncIterator[bytes]:
        for offset in range(0, len(blob.data), chunk_size):
            yield blob.data[offset : offset + chunk_size]

    yield ReadStream(chunks(), version=blob.version, size=blob.size)


@asynccontextmanager
async def _checked_stream(
    backend: Backend, path: str, chunk_size: int
) -> AsyncIterator[ReadStream]:
    if chunk_size <= 0:
        raise InvalidArgument(f"chunk_size must be positive, got {chunk_size}")
    async with AsyncExitStack() as stack:
        try:
            stream = await stack.enter_async_context(backend._open_read(path, chunk_size))
        except NotFound as missing:
            raise await missing_file(backend, path, missing) from None
        try:
            yield stream
        finally:
            await stream.aclose()


@asynccontextmanager
async def _checked_update(
    backend: Backend, path: str, max_size: int | None, content_max: int | None
) -> AsyncIterator[Update]:
    request = ReadRequest(max_size=max_size, content_max=content_max)
    async with backend._open_update(path, request) as update:
        if update.current is not None:
            _checked(path, update.current, request)
        yield update
