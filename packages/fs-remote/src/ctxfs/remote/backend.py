"""``ObjectStoreBackend``: the ctxfs backend contract over any object-store driver.

Directories are key prefixes; versions are the store's own tokens, read with the
content. Conditional writes are the store's own once the probe has seen it refuse
a second create, a stale update and a stale delete (``cas_scope`` ``GLOBAL``); until then, or if
it does not, versions are checked here under a per-key lock (``PROCESS``). The
probe also asks whether the store keeps every version (``kept_versions``).
Transient failures are retried (:mod:`ctxfs.remote.retry`). Every write carries a
unique id in the object's metadata, so that a refused retry of a write that had
in fact landed succeeds, while identical bytes from another writer conflict.
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Final, ParamSpec, Self, TypeVar

import anyio

from ctxfs.core import (
    AlreadyExists,
    BackendError,
    Busy,
    FsError,
    InvalidArgument,
    NotADirectory,
    NotFound,
    PermissionDenied,
    Stale,
    TooLarge,
    Unavailable,
)
from ctxfs.core.kit import (
    ABSENT,
    RESERVED_PREFIX,
    Backend,
    Blob,
    Capabilities,
    CasScope,
    Expect,
    FileKind,
    KeyedLocks,
    Location,
    ReadRequest,
    ReadStream,
    Stat,
    Version,
    check_expect,
    is_reserved,
    listing_work,
)
from ctxfs.remote.ioloop import on_io_loop
from ctxfs.remote.keys import KeySpace
from ctxfs.remote.removals import REMOVAL_LEASE, REMOVAL_TIMEOUT, RemovalLocks
from ctxfs.remote.retry import DEFAULT_DEADLINE, DEFAULT_RETRIES, RETRY_OPTIONS, Retries
from ctxfs.remote.store import Listing, ObjectInfo, ObjectStore

__all__ = ["ObjectStoreBackend", "ProbeResult", "pop_backend_options"]

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_CONCURRENT_READS: Final = 16
"""Objects a search fetches at once, by default."""
EMULATION_LOCK_TIMEOUT: Final = 30.0
"""Seconds a write waits for the per-key lock when the store drops conditions."""

BACKEND_OPTIONS: Final = (
    "probe",
    "require_global_cas",
    "max_cas_size",
    "concurrent_reads",
    "kept_versions",
    "removal_lease",
    "removal_timeout",
    *RETRY_OPTIONS,
)
"""The keyword options of ``open_fs`` that configure the backend, not the store's client."""


def pop_backend_options(options: dict[str, Any]) -> dict[str, Any]:
    """Take the backend's own options (:data:`BACKEND_OPTIONS`) out of *options*."""
    return {name: options.pop(name) for name in BACKEND_OPTIONS if name in options}


@dataclass(frozen=True, kw_only=True)
class ProbeResult:
    """What the CAS probe found."""

    create_refused: bool
    """A second create-only write of the probe object was refused."""
    stale_refused: bool
    """A write with the probe object's previous version was refused."""
    stale_delete_refused: bool
    """A delete with the probe object's previous version was refused."""

    @property
    def writes_enforced(self) -> bool:
        """Whether the store enforces the conditions of writes."""
        return self.create_refused and self.stale_refused

    @property
    def enforced(self) -> bool:
        """Whether the store enforces every condition."""
        return self.writes_enforced and self.stale_delete_refused


