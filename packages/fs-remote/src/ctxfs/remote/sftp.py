"""SFTP through asyncssh, with a cooperative compare-and-swap.

SFTP has no conditional write. ctxfs builds one from the two atomic operations
an OpenSSH server offers, for writers that follow the same protocol
(``cas_scope`` ``COOPERATIVE``):

1. take ``.ctxfs-lock.<name>`` beside the file by exclusive create; it holds a
   lease (owner and expiry). A lease past its expiry is broken by renaming it
   away (only one breaker can win the rename), so a crashed writer delays
   others by at most the lease;
2. under the lock, hash the current content and compare it with the expected
   version (``xxh3:``, the version of every read);
3. write ``.ctxfs-tmp.<random>``, fsync it, give it the old file's mode, and
   publish it: ``posix-rename`` to replace, plain ``rename`` (which refuses to
   clobber) to create; readers never see a partial file;
4. remove the lock.

Writers that bypass the protocol (another SFTP client, a shell) are not stopped;
the lease relies on the writers' clocks agreeing to within the lease.
Paths stay under the root: besides the lexical checks, the server resolves each
path (``realpath``) and a symbolic link leading outside is refused. That check
and the use that follows are two requests, so a link swapped in between by
someone with shell access on the server is not caught.
"""

from __future__ import annotations

import asyncio
import json
import os
import posixpath
import socket
import stat as stat_module
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, Final, Literal, ParamSpec, Self, TypeVar
from urllib.parse import unquote, urlsplit

import anyio

from ctxfs.core import (
    AlreadyExists,
    Backend,
    Blob,
    Busy,
    Capabilities,
    CasScope,
    Expect,
    FileKind,
    FsError,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotARegularFile,
    NotFound,
    OutsideRoot,
    PermissionDenied,
    ReadStream,
    Stale,
    Stat,
    TooLarge,
    Unavailable,
    Version,
    content_version,
)
from ctxfs.core.backend import (
    DEFAULT_CHUNK_SIZE,
    check_chunk_size,
    check_expect,
    check_read_bounds,
)
from ctxfs.core.versions import ContentHasher
from ctxfs.remote.errors import translate
from ctxfs.remote.extras import require
from ctxfs.remote.ioloop import on_io_loop
from ctxfs.remote.keys import RESERVED_PREFIX, KeySpace, is_reserved

__all__ = ["SftpBackend", "open_sftp"]

P = ParamSpec("P")
T = TypeVar("T")

LOCK_PREFIX: Final = f"{RESERVED_PREFIX}lock."
TEMP_PREFIX: Final = f"{RESERVED_PREFIX}tmp."
DEFAULT_LEASE: Final = 30.0
"""Seconds a lock's lease lasts; a writer holds it for milliseconds."""
DEFAULT_LOCK_TIMEOUT: Final = 10.0
"""Seconds a write waits for another writer's lock before ``Busy``."""
_READ_BLOCK: Final = 256 * 1024


