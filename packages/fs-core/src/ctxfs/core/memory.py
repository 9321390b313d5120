"""``memory://``: a complete in-process backend, and the test double for everything above it.

It keeps real directories, enforces compare-and-swap under a lock (scope:
this process), serves byte ranges and listings, and counts its calls. Its
:class:`Faults` let a test fail the next call with a chosen error, slip a
concurrent change in between a read and a write, or add latency.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar, Self
from urllib.parse import urlsplit

import anyio

from ctxfs.core.backend import (
    Backend,
    Blob,
    Capabilities,
    CasScope,
    FileKind,
    ReadRequest,
    Stat,
    check_expect,
)
from ctxfs.core.errors import AlreadyExists, InvalidArgument, IsADirectory, NotADirectory, NotFound
from ctxfs.core.paths import join_path
from ctxfs.core.versions import Expect, Version, content_version

__all__ = ["Faults", "MemoryBackend", "MemoryStore"]


@dataclass(frozen=True)
class _File:
    data: bytes
    version: Version
    mtime: float

    @classmethod
    def of(cls, data: bytes) -> _File:
        return cls(data=bytes(data), version=content_version(data), mtime=time.time())


@dataclass
class MemoryStore:
    """The shared state behind one or more :class:`MemoryBackend` objects."""

    files: dict[str, _File] = field(default_factory=dict)
    directories: dict[str, set[str]] = field(default_factory=lambda: {"": set()})
    """Every directory (``""`` is the root), and the names in it."""
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Faults:
    """Misbehaviour to inject into a :class:`MemoryBackend`, for tests."""

    latency: float = 0.0
    """Seconds every call sleeps before doing its work."""
    _failures: list[tuple[str, str | None, Exception]] = field(
        default_factory=list, init=False, repr=False
    )
    _changes: list[tuple[str, bytes | None]] = field(default_factory=list, init=False, repr=False)

    def fail_next(self, method: str, error: Exception, *, path: str | None = None) -> None:
        """Make the next call of *method* (on *path*, if given) raise *error*, changing nothing.

        An ``FsError`` is a failure the contract allows; any other exception
        plays a backend bug, which layers above must contain.
        """
        self._failures.append((method, path, error))

    def change_before_next_write(self, path: str, data: bytes | None) -> None:
        """Before the next write to *path* runs, store *data* there (None deletes it).

        This is another writer winning the race between a read and a write:
        the write's precondition then meets the changed file.
        """
        self._changes.append((path, data))

    def _take_failure(self, method: str, path: str) -> Exception | None:
        for index, (wanted, wanted_path, error) in enumerate(self._failures):
            if wanted == method and wanted_path in (None, path):
                del self._failures[index]
                return error
        return None

    def _take_changes(self, path: str) -> list[bytes | None]:
        taken = [data for wanted, data in self._changes if wanted == path]
        self._changes = [(wanted, data) for wanted, data in self._changes if wanted != path]
        return taken


class MemoryBackend(Backend):
    """A store held in memory.

    Args:
        store: The state to use; backends given the same store see the same files.
            A new empty store by default.

    """

    capabilities = Capabilities(
        cas_scope=CasScope.PROCESS,
        range_reads=True,
        real_directories=True,
        symlinks=False,
        locks=False,
        directory_moves=True,
    )

    _named: ClassVar[dict[str, MemoryStore]] = {}
    _named_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.store = store if store is not None else MemoryStore()
        self.faults = Faults()
        self.calls: Counter[str] = Counter()
        """How many times each method was called (for tests: "nothing was written")."""

    @classmethod
    def from_url(cls, url: str) -> Self:
        """Open ``memory://`` (a new private store) or ``memory://name`` (shared by name)."""
        parts = urlsplit(url)
        name = parts.netloc + parts.path
        if parts.query or parts.fragment:
            raise InvalidArgument(f"unexpected query or fragment in {url!r}")
        if not name:
            return cls()
        with cls._named_lock:
            store = cls._named.setdefault(name, MemoryStore())
        return cls(store)

    async def _enter(self, method: str, path: str) -> None:
        self.calls[method] += 1
        if self.faults.latency:
            await anyio.sleep(self.faults.latency)
        error = self.faults._take_failure(method, path)
        if error is not None:
            raise error

    async def _stat(self, path: str) -> Stat:
        await self._enter("stat", path)
        with self.store.lock:
            return self._stat_locked(path)

    async def _read(self, path: str, request: ReadRequest) -> Blob:
        await self._enter("read", path)
        with self.store.lock:
            file = self._file(path)
        return Blob(data=request.cut(file.data), version=file.version, size=len(file.data))

    async def _write(self, path: str, data: bytes, expect: Expect) -> Version:
        await self._enter("write", path)
        for change in self.faults._take_changes(path):
            self._force(path, change)
        with self.store.lock:
            if path in self.store.directories:
                raise IsADirectory(f"{path or 'the root'} is a directory", path=path)
            self._check_parents(path)
            existing = self.store.files.get(path)
            check_expect(path, expect, existing.version if existing is not None else None)
            if existing is None:
                self._name(path)
            stored = self.store.files[path] = _File.of(data)
            return stored.version

    async def _delete(self, path: str, expect: Version | None) -> None:
        await self._enter("delete", path)
        with self.store.lock:
            if path in self.store.directories:
                if expect is not None:
                    raise InvalidArgument(f"{path} is a directory; it has no version", path=path)
                if self.store.directories[path]:
                    raise InvalidArgument(f"directory {path} is not empty", path=path)
                del self.store.directories[path]
                self._unname(path)
                return
            file = self._file(path)
            check_expect(path, expect, file.version)
            del self.store.files[path]
            self._unname(path)

    async def _list(self, path: str) -> list[Stat]:
        await self._enter("list", path)
        with self.store.lock:
            self._check_directory(path)
            names = self.store.directories[path]  # (the listing sorts them)
            return [self._stat_locked(join_path(path, name)) for name in names]

    async def _move_directory(self, source: str, destination: str) -> None:
        """Rename directory *source* to *destination* under the store lock: at once."""
        await self._enter("move_directory", source)
        with self.store.lock:
            self._check_directory(source)
            if destination in self.store.directories or destination in self.store.files:
                raise AlreadyExists(f"{destination} already exists", path=destination)
            self._check_parents(destination)
            self._unname(source)
            self.store.directories = {
                _moved(path, source, destination): names
                for path, names in self.store.directories.items()
            }
            self.store.files = {
                _moved(path, source, destination): file for path, file in self.store.files.items()
            }
            self._name(destination)

    async def _mkdir(self, path: str) -> None:
        await self._enter("mkdir", path)
        with self.store.lock:
            if path in self.store.files:
                raise AlreadyExists(f"{path} exists and is a file", path=path)
            self._check_parents(path)
            if path not in self.store.directories:
                self.store.directories[path] = set()
                self._name(path)

    # The helpers below run with the store lock held.

    def _stat_locked(self, path: str) -> Stat:
        if path in self.store.directories:
            return Stat(path=path, kind=FileKind.DIRECTORY)
        file = self._file(path)
        return Stat(
            path=path,
            kind=FileKind.FILE,
            size=len(file.data),
            mtime=file.mtime,
            version=file.version,
        )

    def _check_directory(self, path: str) -> None:
        if path not in self.store.directories:
            self._stat_locked(path)  # raises NotFound or NotADirectory
            raise NotADirectory(f"{path} is not a directory", path=path)

    def _file(self, path: str) -> _File:
        file = self.store.files.get(path)
        if file is not None:
            return file
        if path in self.store.directories:
            raise IsADirectory(f"{path or 'the root'} is a directory", path=path)
        self._check_parents(path)
        raise NotFound(f"{path} does not exist", path=path)

    def _check_parents(self, path: str) -> None:
        parent = path
        while parent:
            parent = parent.rpartition("/")[0]
            if parent in self.store.files:
                raise NotADirectory(f"{parent} is a file, not a directory", path=path)

    def _name(self, path: str) -> None:
        """Name new *path* in its directory, making the directories it lacks."""
        directories = self.store.directories
        while path:
            parent, _, name = path.rpartition("/")
            made = parent not in directories
            directories.setdefault(parent, set()).add(name)
            if not made:
                return
            path = parent

    def _unname(self, path: str) -> None:
        parent, _, name = path.rpartition("/")
        self.store.directories[parent].discard(name)

    def _force(self, path: str, data: bytes | None) -> None:
        with self.store.lock:
            if data is None:
                forced = self.store.files.pop(path, None) is not None
                if forced and path not in self.store.directories:  # (a test may force both)
                    self._unname(path)
            else:
                if path not in self.store.files:
                    self._name(path)
                self.store.files[path] = _File.of(data)

    def __repr__(self) -> str:
        return f"MemoryBackend(files={len(self.store.files)})"


def _moved(path: str, source: str, destination: str) -> str:
    """*path*, moved with directory *source* to *destination* if it is in it."""
    if path == source or path.startswith(f"{source}/"):
        return destination + path[len(source) :]
    return path
