"""The backend contract: what a store must do for ``ctx.fs`` to work on it.

A backend moves bytes and enforces preconditions; it knows nothing of text,
owners, observations or policies, which live above it in fs-core so that every
backend behaves the same. Implement :class:`Backend` and prove it with
:class:`ctxfs.core.testing.BackendConformance`.

:class:`Backend` is a template. Its public methods do the work every store
shares, once: they check each path (:func:`~ctxfs.core.paths.check_path`:
canonical, root-relative, no reserved name), refuse the root where a file is
meant, check byte ranges, ``max_size``, pinned versions and
:attr:`Capabilities.max_cas_size`, tell a directory from a missing file on
stores without real directories, and keep reserved names out of listings. A
backend implements the protected primitives they call (``_stat``, ``_read``,
``_write``, ``_delete``, ``_list``, ``_mkdir``, and optionally ``_open_read``,
``_open_update`` and :meth:`Backend.lock`), which receive canonical paths only,
and raises :class:`~ctxfs.core.errors.FsError` subclasses only: its library's
exceptions are translated at this boundary. :mod:`ctxfs.core.kit` holds what a
backend author needs in one import.
"""

from __future__ import annotations

import builtins
import enum
import logging
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import AsyncResource

from ctxfs.core.errors import (
    AlreadyExists,
    BackendError,
    FsError,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotFound,
    Stale,
    TooLarge,
)
from ctxfs.core.paths import check_path, is_reserved
from ctxfs.core.versions import ABSENT, ContentHasher, Expect, Version

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "Backend",
    "Blob",
    "Capabilities",
    "CasScope",
    "ConditionalUpdate",
    "CutLine",
    "FileKind",
    "FileLines",
    "FileMatches",
    "FileSearch",
    "LineSearch",
    "Listing",
    "ListingPage",
    "Location",
    "ReadRequest",
    "ReadStream",
    "Stat",
    "Update",
    "check_expect",
]

log = logging.getLogger("ctxfs.core")

DEFAULT_CHUNK_SIZE = 1 << 20
"""Chunk size of streamed reads unless a caller asks otherwise (1 MiB)."""


class CasScope(enum.StrEnum):
    """Who a backend's compare-and-swap protects against.

    ``PROCESS``: writers using the same backend object in one process.
    ``HOST``: writers on one machine (a kernel lock, e.g. ``flock``).
    ``COOPERATIVE``: writers on any host that follow ctxfs's lock-file protocol.
    ``GLOBAL``: every writer of the store; the store itself enforces the condition.
    """

    PROCESS = "process"
    HOST = "host"
    COOPERATIVE = "cooperative"
    GLOBAL = "global"


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """What a backend can do, reported truthfully (probed at open where it matters)."""

    cas_scope: CasScope
    """How far conditional writes (``expect=``) are enforced."""
    range_reads: bool
    """Whether ranged reads fetch only the range (otherwise they slice a full read)."""
    real_directories: bool
    """Whether empty directories exist (False on object stores, where they are prefixes)."""
    symlinks: bool
    """Whether the store can hold symbolic links."""
    locks: bool
    """Whether :meth:`Backend.lock` gives exclusion beyond this process."""
    max_cas_size: int | None = None
    """Largest body a conditional write accepts; larger writes raise ``TooLarge``."""
    directory_moves: bool = False
    """Whether :meth:`Backend.move_directory` moves a whole directory at once (a rename);
    where False it refuses with ``IsADirectory``."""
    concurrent_reads: int = 1
    """How many files a search may read at once to hide the store's latency (an object
    store: about 16; 1 where reads are local and cheap)."""
    tree_listing: bool = False
    """Whether :meth:`Backend.list_tree` may list a whole tree at once (else it is not called)."""
    file_search: bool = False
    """Whether :meth:`Backend.search_files` has an engine of its own (else it is not called)."""
    line_search: bool = False
    """Whether :meth:`Backend.search_lines` has an engine of its own (else it is not called)."""


class FileKind(enum.StrEnum):
    """What a path names."""

    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"