class SftpBackend(Backend):
    """Files under *root* on an SFTP server.

    Args:
        host: The server.
        root: The absolute directory on the server that is the root.
        port: The SSH port.
        username: The login (default: asyncssh's, from the SSH config or the local user).
        connect_options: More keywords for ``asyncssh.connect`` (``client_keys``,
            ``known_hosts``, ``password``, ``passphrase``, ...).
        lease: Seconds a write lock's lease lasts.
        lock_timeout: Seconds a write waits for another writer's lock.
        retries: Reconnections after a lost connection before ``Unavailable``.

    """

    def __init__(
        self,
        host: str,
        root: str,
        *,
        port: int = 22,
        username: str | None = None,
        connect_options: dict[str, Any] | None = None,
        lease: float = DEFAULT_LEASE,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        retries: int = 2,
    ) -> None:
        require("asyncssh", extra="sftp")
        if not root.startswith("/"):
            raise InvalidArgument(f"the SFTP root must be an absolute path, got {root!r}")
        self.host, self.port, self.username = host, port, username
        self.root = posixpath.normpath(root)
        self.keys = KeySpace("")
        self.lease = lease
        self.lock_timeout = lock_timeout
        self.retries = retries
        self._connect_options = dict(connect_options or {})
        self._connection: Any = None
        self._client: Any = None
        self._real_root: str | None = None
        self._connecting: asyncio.Lock | None = None
        self._owner = f"{socket.gethostname()}:{os.getpid()}"

    @property
    def capabilities(self) -> Capabilities:
        """Cooperative CAS, real directories, whole-file reads (ranges are sliced)."""
        return Capabilities(
            cas_scope=CasScope.COOPERATIVE,
            range_reads=False,
            real_directories=True,
            symlinks=True,
            locks=False,
        )

    # -- connection ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Connect now rather than on the first call."""
        try:
            await self._io("the connection", _connected)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def _sftp(self) -> Any:
        """The SFTP client (on the IO loop), connecting on first use and after a loss."""
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._client is None:
                import asyncssh  # noqa: PLC0415

                options = {"port": self.port, **self._connect_options}
                if self.username is not None:
                    options["username"] = self.username
                self._connection = await asyncssh.connect(self.host, **options)
                self._client = await self._connection.start_sftp_client()
                await self._client.makedirs(self.root, exist_ok=True)  # as a bucket prefix is
                self._real_root = await self._client.realpath(self.root)
            return self._client

    async def _drop(self) -> None:
        connection, self._connection, self._client = self._connection, None, None
        if connection is not None:
            connection.close()
            await connection.wait_closed()

    async def _io(self, path: str, fn: Any, *args: Any) -> Any:
        """Run ``fn(sftp, *args)`` on the IO loop; reconnect and retry a lost connection."""
        for attempt in range(self.retries + 1):
            try:
                return await on_io_loop(self._call, path, fn, *args)
            except Unavailable:
                if attempt == self.retries:
                    raise
                await on_io_loop(self._drop)
                await anyio.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, path: str, fn: Any, *args: Any) -> Any:
        try:
            return await fn(await self._sftp(), *args)
        except FsError:
            raise
        except Exception as exc:
            raise _error(exc, path) from exc

    def _full(self, path: str) -> str:
        self.keys.key(path)  # the lexical checks
        return posixpath.join(self.root, path) if path else self.root

    async def _confined(self, sftp: Any, full: str, path: str) -> None:
        """Refuse *full* if the server resolves it (through symlinks) outside the root."""
        probe = full
        while True:
            try:
                real = await sftp.realpath(probe)
                break
            except Exception as exc:
                if _code(exc) != 2 or probe == self.root:  # 2: no such file
                    raise
                probe = posixpath.dirname(probe)
        if real != self._real_root and not real.startswith(f"{self._real_root}/"):
            raise OutsideRoot(f"{path} leads outside the root through a symbolic link", path=path)

    # -- reading ------------------------------------------------------------------------------

    async def stat(self, path: str) -> Stat:
        """Metadata from ``lstat``; a symbolic link is reported as one."""
        full = self._full(path)

        async def run(sftp: Any) -> Stat:
            await self._confined(sftp, full, path)
            try:
                attrs = await sftp.lstat(full)
            except Exception as exc:
                raise await self._missing(sftp, exc, path) from exc
            return _stat(path, attrs)

        result: Stat = await self._io(path, run)
        return result

    async def read(
        self,
        path: str,
        *,
        start: int | None = None,
        end: int | None = None,
        version: Version | None = None,
        max_size: int | None = None,
    ) -> Blob:
        """Read the whole file (its hash is the version) and slice the range."""
        check_read_bounds(path, start=start, end=end, size=0, max_size=None)
        full = self._full(path)

        async def run(sftp: Any) -> Blob:
            await self._readable(sftp, full, path, max_size=max_size)
            async with sftp.open(full, "rb", block_size=_READ_BLOCK) as handle:
                data: bytes = await handle.read()
            blob_version = content_version(data)
            if version is not None and blob_version != version:
                raise Stale(f"{path} is no longer at the expected version", path=path)
            return Blob(data=data[start:end], version=blob_version, size=len(data))

        blob: Blob = await self._io(path, run)
        return blob

    async def _readable(
        self, sftp: Any, full: str, path: str, *, max_size: int | None = None
    ) -> int:
        """Check that *full* is a regular file inside the root; return its size."""
        await self._confined(sftp, full, path)
        try:
            attrs = await sftp.stat(full)
        except Exception as exc:
            raise await self._missing(sftp, exc, path) from exc
        if attrs.type == _TYPE_DIRECTORY:
            raise IsADirectory(f"{path} is a directory", path=path)
        if attrs.type != _TYPE_REGULAR:
            raise NotARegularFile(f"{path} is not a regular file", path=path)
        size = int(attrs.size or 0)
        check_read_bounds(path, start=None, end=None, size=size, max_size=max_size)
        return size

    def open_read(
        self, path: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AbstractAsyncContextManager[ReadStream]:
        """Stream from one open handle: a rename-published file never changes under it."""
        return self._stream(path, chunk_size)

    @asynccontextmanager
    async def _stream(self, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
        check_chunk_size(chunk_size)
        full = self._full(path)

        async def open_handle(sftp: Any) -> tuple[Any, int]:
            size = await self._readable(sftp, full, path)
            return await sftp.open(full, "rb", block_size=_READ_BLOCK), size

        handle, size = await self._io(path, open_handle)

        async def chunks() -> AsyncIterator[bytes]:
            while chunk := await on_io_loop(self._call, path, _read_chunk, handle, chunk_size):
                yield chunk

        stream = ReadStream(chunks(), size=size)
        try:
            yield stream
        finally:
            await stream.aclose()
            with anyio.CancelScope(shield=True):
                await on_io_loop(self._call, path, _close, handle)

    async def list(self, path: str) -> list[Stat]:
        """The entries of a directory (not following links), sorted, without ctxfs's own."""
        full = self._full(path)

        async def run(sftp: Any) -> list[Stat]:
            await self._confined(sftp, full, path)
            try:
                attrs = await sftp.stat(full)
            except Exception as exc:
                raise await self._missing(sftp, exc, path) from exc
            if attrs.type != _TYPE_DIRECTORY:
                raise NotADirectory(f"{path} is not a directory", path=path)
            names = await sftp.readdir(full)
            entries = [
                _stat(posixpath.join(path, name.filename) if path else name.filename, name.attrs)
                for name in names
                if name.filename not in (".", "..") and not is_reserved(name.filename)
            ]
            return sorted(entries, key=lambda entry: entry.name)

        entries: list[Stat] = await self._io(path, run)
        return entries

    async def _missing(self, sftp: Any, exc: BaseException, path: str) -> FsError:
        """The error for *exc*; NotADirectory when it comes from a parent that is a file."""
        error = _error(exc, path)
        if not isinstance(error, NotFound) and _code(exc) != 4:  # 4: a generic failure
            return error
        parent = path
        while "/" in parent:
            parent = parent.rpartition("/")[0]
            try:
                attrs = await sftp.stat(self._full(parent))
            except Exception:
                continue
            if attrs.type != _TYPE_DIRECTORY:
                return NotADirectory(f"{parent} is a file, not a directory", path=path)
            break
        return error

    # -- writing ------------------------------------------------------------------------------

    async def write(self, path: str, data: bytes, *, expect: Expect) -> Version:
        """Lock, compare, write a temporary file, publish it by rename, unlock."""
        full = self._full(path)
        if not path:
            raise IsADirectory("the root is a directory", path=path)

        token = f"{self._owner}:{uuid.uuid4().hex}"  # the same on every attempt

        async def run(sftp: Any) -> Version:
            directory, name = posixpath.split(full)
            await self._confined(sftp, full, path)
            try:
                await sftp.makedirs(directory, exist_ok=True)
            except Exception as exc:
                raise await self._missing(sftp, exc, path) from exc
            async with self._locked(sftp, directory, name, path, token) as reclaimed:
                current, mode = await self._current(sftp, full, path)
                if reclaimed and current == content_version(data):
                    # Our lock outlived a lost connection, so no one else wrote since:
                    # the bytes there are our own cut-off attempt's.
                    return current
                check_expect(path, expect, current)
                temp = posixpath.join(directory, f"{TEMP_PREFIX}{uuid.uuid4().hex}")
                try:
                    async with sftp.open(temp, "xb") as handle:
                        await handle.write(data)
                        await handle.fsync()
                    if mode is not None:
                        await sftp.chmod(temp, mode)
                    if current is None:
                        await sftp.rename(temp, full)  # refuses to replace
                    else:
                        await sftp.posix_rename(temp, full)
                except BaseException:
                    await asyncio.shield(_quietly(sftp.remove(temp)))
                    raise
            return content_version(data)

        version: Version = await self._io(path, run)
        return version

    async def _current(self, sftp: Any, full: str, path: str) -> tuple[Version | None, int | None]:
        """The version and permission bits of the file now, or (None, None)."""
        try:
            attrs = await sftp.stat(full)
        except Exception as exc:
            error = _error(exc, path)
            if isinstance(error, NotFound):
                return None, None
            raise error from exc
        if attrs.type == _TYPE_DIRECTORY:
            raise IsADirectory(f"{path} is a directory", path=path)
        hasher = ContentHasher()
        async with sftp.open(full, "rb", block_size=_READ_BLOCK) as handle:
            while chunk := await handle.read(_READ_BLOCK):
                hasher.update(chunk)
        mode = stat_module.S_IMODE(attrs.permissions) if attrs.permissions is not None else None
        return hasher.version(), mode

    @asynccontextmanager
    async def _locked(
        self, sftp: Any, directory: str, name: str, path: str, token: str | None = None
    ) -> AsyncIterator[bool]:
        """Hold the lock file of *name* in *directory* as *token* (the protocol above).

        Yields whether the lock was already ours (left by an attempt whose
        connection was lost), rather than newly taken.
        """
        lock = posixpath.join(directory, f"{LOCK_PREFIX}{name}")
        token = token or f"{self._owner}:{uuid.uuid4().hex}"
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.002
        while (taken := await self._try_lock(sftp, lock, token)) is None:
            if time.monotonic() > deadline:
                raise Busy(
                    f"{path} is being written by another writer (lock {posixpath.basename(lock)})",
                    path=path,
                )
            await asyncio.sleep(delay * (0.5 + (uuid.uuid4().int % 1000) / 1000))
            delay = min(delay * 2, 0.1)
        try:
            yield taken == "reclaimed"
        finally:
            await asyncio.shield(_quietly(sftp.remove(lock)))

    async def _try_lock(
        self, sftp: Any, lock: str, token: str
    ) -> Literal["taken", "reclaimed"] | None:
        """Take the lock file, or find it ours already; None while someone else holds it."""
        lease = json.dumps({"owner": token, "expires": time.time() + self.lease}).encode()
        try:
            async with sftp.open(lock, "xb") as handle:
                await handle.write(lease)
        except Exception as exc:
            if _code(exc) not in (4, 11):  # failure (exists, on protocol 3) / file exists
                raise
        else:
            return "taken"
        try:
            async with sftp.open(lock, "rb") as handle:
                held = json.loads(await handle.read() or b"{}")
            if held.get("owner") == token:
                return "reclaimed"
            expired = float(held.get("expires", float("inf"))) < time.time()
        except (ValueError, TypeError):
            expired = False  # being written right now
        except Exception as exc:
            if _code(exc) == 2:
                return None  # released meanwhile: try again
            raise
        if expired:  # a crashed writer's lease: only one breaker wins the rename
            broken = f"{lock}.broken.{uuid.uuid4().hex}"
            try:
                await sftp.rename(lock, broken)
            except Exception:
                return None
            await _quietly(sftp.remove(broken))
        return None

    async def delete(self, path: str, *, expect: Version | None = None) -> None:
        """Remove a file under its lock (compared with *expect*), or an empty directory."""
        full = self._full(path)
        if not path:
            raise InvalidArgument("the root cannot be deleted", path=path)

        async def run(sftp: Any) -> None:
            await self._confined(sftp, full, path)
            try:
                attrs = await sftp.lstat(full)
            except Exception as exc:
                raise await self._missing(sftp, exc, path) from exc
            if attrs.type == _TYPE_DIRECTORY:
                entries = [n for n in await sftp.listdir(full) if n not in (".", "..")]
                if entries:
                    raise InvalidArgument(f"{path} is a directory that is not empty", path=path)
                await sftp.rmdir(full)
                return
            directory, name = posixpath.split(full)
            async with self._locked(sftp, directory, name, path):
                current, _ = await self._current(sftp, full, path)
                if current is None:
                    raise NotFound(f"{path} does not exist", path=path)
                check_expect(path, expect, current)
                await sftp.remove(full)

        await self._io(path, run)

    async def mkdir(self, path: str) -> None:
        """Create the directory and its parents."""
        full = self._full(path)

        async def run(sftp: Any) -> None:
            await self._confined(sftp, full, path)
            attrs = None
            with suppress(Exception):  # missing: made below, with its parents
                attrs = await sftp.stat(full)
            if attrs is not None:
                if attrs.type != _TYPE_DIRECTORY:
                    raise AlreadyExists(f"{path} is a file", path=path)
                return
            try:
                await sftp.makedirs(full, exist_ok=True)
            except Exception as exc:
                raise await self._missing(sftp, exc, path) from exc

        await self._io(path, run)

    async def aclose(self) -> None:
        """Close the SSH connection."""
        with anyio.CancelScope(shield=True):
            await on_io_loop(self._drop)

    def __repr__(self) -> str:
        return f"SftpBackend(sftp://{self.host}:{self.port}{self.root})"


_TYPE_REGULAR: Final = 1
_TYPE_DIRECTORY: Final = 2
_TYPE_SYMLINK: Final = 3
_KINDS: Final = {
    _TYPE_REGULAR: FileKind.FILE,
    _TYPE_DIRECTORY: FileKind.DIRECTORY,
    _TYPE_SYMLINK: FileKind.SYMLINK,
}


def _stat(path: str, attrs: Any) -> Stat:
    kind = _KINDS.get(attrs.type, FileKind.OTHER)
    return Stat(
        path=path,
        kind=kind,
        size=attrs.size if kind is FileKind.FILE else None,
        mtime=float(attrs.mtime) if attrs.mtime is not None else None,
    )


async def _connected(sftp: Any) -> None:
    del sftp


async def _read_chunk(sftp: Any, handle: Any, size: int) -> bytes:
    del sftp
    data: bytes = await handle.read(size)
    return data


async def _close(sftp: Any, handle: Any) -> None:
    del sftp
    await handle.close()


async def _quietly(call: Any) -> None:
    with suppress(Exception):  # cleanup of our own leftovers
        await call


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) else None


def _error(exc: BaseException, path: str) -> FsError:  # noqa: PLR0911 - a return per kind
    """The ctxfs error for an asyncssh (or transport) failure on *path*."""
    import asyncssh  # noqa: PLC0415

    if isinstance(exc, FsError):
        return exc
    if isinstance(exc, asyncssh.SFTPError):
        code, reason = exc.code, exc.reason
        if code in (2, 10):  # no such file / no such path
            return NotFound(f"{path} does not exist", path=path)
        if code in (3, 12):  # permission denied / write protect
            return PermissionDenied(f"the server refused access to {path}: {reason}", path=path)
        if code == 11:
            return AlreadyExists(f"{path} already exists", path=path)
        if code in (14, 15):  # no space / quota
            return TooLarge(f"the server has no room for {path}: {reason}", path=path)
        if code in (6, 7):  # no connection / connection lost
            return Unavailable(f"the SFTP connection was lost: {reason}", path=path)
        return translate(exc)
    if isinstance(exc, asyncssh.PermissionDenied):
        return PermissionDenied(f"SSH login refused: {exc.reason}", path=path)
    if isinstance(exc, asyncssh.Error | OSError):
        return Unavailable(f"SSH connection failed: {exc}", path=path)
    return translate(exc)


def open_sftp(url: str, **options: Any) -> SftpBackend:
    """The backend for ``sftp://[user@]host[:port]/absolute/root``.

    Keyword options: ``lease``, ``lock_timeout`` and ``retries`` configure the
    backend; the others go to ``asyncssh.connect`` (``client_keys``,
    ``known_hosts``, ``password``, ...), which otherwise uses the SSH agent, the
    default keys and ``~/.ssh/known_hosts``.
    """
    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"{url!r} names no host (expected sftp://user@host/root)")
    settings = {
        name: options.pop(name) for name in ("lease", "lock_timeout", "retries") if name in options
    }
    return SftpBackend(
        parts.hostname,
        unquote(parts.path) or "/",
        port=parts.port or 22,
        username=unquote(parts.username) if parts.username else None,
        connect_options=options,
        **settings,
    )
