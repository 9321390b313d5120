"""The backend contract: what a store must do for ``ctx.fs`` to work on it.

A backend moves bytes and enforces preconditions; it knows nothing of text,
owners, observations or policies, which live above it in fs-core so that every
backend behaves the same. Implement :class:`Backend` and prove it with
:class:`ctxfs.core.testing.BackendConformance`.

Paths handed to a backend are root-relative, ``/``-separated and already
checked by :func:`ctxfs.core.paths.check_path` (no ``..``, no empty segment, no
leading ``/``); ``""`` is the root. A backend still confines them to its root,
by construction, and raises :class:`~ctxfs.core.errors.FsError` subclasses only:
its library's exceptions are translated at this boundary.
"""

from __future__ import annotations

import enum
from abc import abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from anyio.abc import AsyncResource

from ctxfs.core.errors import AlreadyExists, InvalidArgument, Stale, TooLarge
from ctxfs.core.versions import ABSENT, ContentHasher, Expect, Version

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "Backend",
    "Blob",
    "Capabilities",
    "CasScope",
    "FileKind",
    "ReadStream",
    "Stat",
]

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


class FileKind(enum.StrEnum):
    """What a path names."""

    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"


@dataclass(frozen=True, kw_only=True)
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
        self._iterator: AsyncGenerator[bytes] | None = None
        self.size = size
        """The size of the file when known at open."""

    def __aiter__(self) -> AsyncIterator[bytes]:
        self._iterator = self._iterate()
        return self._iterator

    async def aclose(self) -> None:
        """Stop the stream early; backends call this when their ``open_read`` context ends."""
        if self._iterator is not None:
            await self._iterator.aclose()
        if isinstance(self._chunks, AsyncGenerator):
            await self._chunks.aclose()

    async def _iterate(self) -> AsyncGenerator[bytes]:
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


class Backend(AsyncResource):
    """A store of files under one root. Every method is a coroutine except :meth:`lock`.

    A backend is an anyio ``AsyncResource``: ``async with backend:`` closes it on exit.
    Methods raise :class:`~ctxfs.core.errors.FsError` subclasses only; the codes
    named below are the ones the conformance suite checks.
    """

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this backend can do."""

    @abstractmethod
    async def stat(self, path: str) -> Stat:
        """Return the metadata of *path* (a file or a directory; ``""`` is the root).

        Raises:
            NotFound: Nothing exists at *path*.
            NotADirectory: A parent component is a file.

        """

    @abstractmethod
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
            IsADirectory: *path* is a directory.
            NotARegularFile: *path* is a FIFO, socket, device or other special file.
            InvalidArgument: A bound is negative.
            Stale: *version* was given and the file is at another version.
            TooLarge: The file is larger than *max_size* bytes.

        """

    def open_read(
        self, path: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AbstractAsyncContextManager[ReadStream]:
        """Open a streamed read of a whole file; memory stays bounded by *chunk_size*.

        The default reads the file at once and slices it, which suits stores
        whose files are small; stores that can stream override it. Errors are
        those of :meth:`read`, raised on entering the context or while iterating.
        """
        return self._sliced_stream(path, chunk_size)

    @asynccontextmanager
    async def _sliced_stream(self, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
        check_chunk_size(chunk_size)
        blob = await self.read(path)

        async def chunks() -> AsyncIterator[bytes]:
            for offset in range(0, len(blob.data), chunk_size):
                yield blob.data[offset : offset + chunk_size]

        stream = ReadStream(chunks(), version=blob.version, size=blob.size)
        try:
            yield stream
        finally:
            await stream.aclose()

    @abstractmethod
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
            IsADirectory: *path* is a directory.
            NotADirectory: A parent component is a file.
            TooLarge: *data* exceeds :attr:`Capabilities.max_cas_size`.

        """

    @abstractmethod
    async def delete(self, path: str, *, expect: Version | None = None) -> None:
        """Delete a file, or an empty directory; with *expect*, only at that version.

        Raises:
            NotFound: Nothing exists at *path*.
            Stale: *expect* was given and the file is at another version.
            InvalidArgument: *path* is the root, or a directory that is not empty.

        """

    @abstractmethod
    async def list(self, path: str) -> list[Stat]:
        """List the entries directly inside directory *path*, sorted by name.

        Backend-internal names (temporary files, lock files) never appear.

        Raises:
            NotFound: *path* does not exist.
            NotADirectory: *path* is a file.

        """

    @abstractmethod
    async def mkdir(self, path: str) -> None:
        """Create directory *path* and any missing parents; an existing directory is fine.

        Stores without real directories accept the call and keep nothing.

        Raises:
            AlreadyExists: *path* is a file.
            NotADirectory: A parent component is a file.

        """

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


def check_read_bounds(
    path: str, *, start: int | None, end: int | None, size: int, max_size: int | None
) -> None:
    """Refuse negative range bounds, and a file larger than *max_size*, as backends must."""
    if (start is not None and start < 0) or (end is not None and end < 0):
        raise InvalidArgument(f"byte range bounds must not be negative ({start}, {end})", path=path)
    if max_size is not None and size > max_size:
        raise TooLarge(
            f"{path} holds {size} bytes, more than the {max_size} allowed here",
            path=path,
            details={"size": size, "max_size": max_size},
        )


def check_expect(path: str, expect: Expect, current: Version | None) -> None:
    """Refuse a write whose precondition *expect* the file's *current* version fails.

    For backends that compare versions themselves (under their own lock):
    *current* is None when the file does not exist.

    Raises:
        AlreadyExists: *expect* is ABSENT and the file exists.
        Stale: *expect* is a version and the file is at another one, or missing.

    """
    if expect is ABSENT and current is not None:
        raise AlreadyExists(f"{path} already exists", path=path)
    if isinstance(expect, str) and current != expect:
        raise Stale(
            f"{path} is not at the expected version",
            path=path,
            details={"expected_version": expect, "current_version": current},
        )


def check_chunk_size(chunk_size: int) -> None:
    """Refuse a chunk size that is not a positive integer."""
    if chunk_size <= 0:
        raise InvalidArgument(f"chunk_size must be positive, got {chunk_size}")
