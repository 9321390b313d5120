"""``SftpBackend``: files under a root on an SFTP server, with the cooperative lock protocol."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import os
import posixpath
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any, Final, Self

import anyio
import asyncssh

from ctxfs.core import AlreadyExists, FsError, InvalidArgument, NotADirectory, NotFound, Unavailable
from ctxfs.core.kit import (
    ABSENT,
    RESERVED_PREFIX,
    Backend,
    Blob,
    Capabilities,
    CasScope,
    ConditionalUpdate,
    Expect,
    FileKind,
    Location,
    Permissions,
    ReadRequest,
    ReadStream,
    Stat,
    Update,
    Version,
    check_expect,
    content_version,
)
from ctxfs.remote.retry import DEFAULT_DEADLINE, Retries
from ctxfs.remote.sftp.client import READ_BLOCK, SftpClient, is_missing, regular
from ctxfs.remote.sftp.lease import DEFAULT_LEASE, DEFAULT_LOCK_TIMEOUT, Leases

__all__ = ["SftpBackend"]

TEMP_PREFIX: Final = f"{RESERVED_PREFIX}tmp."
_KINDS: Final = {
    asyncssh.FILEXFER_TYPE_REGULAR: FileKind.FILE,
    asyncssh.FILEXFER_TYPE_DIRECTORY: FileKind.DIRECTORY,
    asyncssh.FILEXFER_TYPE_SYMLINK: FileKind.SYMLINK,
}


_CONNECT_OPTIONS: Final = frozenset(
    name
    for call in (
        asyncssh.connect,
        *(
            vars(kind)["prepare"]
            for kind in asyncssh.SSHClientConnectionOptions.__mro__
            if "prepare" in vars(kind)
        ),
    )
    for name, parameter in inspect.signature(call).parameters.items()
    if parameter.kind is not inspect.Parameter.VAR_KEYWORD
    and name not in ("self", "host", "port", "username")  # (the URL's)
)
"""The keywords ``asyncssh.connect`` takes (its own, and its connection options')."""


class SftpBackend(Backend):
    """Files under *root* on an SFTP server.

    Args:
        host: The server.
        root: The absolute directory on the server that is the root.
        port: The SSH port.
        username: The login (default: asyncssh's, from the SSH config or the local user).
        connect_options: More keywords for ``asyncssh.connect`` (``client_keys``,
            ``known_hosts``, ``password``, ``passphrase``, ...); ``connect_timeout``
            defaults to the deadline.
        lease: Seconds a write lock's lease lasts.
        lease_timeout: Seconds a write waits for another writer's lock.
        retries: Reconnections after a lost connection before ``Unavailable``.
        deadline: Seconds after which a failing call is retried no more.

    """

    capabilities = Capabilities(
        cas_scope=CasScope.COOPERATIVE,
        range_reads=False,
        real_directories=True,
        symlinks=True,
        locks=False,
    )

    def __init__(
        self,
        host: str,
        root: str,
        *,
        port: int = 22,
        username: str | None = None,
        connect_options: dict[str, Any] | None = None,
        lease: float = DEFAULT_LEASE,
        lease_timeout: float = DEFAULT_LOCK_TIMEOUT,
        retries: int = 2,
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        if not root.startswith("/"):
            raise InvalidArgument(f"the SFTP root must be an absolute path, got {root!r}")
        unknown = sorted(set(connect_options or {}) - _CONNECT_OPTIONS)
        if unknown:
            raise InvalidArgument(
                f"the sftp backend takes no option {', '.join(map(repr, unknown))}",
                hint="Pass the backend's own options (lease, lease_timeout, retries, deadline) "
                "and asyncssh.connect's (client_keys, known_hosts, password, ...); the user, "
                "host and port go in the URL.",
                details={"options": unknown},
            )
        options = {"connect_timeout": deadline, **(connect_options or {})}
        retrying = Retries(retries=retries, deadline=deadline)
        self.client = SftpClient(
            host, root, port=port, username=username, connect_options=options, retrying=retrying
        )
        self.root_identity = self.client.name
        self.leases = Leases(
            owner=f"{socket.gethostname()}:{os.getpid()}", lease=lease, timeout=lease_timeout
        )

    async def __aenter__(self) -> Self:
        """Connect now rather than on the first call."""
        try:
            await self.client.call("the connection", _connected)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def aclose(self) -> None:
        """Close the SSH connection."""
        with anyio.CancelScope(shield=True):
            await self.client.close()

    def __repr__(self) -> str:
        return f"SftpBackend({self.client.name})"

    # -- reading ------------------------------------------------------------------------------

    async def _locate(self, path: str) -> Location:
        """What the server resolves *path* to; the key is where the file lives, as a URL."""
        full = self.client.full(path)

        async def run(sftp: asyncssh.SFTPClient) -> Location:
            real = self.client.relative(await self.client.confined(sftp, full, path))
            where = await self.client.located(sftp, full, path)
            return Location(resolved=real, key=f"{self.client.server}{where}")

        return await self.client.call(path, run)

    async def _stat(self, path: str) -> Stat:
        """Metadata from ``lstat``; a symbolic link is reported as one."""
        full = self.client.full(path)

        async def run(sftp: asyncssh.SFTPClient) -> Stat:
            return _stat(path, await self.client.attributes(sftp, full, path, follow=False))

        return await self.client.call(path, run)

    async def _read(self, path: str, request: ReadRequest) -> Blob:
        """Read the whole file (its hash is the version) and slice the range."""
        full = self.client.full(path)

        async def run(sftp: asyncssh.SFTPClient) -> Blob:
            await self._readable(sftp, full, path, request)
            async with sftp.open(full, "rb", block_size=READ_BLOCK) as handle:
                data: bytes = await handle.read()
            return Blob(data=request.cut(data), version=content_version(data), size=len(data))

        return await self.client.call(path, run)

    async def _readable(
        self, sftp: asyncssh.SFTPClient, full: str, path: str, request: ReadRequest
    ) -> asyncssh.SFTPAttrs:
        """The attributes of *full*, a regular file inside the root within the size asked."""
        attrs = regular(await self.client.attributes(sftp, full, path, follow=True), path)
        request.check(path, size=attrs.size or 0)
        return attrs

    @asynccontextmanager
    async def _open_read(self, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
        """Stream from one open handle: a rename-published file never changes under it."""
        full = self.client.full(path)

        async def open_handle(sftp: asyncssh.SFTPClient) -> tuple[asyncssh.SFTPClientFile, int]:
            attrs = await self._readable(sftp, full, path, ReadRequest())
            return await sftp.open(full, "rb", block_size=READ_BLOCK), attrs.size or 0

        handle, size = await self.client.call(path, open_handle)

        async def chunks() -> AsyncIterator[bytes]:
            while chunk := await self.client.call_once(
                path, partial(_read_chunk, handle, chunk_size)
            ):
                yield chunk

        try:
            yield ReadStream(chunks(), size=size)
        finally:
            with anyio.CancelScope(shield=True):
                await self.client.call_once(path, lambda _: handle.close())

    async def _list(self, path: str) -> list[Stat]:
        """The entries of a directory, not following links."""
        full = self.client.full(path)

        async def run(sftp: asyncssh.SFTPClient) -> list[Stat]:
            attrs = await self.client.attributes(sftp, full, path, follow=True)
            if attrs.type != asyncssh.FILEXFER_TYPE_DIRECTORY:
                raise NotADirectory(f"{path} is not a directory", path=path)
            listed = await sftp.readdir(os.fsencode(full))  # (names as bytes: any is listed)
            names = [(os.fsdecode(name.filename), name.attrs) for name in listed]
            return [
                _stat(posixpath.join(path, name) if path else name, attrs)
                for name, attrs in names
                if name not in (".", "..")
            ]

        return await self.client.call(path, run)

    # -- writing ------------------------------------------------------------------------------

    async def _write(
        self, path: str, data: bytes, expect: Expect, *, mode: int | None = None
    ) -> Version:
        """Lock, compare, write a temporary file, publish it by rename, unlock.

        The file gets permission bits *mode*, else keeps its own (a new one: the server's default).
        """
        full = self.client.full(path)
        token = self.leases.token()  # the same on every attempt
        attempts = itertools.count(1)

        async def run(sftp: asyncssh.SFTPClient) -> Version:
            retry = next(attempts) > 1
            real = await self.client.changed_entry(sftp, full, path)  # one lock per file
            made = await self._make_parents(sftp, posixpath.dirname(real), path)
            try:
                async with self.leases.held(sftp, real, path, token) as reclaimed:
                    current, current_mode = await self.client.file_version(sftp, real, path)
                    if reclaimed and current == content_version(data):
                        # Our lock outlived a lost connection, so no one else wrote since:
                        # the bytes there are our own cut-off attempt's.
                        return current
                    check_expect(path, expect, current)
                    held = partial(self.leases.still_held, sftp, real, path, token)
                    replace = current is not None
                    given = current_mode if mode is None else mode
                    await _publish(
                        sftp,
                        real,
                        data,
                        mode=given,
                        replace=replace,
                        held=held,
                        token=token,
                        retry=retry,
                    )
            except BaseException:
                for directory in reversed(made):  # a failed create leaves no directories
                    with suppress(asyncssh.SFTPError, OSError):
                        await asyncio.shield(sftp.rmdir(directory))
                raise
            return content_version(data)

        return await self.client.call(path, run)

    async def _make_parents(
        self, sftp: asyncssh.SFTPClient, directory: str, path: str
    ) -> list[str]:
        """Make *directory* and its missing parents; return those made, outermost first."""
        missing: list[str] = []
        try:
            while not await sftp.isdir(directory):
                missing.append(directory)
                directory = posixpath.dirname(directory)
            made = []
            for level in reversed(missing):
                try:
                    await sftp.mkdir(level)
                except asyncssh.SFTPFailure:
                    if not await sftp.isdir(level):  # made by another writer meanwhile: fine
                        raise
                else:
                    made.append(level)
        except asyncssh.SFTPError as exc:
            raise await self.client.refine(sftp, exc, path) from exc
        return made

    @asynccontextmanager
    async def _open_update(self, path: str, request: ReadRequest) -> AsyncIterator[Update]:
        """Read the file under its lock, and hold the lock until the update is done.

        Where the file's directory does not exist yet there is nothing to lock:
        the update is a create, whose write takes the lock as any write does.
        """
        full = self.client.full(path)
        token = self.leases.token()
        real = full  # until the server says where it leads

        async def take(sftp: asyncssh.SFTPClient) -> tuple[Blob | None, int | None] | None:
            nonlocal real
            real = await self.client.changed_entry(sftp, full, path)  # one lock per file
            if not await self._has_directory(sftp, real, path):
                return None
            await self.leases.take(sftp, real, path, token)
            try:
                return await self.client.file_blob(sftp, real, path, request)
            except BaseException:
                await asyncio.shield(self.leases.release(sftp, real, token))
                raise

        try:
            taken = await self.client.call(path, take)
        except BaseException:
            await self._release(path, real, token)  # taken, perhaps, with the answer lost
            raise
        if taken is None:
            yield _CreateUpdate(self, path, write=partial(self._write, path))
            return
        current, mode = taken
        try:
            yield _LeasedUpdate(self, path, current, full=real, mode=mode, token=token)
        finally:
            await self._release(path, real, token)

    async def _release(self, path: str, full: str, token: str) -> None:
        """Give back the lock of *full* held as *token*, if it is ours, within the deadline.

        Cancellation waits for it. A lock that cannot be given back lapses with its lease.
        """
        with anyio.move_on_after(self.client.retrying.deadline, shield=True), suppress(FsError):
            await self.client.call(path, partial(self.leases.release, full=full, token=token))

    async def _has_directory(self, sftp: asyncssh.SFTPClient, full: str, path: str) -> bool:
        """Whether the directory of *full* exists (a file there is ``NotADirectory``)."""
        try:
            attrs = await sftp.stat(posixpath.dirname(full))
        except asyncssh.SFTPError as exc:
            if is_missing(exc):
                return False
            raise
        if attrs.type != asyncssh.FILEXFER_TYPE_DIRECTORY:
            raise NotADirectory(f"a parent of {path} is a file, not a directory", path=path)
        return True

    async def _delete(self, path: str, expect: Version | None) -> None:
        """Remove a file under its lock (compared with *expect*), or an empty directory."""
        full = self.client.full(path)
        token = self.leases.token()

        async def run(sftp: asyncssh.SFTPClient) -> None:
            attrs = await self.client.attributes(sftp, full, path, follow=False)
            if attrs.type == asyncssh.FILEXFER_TYPE_DIRECTORY:
                if [name for name in await sftp.listdir(full) if name not in (".", "..")]:
                    raise InvalidArgument(f"{path} is a directory that is not empty", path=path)
                await sftp.rmdir(full)
                return
            real = await self.client.changed_entry(sftp, full, path)  # one lock per file
            async with self.leases.held(sftp, real, path, token):
                current, _ = await self.client.file_version(sftp, real, path)
                if current is None:
                    raise NotFound(f"{path} does not exist", path=path)
                check_expect(path, expect, current)
                await sftp.remove(real)

        await self.client.call(path, run)

    async def _mkdir(self, path: str) -> None:
        """Create the directory and its parents."""
        full = self.client.full(path)

        async def run(sftp: asyncssh.SFTPClient) -> None:
            await self.client.confined(sftp, full, path)
            try:
                attrs = await sftp.stat(full)
            except asyncssh.SFTPError:  # missing: made with its parents
                try:
                    await sftp.makedirs(full, exist_ok=True)
                except asyncssh.SFTPError as exc:
                    raise await self.client.refine(sftp, exc, path) from exc
            else:
                if attrs.type != asyncssh.FILEXFER_TYPE_DIRECTORY:
                    raise AlreadyExists(f"{path} is a file", path=path)

        await self.client.call(path, run)


class _CreateUpdate(ConditionalUpdate):
    """A file whose directory did not exist when read: its write takes the lock (and makes it)."""

    def __init__(
        self, backend: Backend, path: str, *, write: Callable[..., Awaitable[Version]]
    ) -> None:
        super().__init__(backend, path, None)
        self.write_file = write
        """:meth:`SftpBackend._write` of the path: ``(data, expect, *, mode)``."""

    async def _put(self, data: bytes, *, was: Version | None, permissions: Permissions) -> Version:
        # (the owner is the server's to give: the login's)
        return await self.write_file(data, ABSENT if was is None else was, mode=permissions.mode)


class _LeasedUpdate(Update):
    """An update whose lock has been held since the read: nothing is compared again."""

    def __init__(
        self,
        backend: SftpBackend,
        path: str,
        current: Blob | None,
        *,
        full: str,
        mode: int | None,
        token: str,
    ) -> None:
        super().__init__(backend, path, current)
        self.client, self.leases = backend.client, backend.leases
        self.full, self.token = full, token
        self.permissions = Permissions(mode=mode)

    async def _put(self, data: bytes, *, was: Version | None, permissions: Permissions) -> Version:
        """Publish *data* over the file, which holds *was* (None: missing) unless this landed.

        Its owner is the server's to give (the login's): ``permissions.owner`` is not sent.
        """
        version = content_version(data)
        mode = self.permissions.mode if permissions.mode is None else permissions.mode

        async def publish(sftp: asyncssh.SFTPClient, retry: bool) -> None:
            held = partial(self._still_held, sftp)
            await _publish(
                sftp,
                self.full,
                data,
                mode=mode,
                replace=was is not None,
                held=held,
                token=self.token,
                retry=retry,
            )

        await self._change(version, was, publish)
        return version

    async def _remove(self, *, was: Version) -> None:
        async def remove(sftp: asyncssh.SFTPClient, retry: bool) -> None:
            del retry  # (nothing of an earlier attempt's to clear)
            await self._still_held(sftp)
            await sftp.remove(self.full)

        await self._change(None, was, remove)

    async def _still_held(self, sftp: asyncssh.SFTPClient) -> None:
        await self.leases.still_held(sftp, self.full, self.path, self.token)

    async def _change(
        self,
        version: Version | None,
        was: Version | None,
        act: Callable[[asyncssh.SFTPClient, bool], Awaitable[None]],
    ) -> None:
        """Run *act*, which checks the lock is still ours just before it commits, once.

        A retry follows a lost connection: the attempt cut off may have left *version*
        (done), or nothing (*was* still there: *act* runs again, told it is a retry).

        Raises:
            Stale: The lease ran out or nearly has.
            Unavailable: Not retryable: after a lost connection the file is neither as it
                was nor as this change would leave it (a writer outside the protocol, or one
                that broke the lease while the connection was down), so whether the change
                landed cannot be told.

        """
        attempts = itertools.count(1)

        async def run(sftp: asyncssh.SFTPClient) -> None:
            retry = next(attempts) > 1
            if retry:
                now, _ = await self.client.file_version(sftp, self.full, self.path)
                if now == version:
                    return
                if now != was:
                    raise Unavailable(
                        f"{self.path}: whether the change landed cannot be told (the connection "
                        "was lost), and the file holds neither what was read nor what it wrote",
                        path=self.path,
                        retryable=False,
                        hint="Read the file again: another writer may have changed it.",
                    )
            await act(sftp, retry)

        await self.client.call(self.path, run)


async def _publish(
    sftp: asyncssh.SFTPClient,
    full: str,
    data: bytes,
    *,
    mode: int | None,
    replace: bool,
    held: Callable[[], Awaitable[None]],
    token: str,
    retry: bool,
) -> None:
    """Write *data* to a temporary file beside *full*, fsync it, and rename it over *full*.

    *held* runs just before the rename, and raises if the lock is no longer ours to publish under.
    Each attempt's temporary file has a name of its own, which starts with one the lock's
    *token* gives: a *retry* after a lost connection (whose cleanup could not run) removes
    what the attempts before left (a late rename of one still publishes whole content).
    """
    directory = posixpath.dirname(full)
    stem = f"{TEMP_PREFIX}{hashlib.sha256(token.encode()).hexdigest()[:24]}."
    if retry:
        with suppress(asyncssh.SFTPError):  # (best effort: a directory one may not list)
            for left in await sftp.listdir(directory):
                if left.startswith(stem):
                    await _quietly_remove(sftp, posixpath.join(directory, left))
    temp = posixpath.join(directory, f"{stem}{secrets.token_hex(4)}")
    try:
        async with sftp.open(temp, "xb") as handle:
            await handle.write(data)
            await handle.fsync()
        if mode is not None:
            await sftp.chmod(temp, mode)
        await held()
        if replace:
            await sftp.posix_rename(temp, full)
        else:
            await sftp.rename(temp, full)  # refuses to replace
    except BaseException:
        await asyncio.shield(_quietly_remove(sftp, temp))
        raise


async def _quietly_remove(sftp: asyncssh.SFTPClient, path: str) -> None:
    with suppress(asyncssh.Error, OSError):  # cleanup of our own leftovers
        await sftp.remove(path)


def _stat(path: str, attrs: asyncssh.SFTPAttrs) -> Stat:
    kind = _KINDS.get(attrs.type, FileKind.OTHER)
    return Stat(
        path=path,
        kind=kind,
        size=attrs.size if kind is FileKind.FILE else None,
        mtime=float(attrs.mtime) if attrs.mtime is not None else None,
    )


async def _connected(sftp: asyncssh.SFTPClient) -> None:
    del sftp


async def _read_chunk(
    handle: asyncssh.SFTPClientFile, size: int, sftp: asyncssh.SFTPClient
) -> bytes:
    del sftp
    data: bytes = await handle.read(size)
    return data