@dataclass(frozen=True, kw_only=True, slots=True)
class Stat:
    """Metadata of one path, as returned by :meth:`Backend.stat` and listings."""

    path: str
    """Root-relative path."""
    kind: FileKind
    size: int | None = None
    """Size in bytes for files; None where unknown or meaningless."""
    mtime: float | None = None
    """Modification time in seconds since the epoch, where the store keeps one."""
    version: Version | None = None
    """The current version where it is known without reading the content."""

    @property
    def name(self) -> str:
        """The last path segment (``""`` for the root)."""
        return self.path.rpartition("/")[2]


@dataclass(frozen=True, kw_only=True)
class Blob:
    """Bytes read from a file, with the version of the whole file they came from."""

    data: bytes
    """The requested bytes (the whole file, or the range)."""
    version: Version
    """The version of the whole file at the moment of the read."""
    size: int
    """The size of the whole file, which may exceed ``len(data)`` for a range."""


class Listing(builtins.list[Stat]):
    """A directory's entries, as :meth:`Backend.list` returns them: a list of :class:`Stat`.

    :attr:`unnamed` holds what the store reported that no path can name (an
    object key with an empty, ``.`` or ``..`` segment, planted by another
    writer): left out of the list, but not out of sight.
    """

    def __init__(self, entries: Iterable[Stat] = (), *, unnamed: tuple[str, ...] = ()) -> None:
        super().__init__(entries)
        self.unnamed = unnamed


@dataclass(frozen=True, kw_only=True)
class ListingPage:
    """A page of a directory's entries (see ``ctx.fs.list_page``), with the whole's size."""

    entries: builtins.list[Stat]
    """The entries of the page, with their details."""
    total: int
    """Entries in the whole directory (those a policy hides not counted)."""
    unnamed: tuple[str, ...] = ()
    """As :attr:`Listing.unnamed`, for the whole directory."""


@dataclass(frozen=True, kw_only=True)
class FileSearch:
    """A search a backend may run with an engine of its own (:meth:`Backend.search_files`)."""

    path: str
    """The directory searched (canonical; resolved, on a store with links)."""
    pattern: str | None
    """A regular expression (Python syntax); None lists the files only."""
    ignore_case: bool = False
    multiline: bool = False
    """A match may span lines (``.`` matches a line break too)."""
    hidden: bool = False
    """Include names starting with ``.``."""
    ignored: bool = False
    """Include what ``.gitignore``, ``.ignore`` and ``.git/info/exclude`` exclude."""
    skip_dirs: frozenset[str] = frozenset()
    """Directory names never entered."""
    names: tuple[str, ...] | None = None
    """Only files whose name matches one of these globs (:meth:`GlobMatcher.names`); None:
    any. A first filter: the caller matches the paths it gets again."""
    glob: str | None = None
    """Only files whose path below :attr:`path` matches this glob (:func:`glob_matcher`);
    None: any. A first filter too: an engine may keep more (:meth:`GlobMatcher.outline`),
    never fewer."""
    seconds: float | None = None
    """Stop after this long; the answer then covers what was searched (``complete`` False)."""
    found_so_far: Callable[[int], None] | None = field(default=None, compare=False)
    """Told, from any thread, how many files the engine has found so far (holding a
    match, or listed), as it goes; for the progress of a long search."""


@dataclass(frozen=True, kw_only=True)
class LineSearch:
    """Matching lines of named files, by a backend's own engine (:meth:`Backend.search_lines`)."""

    paths: tuple[str, ...]
    """The files (canonical; resolved, on a store with links)."""
    pattern: str
    """A regular expression (Python syntax), matched line by line."""
    ignore_case: bool = False
    max_count: int | None = None
    """Each file's first this many matching lines at most; None: all."""
    before: int = 0
    after: int = 0
    """Context lines around each matching line."""
    max_line_chars: int = 1 << 20
    """A longer matching or context line comes as a :class:`CutLine` (or, where the
    engine cannot cut it, its file is left out of the answer)."""
    cut_chars: int = 1 << 12
    """The least a :class:`CutLine` holds on either side of its first match."""
    seconds: float | None = None