class ObjectStoreBackend(Backend):
    """A ctxfs backend over an object store, confined under ``bucket/prefix``.

    Args:
        store: The driver.
        keys: Where the root lives.
        probe: Run the CAS probe at open (off: trust the store, and report its promise).
        require_global_cas: Refuse the store unless the probe finds conditions enforced.
        retries: Retries of a transient failure before ``Unavailable``.
        deadline: Seconds after which a failing call is retried no more.
        max_cas_size: The largest write accepted (default: the store's single-request limit).
        concurrent_reads: How many objects a search fetches at once
            (:attr:`~ctxfs.core.Capabilities.concurrent_reads`).
        kept_versions: Read earlier versions back from the store where the probe finds
            that it keeps them (:attr:`~ctxfs.core.Capabilities.kept_versions`); False:
            never (the session memory then keeps copies, as for any store).
        removal_lease: Seconds a conditional removal's lock lasts before another remover may
            break it (its holder crashed; :mod:`ctxfs.remote.removals`).
        removal_timeout: Seconds a removal waits for another's lock before ``Busy``.

    """

    def __init__(
        self,
        store: ObjectStore,
        keys: KeySpace,
        *,
        probe: bool = True,
        require_global_cas: bool = False,
        retries: int = DEFAULT_RETRIES,
        deadline: float = DEFAULT_DEADLINE,
        max_cas_size: int | None = None,
        concurrent_reads: int = DEFAULT_CONCURRENT_READS,
        kept_versions: bool = True,
        removal_lease: float = REMOVAL_LEASE,
        removal_timeout: float = REMOVAL_TIMEOUT,
    ) -> None:
        if concurrent_reads < 1:
            raise InvalidArgument(f"concurrent_reads must be at least 1, not {concurrent_reads}")
        self.concurrent_reads = concurrent_reads
        self.retrying = Retries(retries=retries, deadline=deadline)
        self.store = store
        self.keys = keys
        self.root_identity = " on ".join(
            filter(None, (f"{store.name}/{keys.prefix}", store.service))
        )
        self.require_global_cas = require_global_cas
        self._max_cas_size = max_cas_size if max_cas_size is not None else store.max_cas_size
        self._probe_wanted = probe or require_global_cas
        self._probe: ProbeResult | None = None
        self._versions_wanted = kept_versions
        self._kept_versions = False
        self._probing = KeyedLocks()  # (one probe, whichever thread's loop calls first)
        self._emulation = KeyedLocks()
        self._removals: RemovalLocks | None = None
        if store.scope is not CasScope.PROCESS:  # (one process's store repeats no request)
            self._removals = RemovalLocks(
                store, self._io, lease=removal_lease, timeout=removal_timeout
            )

    # -- opening: the probe -----------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Run the probe now rather than before the first call."""
        try:
            await self._ready()
        except BaseException:
            await self.aclose()
            raise
        return self

    @property
    def probe_result(self) -> ProbeResult | None:
        """What the probe found, once it has run."""
        return self._probe

    @property
    def capabilities(self) -> Capabilities:
        """GLOBAL once the probe found conditions enforced (or it is off); PROCESS before."""
        trusted = not self._probe_wanted or (self._probe is not None and self._probe.enforced)
        return Capabilities(
            cas_scope=self.store.scope if trusted else CasScope.PROCESS,
            range_reads=True,
            real_directories=False,
            symlinks=False,
            locks=False,
            max_cas_size=self._max_cas_size,
            concurrent_reads=self.concurrent_reads,
            tree_listing=True,
            kept_versions=self._kept_versions,
        )

    async def probe(self) -> ProbeResult:
        """Check with a throw-away object that a second create, stale writes and deletes fail."""
        key = self.keys.internal(f"{RESERVED_PREFIX}probe-{uuid.uuid4().hex}")
        first = await self._io("the CAS probe", self.store.put, key, b"probe 1", expect=ABSENT)
        try:
            try:
                await self._io("the CAS probe", self.store.put, key, b"probe 2", expect=ABSENT)
                create_refused = False
            except AlreadyExists:
                create_refused = True
            current = (await self._io("the CAS probe", self.store.head, key)).version
            await self._io("the CAS probe", self.store.put, key, b"probe 3", expect=current)
            try:
                await self._io("the CAS probe", self.store.put, key, b"probe 4", expect=first)
                stale_refused = False
            except Stale:
                stale_refused = True
            try:
                await self._io("the CAS probe", self.store.remove, key, expect=first)
                stale_delete_refused = False
            except Stale:
                stale_delete_refused = True
        finally:
            with anyio.CancelScope(shield=True), suppress(FsError):
                await self._io("the CAS probe", self.store.remove, key)  # else hidden, left over
        return ProbeResult(
            create_refused=create_refused,
            stale_refused=stale_refused,
            stale_delete_refused=stale_delete_refused,
        )

    async def _ready(self) -> None:
        if not self._probe_wanted or self._probe is not None:
            return
        async with self._probing.hold("the probe", timeout=math.inf):
            if self._probe is None:
                self._kept_versions = self._versions_wanted and await self._keeps_versions()
                self._probe = await self.probe()
        if self.require_global_cas and not self._probe.enforced:
            raise BackendError(
                f"{self.store.name} does not enforce conditional writes "
                f"(second create refused: {self._probe.create_refused}, "
                f"stale write refused: {self._probe.stale_refused}, "
                f"stale delete refused: {self._probe.stale_delete_refused}); "
                "writers on other hosts could overwrite each other",
                hint="Use a store that enforces conditional writes, or open it without "
                "require_global_cas for writers in this process only.",
                details=asdict(self._probe),
            )

    async def _keeps_versions(self) -> bool:
        """Whether the store keeps every version; False where it cannot say (a permission)."""
        try:
            return await self._io("the versioning probe", self.store.keeps_versions)
        except (PermissionDenied, BackendError):
            return False

    @property
    def _emulating(self) -> bool:
        return self._probe is not None and not self._probe.enforced

    # -- calls, retries and messages ----------------------------------------------------------

    async def _io(
        self, what: str, fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run one store call on the IO loop, retrying transient failures; name *what* in errors."""
        try:
            return await self.retrying.run(
                f"{self.store.name}: {what}", partial(on_io_loop, fn, *args, **kwargs)
            )
        except FsError as error:
            raise _named(error, what) from error
        except Exception as error:  # an answer the driver could not read (a wrong endpoint)
            unread = BackendError(
                f"the store's answer is not what its API sends ({type(error).__name__}: {error})",
                hint="Check that the store's URL and endpoint name the store itself "
                "(if they do, report this as a ctxfs bug).",
            )
            raise _named(unread, what) from error

    # -- reading --------------------------------------------------------------------------------

    async def _locate(self, path: str) -> Location:
        """The path as it is (no links); the key names the object globally (``s3://b/k``)."""
        return Location(resolved=path, key=f"{self.store.name}/{self.keys.key(path)}")

    async def _stat(self, path: str) -> Stat:
        """A file's size, mtime and version; a directory if objects live under it."""
        await self._ready()
        if not path:
            return Stat(path="", kind=FileKind.DIRECTORY)
        try:
            info = await self._io(path, self.store.head, self.keys.key(path))
        except NotFound:
            if await self._has_entries(path):
                return Stat(path=path, kind=FileKind.DIRECTORY)
            raise
        return _file_stat(path, info)

    async def _read(self, path: str, request: ReadRequest) -> Blob:
        """Bytes and version from one request; ranges pinned to a version when asked."""
        await self._ready()
        data, info = await self._io(path, self.store.get, self.keys.key(path), request)
        return Blob(data=data, version=info.version, size=info.size)

    async def _read_version(self, path: str, version: Version) -> bytes | None:
        """An earlier version from the store's kept versions (``kept_versions`` only)."""
        await self._ready()
        return await self._io(path, self.store.get_version, self.keys.key(path), version)

    @asynccontextmanager
    async def _open_read(self, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
        """Stream in ranged reads, every range pinned to the version of the first."""
        first = await self._read(path, ReadRequest(start=0, end=chunk_size))

        async def chunks() -> AsyncIterator[bytes]:
            yield first.data
            offset = len(first.data)
            while offset < first.size:
                pinned = ReadRequest(start=offset, end=offset + chunk_size, version=first.version)
                blob = await self._read(path, pinned)
                if not blob.data:
                    raise Stale(f"{path} changed while it was read", path=path)
                yield blob.data
                offset += len(blob.data)

        yield ReadStream(chunks(), version=first.version, size=first.size)

    async def _list(self, path: str) -> list[Stat]:
        """The files and sub-prefixes directly under *path*."""
        await self._ready()
        listing = await self._io(path or "the root", self.store.scan, self.keys.directory(path))
        if not path or listing.objects or listing.prefixes:
            entries = len(listing.objects) + len(listing.prefixes)
            return await listing_work(entries, partial(self._entries, listing))
        if await self._current(path, self.keys.key(path)) is None:
            raise NotFound(f"{path} does not exist", path=path)
        raise NotADirectory(f"{path} is a file, not a directory", path=path)

    async def _list_tree(self, path: str) -> list[Stat]:
        """Every object under *path*'s prefix, in one flat listing."""
        await self._ready()
        listing = await self._io(
            path or "the root", self.store.scan, self.keys.directory(path), deep=True
        )
        return await listing_work(len(listing.objects), partial(self._files, listing))

    def _entries(self, listing: Listing) -> list[Stat]:
        return self._files(listing) + [
            Stat(path=self.keys.path(sub.removesuffix("/")), kind=FileKind.DIRECTORY)
            for sub in listing.prefixes
        ]

    def _files(self, listing: Listing) -> list[Stat]:
        return [
            _file_stat(self.keys.path(info.key), info)
            for info in listing.objects
            if not info.key.endswith("/")  # console-made "directory marker" objects
        ]

    async def _has_entries(self, path: str) -> bool:
        """Whether objects live under *path*'s prefix (a removal lock left there is none)."""
        listing = await self._io(path, self.store.scan, self.keys.directory(path), limit=8)
        named = [info.key.rpartition("/")[2] for info in listing.objects]
        return bool(listing.prefixes) or not all(map(is_reserved, named)) or len(named) == 8

    # -- writing --------------------------------------------------------------------------------

    async def _write(self, path: str, data: bytes, expect: Expect) -> Version:
        """One conditional request; checked under a lock here too if the store drops conditions."""
        await self._ready()
        key = self.keys.key(path)
        if not self._emulating:
            return await self._put(path, key, data, expect=expect, over=expect)
        async with self._emulation.hold(key, timeout=EMULATION_LOCK_TIMEOUT):
            await self._check_expect(path, key, expect)
            enforced = self._probe is not None and self._probe.writes_enforced
            return await self._put(
                path, key, data, expect=expect if enforced else None, over=expect
            )

    async def _put(
        self, path: str, key: str, data: bytes, *, expect: Expect, over: Expect
    ) -> Version:
        """One write, its id naming the version it replaces (*over*: :func:`_written_over`)."""
        write_id = f"{uuid.uuid4().hex}.{_written_over(over)}"
        try:
            return await self._io(path, self.store.put, key, data, expect=expect, write_id=write_id)
        except (Stale, AlreadyExists):
            # A retried attempt may have landed before the condition refused it (the
            # answer to the first was lost): the object then carries our write id.
            landed = await self._current(path, key)
            if landed is not None and landed.write_id == write_id:
                return landed.version
            raise

    async def _current(self, path: str, key: str) -> ObjectInfo | None:
        """The object at *key* now, None if there is none."""
        try:
            return await self._io(path, self.store.head, key)
        except NotFound:
            return None

    async def _check_expect(self, path: str, key: str, expect: Expect) -> None:
        current = await self._current(path, key)
        check_expect(path, expect, None if current is None else current.version)

    async def _delete(self, path: str, expect: Version | None) -> None:
        """Delete a file (conditionally with *expect*); directories vanish with their last file."""
        await self._ready()
        key = self.keys.key(path)
        try:
            if expect is None or self._removals is None:
                await self._remove(path, key, expect)
            elif self._emulating:
                async with self._emulation.hold(key, timeout=EMULATION_LOCK_TIMEOUT):
                    await self._check_expect(path, key, expect)
                    await self._remove(path, key, None)
            else:
                async with self._removals.held(key, path) as lock:
                    try:
                        await self._remove(path, key, expect, send_by=lock.send_by)
                    except (Unavailable, BackendError):  # it may have landed, or land yet
                        lock.lapse()  # (no other remover acts before its lease ends)
                        if await self._current(path, key) is None:
                            return  # it did (nothing else removes the file under the lock)
                        raise
        except NotFound:
            if await self._has_entries(path):
                raise InvalidArgument(
                    f"{path} is a directory that is not empty", path=path
                ) from None
            raise

    async def _remove(
        self, path: str, key: str, expect: Version | None, *, send_by: float | None = None
    ) -> None:
        """Remove *key*; one refused once the request may have landed is resolved by a look.

        With *expect*, the object is first seen at that version (nothing is sent otherwise),
        under its removal lock (:mod:`ctxfs.remote.removals`): no other remover's request is
        between. A refusal after that, or in a retry, means the request may have landed with its
        answer lost (aiohttp sends a ``DELETE`` again when its connection drops): no object left
        is done; an object written over the version meant is ``Stale`` (it was never removed:
        its write id says so, :func:`_written_over`); another is ``Unavailable``, since whose
        it is cannot be told.
        No attempt starts after *send_by* (``time.monotonic()``, from the lock): ``Busy`` if
        none was sent, ``Unavailable`` if one may have landed. Without a lock (*send_by* None: a
        store whose conditions hold in one process, which repeats no request), a first refusal
        is one.
        """
        if expect is not None:
            current = await self._current(path, key)
            if current is None:
                raise NotFound(f"{path} does not exist", path=path)
            check_expect(path, expect, current.version)
        attempts = 0

        async def attempt() -> None:  # (on the IO loop)
            nonlocal attempts
            attempts += 1
            if send_by is not None and time.monotonic() > send_by:
                raise _too_late(path, sent=attempts > 1)
            try:
                await self.store.remove(key, expect=expect)
            except (NotFound, Stale) as refusal:
                if attempts == 1 and (expect is None or send_by is None):
                    raise  # (unlocked, a first refusal is another remover's doing)
                try:
                    there = await self.store.head(key)
                except NotFound:
                    return  # the attempt whose answer was lost removed it
                if expect is None:
                    raise
                if (there.write_id or "").endswith(f".{_written_over(expect)}"):
                    raise Stale(  # (written over the version meant: it was never removed)
                        f"{path} changed since it was read; it is not deleted", path=path
                    ) from refusal
                raise Unavailable(
                    f"{path}: whether the delete landed cannot be told (the store refused it "
                    f"once sent: {refusal}), and a file is there now",
                    path=path,
                    retryable=False,
                    hint="Read the file again: another writer may have made it.",
                ) from refusal

        await self._io(path, attempt)

    async def _mkdir(self, path: str) -> None:
        """Nothing to create: a directory exists while objects live under it."""
        await self._ready()
        if await self._current(path, self.keys.key(path)) is not None:
            raise AlreadyExists(f"{path} is a file", path=path)

    async def aclose(self) -> None:
        """Close the driver's client."""
        with anyio.CancelScope(shield=True):
            await on_io_loop(self.store.close)

    def __repr__(self) -> str:
        prefix = f"/{self.keys.prefix}" if self.keys.prefix else ""
        return f"{type(self).__name__}({self.store.name}{prefix!s})"


def _written_over(version: Expect) -> str:
    """What a write's id says of the version it replaced: a digest of it ("" for a create).

    An object written over the version a delete was meant for shows that the delete never
    removed it (a conditional write needs that version there).
    """
    if not isinstance(version, str):
        return ""
    return hashlib.sha256(version.encode()).hexdigest()[:16]


def _file_stat(path: str, info: ObjectInfo) -> Stat:
    return Stat(
        path=path, kind=FileKind.FILE, size=info.size, mtime=info.mtime, version=info.version
    )


_MESSAGES: Final[dict[type[FsError], str]] = {
    NotFound: "{what} does not exist",
    Stale: "{what} is no longer at the expected version: someone else changed it",
    AlreadyExists: "{what} already exists",
    PermissionDenied: "the store refused access to {what}: {message}",
    Unavailable: "the store did not answer for {what}: {message}",
    BackendError: "the store failed on {what}: {message}",
    TooLarge: "{what}: {message}",
}


def _named(error: FsError, what: str) -> FsError:
    """*error* from a driver, re-raised with the path (or operation) it concerns."""
    if error.path is not None:
        return error
    template = next(
        (text for cls, text in _MESSAGES.items() if isinstance(error, cls)), "{what}: {message}"
    )
    path = what if what and " " not in what else None
    return type(error)(
        template.format(what=what, message=error.message),
        path=path,
        hint=error.hint,
        retryable=error.retryable,
        details=error.details,
    )


def _too_late(path: str, *, sent: bool) -> FsError:
    """The refusal of a removal whose lock is too near its end to send under."""
    if not sent:
        return Busy(f"{path}: its removal lock ran too long; nothing was removed", path=path)
    return Unavailable(
        f"{path}: whether the delete landed cannot be told (its answer was lost, and its lock "
        "ran too long to ask again)",
        path=path,
        retryable=False,
        hint="Read the file again before going on.",
    )