class CutLine(str):
    """A line too long to give whole: the part of it around its first match.

    The string is the part given, at most a few times :attr:`LineSearch.cut_chars`
    on either side of the match; positions are in characters, within the line.
    """

    start: int
    """Where the part given begins in the line."""
    length: int
    """The whole line's length."""
    column: int | None
    """Where the line's first match begins; None for a context line (given from its start)."""

    def __new__(cls, text: str, *, start: int, length: int, column: int | None) -> CutLine:
        """The part *text* of a line of *length* characters, beginning at *start*."""
        cut = super().__new__(cls, text)
        cut.start, cut.length, cut.column = start, length, column
        return cut


@dataclass(frozen=True, kw_only=True)
class FileLines:
    """What :meth:`Backend.search_lines` found: each file's matching and context lines."""

    lines: dict[str, list[tuple[int, str]]]
    """For each file answered, ``(number, text)`` of its matching lines and their context
    lines, in order, without line breaks; a line over the cap comes as a :class:`CutLine`.
    A file left out (binary, not UTF-8 text) is to be searched by reading it."""
    complete: bool = True
    """False when the search stopped at its time limit (no file is then answered)."""


@dataclass(frozen=True, kw_only=True)
class FileMatches:
    """What :meth:`Backend.search_files` found."""

    counts: dict[str, int]
    """Each file holding a match (its canonical path) and its matching lines; listing only:
    every file, with 0."""
    searched: int
    """Files searched."""
    complete: bool = True
    """False when the search stopped at its time limit."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Files the engine found but left out, by reason (``hard_linked``, ...)."""


@dataclass(frozen=True, kw_only=True)
class Location:
    """What a path names, as :meth:`Backend.locate` finds it."""

    resolved: str
    """The canonical root-relative path it reaches, symbolic links followed."""
    key: str
    """The file's identity: every spelling of one file (a link, a nested root) has the same key,
    and locks, observations and compare-and-swap are keyed by it."""


@dataclass(frozen=True, kw_only=True)
class ReadRequest:
    """What a read asks for, checked by :meth:`Backend.read` before a primitive sees it."""

    start: int | None = None
    """First byte of the range (``None``: the start of the file)."""
    end: int | None = None
    """End of the range, exclusive (``None``: the end of the file)."""
    version: Version | None = None
    """Read only this version of the file: any other is ``Stale``, never mixed bytes."""
    max_size: int | None = None
    """Refuse a file larger than this many bytes, before reading its content if possible."""

    @property
    def whole(self) -> bool:
        """Whether the whole file is asked for, not a range."""
        return self.start is None and self.end is None

    def cut(self, data: bytes) -> bytes:
        """The requested range of a whole file's *data* (slice rules: clipped, maybe empty)."""
        return data if self.whole else data[self.start : self.end]

    def check(self, path: str | None, *, size: int) -> None:
        """Refuse a file of *size* bytes that exceeds :attr:`max_size` (``TooLarge``).

        *path* names the file in the error (None: a driver's error, named later).
        """
        if self.max_size is not None and size > self.max_size:
            raise TooLarge(
                f"{path or 'the object'} holds {size} bytes, "
                f"more than the {self.max_size} allowed here",
                path=path,
                details={"size": size, "max_size": self.max_size},
            )


class ReadStream:
    """The content of one file as a sequence of chunks, and the version it makes up.

    Iterate it once with ``async for``. Stores with their own version token know
    :attr:`version` at open; otherwise it is the hash of the chunks and becomes
    available once iteration has finished.
    """

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        version: Version | None = None,
        size: int | None = None,
    ) -> None:
        self._chunks = chunks
        self._version = version
        self._hasher = None if version is not None else ContentHasher()
        self._finished = False
        self._iterator: AsyncIterator[bytes] | None = None
        self.size = size
        """The size of the file when known at open."""

    def __aiter__(self) -> AsyncIterator[bytes]:
        self._iterator = self._iterate()
        return self._iterator

    async def aclose(self) -> None:
        """Stop the stream early; the template calls this when ``open_read``'s context ends."""
        for iterator in (self._iterator, self._chunks):
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()

    async def _iterate(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            if self._hasher is not None:
                self._hasher.update(chunk)
            yield chunk
        self._finished = True

    @property
    def version(self) -> Version:
        """The version of the streamed content.

        Raises:
            RuntimeError: The version is a content hash and the stream is not yet exhausted.

        """
        if self._version is None:
            if not self._finished or self._hasher is None:
                raise RuntimeError("the version of a hashed stream is known only once it is read")
            self._version = self._hasher.version()
        return self._version


class Update:
    """A file read for a read-compare-write, as :meth:`Backend.open_update` yields it.

    :attr:`current` is what the file held when the update opened (None: it did
    not exist). :meth:`write` and :meth:`delete` then succeed only if the file
    is still in that state, as far as :attr:`Capabilities.cas_scope` reaches, so
    the one read serves both the caller's check and the store's condition.
    Each change runs to its end once begun, a cancellation notwithstanding (it
    is delivered after), so the caller always knows what the store holds.
    Backends subclass it where they can do better than :class:`ConditionalUpdate`.
    """

    def __init__(self, backend: Backend, path: str, current: Blob | None) -> None:
        self.backend = backend
        """The backend the file lives in."""
        self.path = path
        """The canonical path being updated."""
        self.current = current
        """The whole file as it was read, or None when it did not exist."""
        self.moved_to: Update | None = None
        """The update of the destination :meth:`move` moved the file to, once it has."""

    async def write(self, data: bytes) -> Version:
        """Replace the file read (or create it, if it did not exist) with *data*.

        Raises:
            Stale: The file changed since it was read (or was deleted).
            AlreadyExists: It did not exist, and was created meanwhile.
            TooLarge: *data* exceeds :attr:`Capabilities.max_cas_size`.

        """
        self.backend._check_size(self.path, data)
        with anyio.CancelScope(shield=True):
            version = await self._write(data)
        return version  # noqa: RET504 - (a return inside the shield reads as fall-through to mypy)

    async def delete(self) -> None:
        """Delete the file read.

        Raises:
            NotFound: It did not exist when read (``IsADirectory`` for a prefix).
            Stale: It changed since it was read.

        """
        if self.current is None:
            raise await self.missing()
        with anyio.CancelScope(shield=True):
            await self._delete(self.current.version)

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
        """The error for a file that was not there when read.

        ``NotFound``, or ``IsADirectory`` where a directory (an object-store
        prefix) stands at the path.
        """
        return await self.backend._missing(self.path)

    async def _write(self, data: bytes) -> Version:
        raise NotImplementedError  # pragma: no cover - every Update subclass has its own

    async def _delete(self, version: Version) -> None:
        raise NotImplementedError  # pragma: no cover

    async def _move(self, destination: Update) -> Version:
        """Copy to *destination* under its condition, then delete here under this one.

        If the delete fails (this file changed meanwhile), the copy is undone.
        """
        assert self.current is not None
        version = await destination.write(self.current.data)
        try:
            await self._delete(self.current.version)
        except BaseException as failure:
            with anyio.CancelScope(shield=True):
                try:
                    await destination.undo(version)
                except FsError as undo:
                    raise BackendError(
                        f"moving {self.path} to {destination.path} failed half way, and the "
                        f"copy could not be undone: both paths now hold the file ({undo})",
                        path=self.path,
                        details={"destination": destination.path, "version": version},
                    ) from failure
            raise
        return version

    async def _undo(self, written: Version | None) -> None:
        raise NotImplementedError  # pragma: no cover

    async def _undo_move(self, destination: Update, written: Version) -> None:
        """Put the file back here (create-only), then undo the destination."""
        await self._undo(None)
        await destination._undo(written)


class ConditionalUpdate(Update):
    """The default :class:`Update`: the store's compare-and-swap against the version read."""

    async def _write(self, data: bytes) -> Version:
        expect = ABSENT if self.current is None else self.current.version
        return await self.backend._write(self.path, data, expect)

    async def _delete(self, version: Version) -> None:
        await self.backend._delete(self.path, version)

    async def _undo(self, written: Version | None) -> None:
        if self.current is None:
            if written is not None:
                await self.backend._delete(self.path, written)
        else:
            expect = ABSENT if written is None else written
            await self.backend._write(self.path, self.current.data, expect)


class Backend(AsyncResource):
    """A store of files under one root.

    Every method is a coroutine except the ``open_*`` context managers and :meth:`lock`.

    A backend is an anyio ``AsyncResource``: ``async with backend:`` closes it on exit.
    Methods raise :class:`~ctxfs.core.errors.FsError` subclasses only; the codes
    named below are the ones the conformance suite checks. Subclasses implement
    the primitives (the abstract ``_`` methods) and leave the public methods as
    they are.
    """

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this backend can do."""

    # -- the public contract: shared checks, then the primitive --------------------------------

    async def locate(self, path: str) -> Location:
        """Return what *path* resolves to beneath the root, and the identity of that file.

        Works for paths that do not exist yet (the missing part is kept as
        spelled). On a store without links the path is its own resolution and
        key; on local disk the key is the absolute path the kernel resolves the
        file to, so a link, a ``.`` or ``//`` spelling and a nested root all lead
        to one key, which stays the same once a create has made the directories.

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

        A range follows slice rules for non-negative bounds: an empty range, or a
        start at or past the end of the file, returns no bytes; an end past the
        end of the file is clipped. When *version* is given the read is pinned to
        it: if the file is no longer at that version, nothing is returned. When
        *max_size* is given, a larger file is refused before any content is read.

        Raises:
            NotFound: The file does not exist.
            IsADirectory: *path* is a directory (on object stores: a prefix with
                objects under it), or the root.
            NotARegularFile: *path* is a FIFO, socket, device or other special file.
            InvalidArgument: A bound is negative.
            Stale: *version* was given and the file is at another version.
            TooLarge: The file is larger than *max_size* bytes.

        """
        path = self._file_path(path)
        request = ReadRequest(start=start, end=end, version=version, max_size=max_size)
        if (start is not None and start < 0) or (end is not None and end < 0):
            raise InvalidArgument(f"byte range bounds must not be negative ({start}, {end})")
        try:
            blob = await self._read(path, request)
        except NotFound as missing:
            raise await self._missing(path, missing) from None
        return self._checked(path, blob, request)

    def open_read(
        self, path: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AbstractAsyncContextManager[ReadStream]:
        """Open a streamed read of a whole file; memory stays bounded by *chunk_size*.

        Errors are those of :meth:`read`, raised on entering the context or while
        iterating; a non-positive *chunk_size* is ``InvalidArgument``.
        """
        return self._checked_stream(self._file_path(path), chunk_size)

    async def write(self, path: str, data: bytes, *, expect: Expect) -> Version:
        """Replace or create a file with *data*, atomically, and return its new version.

        *expect* is the precondition, checked atomically with the write as far as
        :attr:`Capabilities.cas_scope` reaches:

        - a :data:`~ctxfs.core.versions.Version`: the file must exist at exactly that version;
        - :data:`~ctxfs.core.versions.ABSENT`: the file must not exist (create-only);
        - ``None``: no condition.

        Missing parent directories are created. Readers never see a partial write.

        Raises:
            Stale: *expect* is a version and the file is at another one, or is missing.
            AlreadyExists: *expect* is ABSENT and the path exists.
            IsADirectory: *path* is a directory (where the store has real ones), or the root.
            NotADirectory: A parent component is a file.
            TooLarge: *data* exceeds :attr:`Capabilities.max_cas_size`.

        """
        path = self._file_path(path)
        self._check_size(path, data)
        return await self._write(path, data, expect)

    def open_update(
        self, path: str, *, max_size: int | None = None
    ) -> AbstractAsyncContextManager[Update]:
        """Read a file whole to change it: the read-compare-write of every ``ctx.fs`` mutation.

        Inside the context, :attr:`Update.current` is the file as read (None if it
        does not exist), and :meth:`Update.write` or :meth:`Update.delete` changes
        it only if it is still so. The one read serves both: no second read, no
        second hash. A backend may hold a lock for the context's lifetime.

        Raises:
            IsADirectory, NotARegularFile, TooLarge: As for :meth:`read`.

        """
        return self._checked_update(self._file_path(path), ReadRequest(max_size=max_size))

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

        One atomic rename where the store has one: afterwards *destination* holds
        what *source* held (files, directories and symbolic links, links not
        followed), and *source* is gone; on failure nothing moved. *destination*
        must not exist (not even as an empty directory or a link); its missing
        parent directories are made. Where :attr:`Capabilities.directory_moves`
        is False (an object store, whose directories are key prefixes) the call is
        refused before anything is touched: a caller moves the files one by one.
        The caller (``ctx.fs.move``) has judged and locked every entry below.

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
            raise self._no_directory_moves(source)
        await self._move_directory(source, destination)

    async def list(self, path: str, *, details: bool = True) -> Listing:
        """List the entries directly inside directory *path*, sorted by name.

        With ``details=False`` the entries may carry their kind only, no size
        nor time, where the store lists faster so (:meth:`_list_names`);
        :meth:`details` then completes the few that are shown.

        Reserved names (the backends' temporary and lock files) never appear,
        nor do entries no path can name: an empty, ``.`` or ``..`` name (object
        keys such as ``a//b``, ``a/./b`` or ``../b``, planted by another
        writer), or one the store reports outside *path*. Those are counted in
        :attr:`Listing.unnamed` and logged, so a walk never loops over them or
        shows them, yet says they are there.

        Raises:
            NotFound: *path* does not exist.
            NotADirectory: *path* is a file.

        """
        path = check_path(path)
        listed = None if details else await self._list_names(path)
        return self.listing(path, await self._list(path)) if listed is None else listed

    def listing(self, path: str, entries: Iterable[Stat]) -> Listing:
        """The :class:`Listing` of directory *path* from a store's *entries*: :meth:`list`'s rules.

        Sorts them by name, leaves out reserved names and counts (and logs) the
        entries no path can name.
        """
        kept, unnamed = [], []
        for entry in entries:
            if not _names_an_entry_of(path, entry):
                unnamed.append(entry.path)
            elif not is_reserved(entry.name):
                kept.append(entry)
        if unnamed:
            log.warning("%r: skipped %d entries no path can name: %r", path, len(unnamed), unnamed)
        return Listing(sorted(kept, key=lambda entry: entry.name), unnamed=tuple(unnamed))

    async def list_tree(self, path: str) -> Listing | None:
        """Every file below directory *path*, at any depth, sorted by path, in one listing.

        Where the store lists a whole tree at once (a flat listing of a key
        prefix: one request per thousand objects, not one per directory);
        None where it does not (the default), and the caller walks *path* with
        :meth:`list`. Entries are files, with their details; directories are
        only implied by their paths (an empty one is not seen). Reserved names
        and entries no path can name, at any depth, are left out and counted as
        for :meth:`list`.

        Raises:
            NotFound: *path* does not exist.
            NotADirectory: *path* is a file.

        """
        path = check_path(path)
        listed = await self._list_tree(path) if self.capabilities.tree_listing else None
        if listed is None:
            return None
        kept, unnamed = [], []
        for entry in listed:
            inside = entry.path.removeprefix(f"{path}/") if path else entry.path
            segments = inside.split("/")
            if (path and inside == entry.path) or any(s in ("", ".", "..") for s in segments):
                unnamed.append(entry.path)
            elif not any(is_reserved(segment) for segment in segments):
                kept.append(entry)
        if unnamed:
            log.warning("%r: skipped %d entries no path can name: %r", path, len(unnamed), unnamed)
        if (
            not kept
            and not unnamed
            and path
            and (await self._stat(path)).kind is not (FileKind.DIRECTORY)
        ):
            raise NotADirectory(f"{path} is a file, not a directory", path=path)
        return Listing(sorted(kept, key=lambda entry: entry.path), unnamed=tuple(unnamed))

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

        Optional: the default, None, means the backend has no such engine (or
        cannot run this search, e.g. a pattern its engine does not understand),
        and the caller walks and reads through ``ctx.fs`` instead. An engine
        must be at least as confined as :meth:`read`: it never reports a file,
        nor counts a match, from outside the root. Hidden names, ignore files
        and *skip_dirs* follow ripgrep's defaults, as ``ctxfs.tools.ignore``
        describes; policies are the caller's to apply to the paths returned.
        """
        del search
        return None

    async def search_lines(self, search: LineSearch) -> FileLines | None:
        """The matching lines (and context lines) of ``search.paths``, by an engine of its own.

        Optional, as :meth:`search_files` is, and as confined: None (the
        default) means the caller reads the files through ``ctx.fs`` instead,
        which it also does for any file the answer leaves out. Policies are the
        caller's to apply before it asks.
        """
        del search
        return None

    def lock(self, key: str, *, timeout: float) -> AbstractAsyncContextManager[None] | None:
        """Return a lock giving exclusion on *key* beyond this process, or None.

        The file-context plugin holds it around read-compare-write, after its own
        in-process lock. The default is None: the backend has no such lock and
        relies on its compare-and-swap alone. A returned lock raises ``Busy``
        when *timeout* seconds pass without acquiring it.
        """
        del key, timeout
        return None

    async def aclose(self) -> None:
        """Release connections and handles. Further calls are undefined."""

    # -- primitives: what a backend implements --------------------------------------------------

    @abstractmethod
    async def _stat(self, path: str) -> Stat:
        """The metadata of canonical *path*; errors as for :meth:`stat`."""

    @abstractmethod
    async def _read(self, path: str, request: ReadRequest) -> Blob:
        """Read canonical file *path* as *request* asks.

        The bounds are checked already. Refuse ``request.max_size`` before
        fetching the content where the store allows (the template checks the
        size again afterwards), and pin ``request.version`` where the store can
        (the template compares the version read with it afterwards). A directory
        is ``IsADirectory`` where the store has real ones; elsewhere raise
        ``NotFound`` and the template tells a prefix from a missing file.
        """

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

        Errors as for :meth:`list`.
        The default, None, makes :meth:`list` call :meth:`_list`. A store that
        overrides it (fs-local: no ``stat`` per entry, and the listing of an
        unchanged directory kept, so a page costs only its page) overrides
        :meth:`_details` too. The listing returned is not changed by callers.
        """
        return None

    async def _details(self, entries: builtins.list[Stat]) -> builtins.list[Stat]:
        """*entries* (from :meth:`_list_names`) with size and time; the default: as they are."""
        return entries

    async def _list_tree(self, path: str) -> builtins.list[Stat] | None:
        """The files below directory *path* at any depth, in any order; None: not offered.

        Errors as for :meth:`list_tree`; an empty answer for a *path* that is
        missing or a file is fine (the template tells them apart).
        """
        return None

    async def _move_directory(self, source: str, destination: str) -> None:
        """Rename canonical directory *source* to *destination*, as :meth:`move_directory` says.

        Only called where :attr:`Capabilities.directory_moves` is True; the
        paths are checked already (neither is the root, *destination* is not
        inside *source*). The default refuses: a backend that declares the
        capability overrides it.
        """
        del destination
        raise self._no_directory_moves(source)

    def _no_directory_moves(self, path: str) -> FsError:
        """The refusal of a directory move on a backend that cannot move one whole."""
        if self.capabilities.real_directories:
            why = "this backend cannot move a directory at once"
        else:
            why = "this store has no real directories"
        return IsADirectory(
            f"{path} is a directory; {why}",
            path=path,
            hint="Move the files in it one by one (list it, then move each file).",
        )

    @abstractmethod
    async def _mkdir(self, path: str) -> None:
        """Create canonical directory *path* (never the root) and its parents."""

    async def _locate(self, path: str) -> Location:
        """What canonical *path* resolves to; the default, for stores without links: itself."""
        return Location(resolved=path, key=path)

    def _open_read(self, path: str, chunk_size: int) -> AbstractAsyncContextManager[ReadStream]:
        """Stream canonical file *path*.

        The default reads it whole and slices it, which suits stores whose files
        are small; stores that can stream override it.
        """
        return self._sliced_stream(path, chunk_size)

    def _open_update(self, path: str, request: ReadRequest) -> AbstractAsyncContextManager[Update]:
        """Read canonical file *path* for an update.

        The default is a :class:`ConditionalUpdate` over the version read;
        backends with a lock of their own may hold it instead.
        """
        return self._conditional_update(path, request)

    # -- the template's own machinery --------------------------------------------------------

    def _file_path(self, path: str) -> str:
        """*path*, checked, where a file is meant: the root is a directory."""
        path = check_path(path)
        if not path:
            raise IsADirectory("the root is a directory", path=path)
        return path

    def _checked(self, path: str, blob: Blob, request: ReadRequest) -> Blob:
        """The checks every read gets, whatever the primitive did: size and pinned version."""
        request.check(path, size=blob.size)
        if request.version is not None and blob.version != request.version:
            raise Stale(
                f"{path} is no longer at the requested version",
                path=path,
                details={"expected_version": request.version, "current_version": blob.version},
            )
        return blob

    def _check_size(self, path: str, data: bytes) -> None:
        limit = self.capabilities.max_cas_size
        if limit is not None and len(data) > limit:
            raise TooLarge(
                f"{path}: {len(data)} bytes is more than the {limit} one write here can carry",
                path=path,
                hint="Split the content into smaller files.",
                details={"size": len(data), "max_size": limit},
            )

    async def _missing(self, path: str, missing: NotFound | None = None) -> FsError:
        """The error for a file that read as *missing*: ``IsADirectory`` where it is a prefix.

        Stores without real directories read a prefix as missing; the stat that
        tells the two apart is paid only by a read that failed.
        """
        if not self.capabilities.real_directories:
            try:
                kind = (await self._stat(path)).kind
            except FsError:
                kind = None
            if kind is FileKind.DIRECTORY:
                return IsADirectory(f"{path} is a directory", path=path)
        return missing if missing is not None else NotFound(f"{path} does not exist", path=path)

    @asynccontextmanager
    async def _checked_stream(self, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
        if chunk_size <= 0:
            raise InvalidArgument(f"chunk_size must be positive, got {chunk_size}")
        async with AsyncExitStack() as stack:
            try:
                stream = await stack.enter_async_context(self._open_read(path, chunk_size))
            except NotFound as missing:
                raise await self._missing(path, missing) from None
            try:
                yield stream
            finally:
                await stream.aclose()

    @asynccontextmanager
    async def _sliced_stream(self, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
        blob = await self._read(path, ReadRequest())

        async def chunks() -> AsyncIterator[bytes]:
            for offset in range(0, len(blob.data), chunk_size):
                yield blob.data[offset : offset + chunk_size]

        yield ReadStream(chunks(), version=blob.version, size=blob.size)

    @asynccontextmanager
    async def _checked_update(self, path: str, request: ReadRequest) -> AsyncIterator[Update]:
        async with self._open_update(path, request) as update:
            if update.current is not None:
                self._checked(path, update.current, request)
            yield update

    @asynccontextmanager
    async def _conditional_update(self, path: str, request: ReadRequest) -> AsyncIterator[Update]:
        try:
            current: Blob | None = await self._read(path, request)
        except NotFound:
            current = None
        yield ConditionalUpdate(self, path, current)


def check_expect(
    path: str, expect: Expect, current: Version | Callable[[], Version] | None
) -> None:
    """Refuse a write whose precondition *expect* the file's *current* state fails.

    For backends that compare versions themselves, under their own lock.
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


def _names_an_entry_of(directory: str, entry: Stat) -> bool:
    """Whether *entry* is a child of *directory* whose name is a segment.

    Not empty, ``.`` or ``..``. Names a path check refuses for other reasons (a
    control character) are kept: a local directory may hold them, and tools show
    them escaped.
    """
    name = entry.name
    return name not in ("", ".", "..") and entry.path == (
        f"{directory}/{name}" if directory else name
    )
