"""The SFTP connection of one backend: connect on first use, translate errors, retry a loss.

Every call runs a function of the ``asyncssh.SFTPClient`` on the IO loop; a lost
connection is dropped and the call retried within the backend's
:class:`~ctxfs.remote.retry.Retries`. Errors come out as ctxfs errors naming the path.
"""

from __future__ import annotations

import asyncio
import posixpath
import stat
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, TypeVar

import asyncssh

from ctxfs.core import (
    AlreadyExists,
    FsError,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotARegularFile,
    NotFound,
    OutsideRoot,
    PermissionDenied,
    TooLarge,
    Unavailable,
)
from ctxfs.core.kit import (
    Blob,
    ContentHasher,
    ReadRequest,
    Version,
    content_version,
    link_refusal,
)
from ctxfs.remote.errors import translate
from ctxfs.remote.ioloop import on_io_loop
from ctxfs.remote.keys import KeySpace
from ctxfs.remote.retry import Retries

__all__ = ["READ_BLOCK", "SftpCall", "SftpClient", "is_missing", "regular", "sftp_error"]

T = TypeVar("T")

SftpCall = Callable[[asyncssh.SFTPClient], Awaitable[T]]
"""A function of the SFTP client, run on the IO loop."""

READ_BLOCK: Final = 256 * 1024
"""Bytes asked for in one SFTP read request."""
_MISSING: Final = frozenset({asyncssh.FX_NO_SUCH_FILE, asyncssh.FX_NO_SUCH_PATH})


class SftpClient:
    """One SSH connection and its SFTP session, to files under *root* on *host*."""

    def __init__(
        self,
        host: str,
        root: str,
        *,
        port: int,
        username: str | None,
        connect_options: dict[str, Any],
        retrying: Retries,
    ) -> None:
        self.host, self.port, self.username = host, port, username
        self.root = posixpath.normpath(root)
        self.server = f"sftp://{host}:{port}"
        """The server, as a URL without a path."""
        self.name = f"{self.server}{self.root}"
        """The server and root, as a URL."""
        self.keys = KeySpace("", unicode_only=False)
        self.retrying = retrying
        self.real_root: str | None = None
        """The root as the server resolves it (known once connected)."""
        self._connect_options = connect_options
        self._connection: asyncssh.SSHClientConnection | None = None
        self._sftp: asyncssh.SFTPClient | None = None
        self._connecting: asyncio.Lock | None = None
        self._generation = 0
        """Counts connections made: a retry drops only the one that failed."""

    async def call(self, path: str, fn: SftpCall[T]) -> T:
        """Run ``fn(sftp)`` on the IO loop; a lost connection is dropped and the call retried."""
        used: list[int] = []

        async def recover() -> None:
            if used:  # an attempt that failed to connect has no connection to drop
                await on_io_loop(self._drop, used[-1])

        return await self.retrying.run(
            f"{self.name}: {path or 'the root'}",
            partial(on_io_loop, self._run, path, fn, used),
            recover=recover,
        )

    async def call_once(self, path: str, fn: SftpCall[T]) -> T:
        """Run ``fn(sftp)`` on the IO loop, once (for calls that cannot be repeated)."""
        return await on_io_loop(self._run, path, fn, [])

    async def close(self) -> None:
        """Close the SSH connection."""
        await on_io_loop(self._drop, None)

    def full(self, path: str) -> str:
        """The server's path of canonical *path* (the lexical checks are the key space's)."""
        self.keys.key(path)
        return posixpath.join(self.root, path) if path else self.root

    async def confined(self, sftp: asyncssh.SFTPClient, full: str, path: str) -> str:
        """The server's real path of *full* (symlinks resolved as far as it exists).

        Raises:
            OutsideRoot: The server resolves it (through symlinks) outside the root.

        """
        probe, rest = full, ""
        while True:
            try:
                real = await sftp.realpath(probe)
                break
            except asyncssh.SFTPError as exc:
                if not is_missing(exc) or probe == self.root:
                    raise
                probe, name = posixpath.split(probe)
                rest = posixpath.join(name, rest) if rest else name
        if real != self.real_root and not real.startswith(self._below_root()):
            raise OutsideRoot(f"{path} leads outside the root through a symbolic link", path=path)
        return posixpath.join(real, rest) if rest else real

    async def located(self, sftp: asyncssh.SFTPClient, full: str, path: str) -> str:
        """Where file *full* lives, inside the root: its directory's real path and its own name.

        So every spelling of one file has one lock (a write refuses a link at its name:
        :meth:`changed_entry`).
        """
        real = await self.confined(sftp, full, path)
        if full == self.root:
            return real  # the root itself: its parent is outside
        directory, name = posixpath.split(full)
        return posixpath.join(await self.confined(sftp, directory, path), name)

    async def changed_entry(self, sftp: asyncssh.SFTPClient, full: str, path: str) -> str:
        """:meth:`located`, for a write, removal or move: a symbolic link there is refused.

        Raises:
            NotARegularFile: *full* names a symbolic link (a dangling one too).

        """
        real = await self.located(sftp, full, path)
        try:
            attrs = await sftp.lstat(real)
        except asyncssh.SFTPError as exc:
            if is_missing(exc):
                return real
            raise await self.refine(sftp, exc, path) from exc
        if attrs.type == asyncssh.FILEXFER_TYPE_SYMLINK:
            try:
                target = await sftp.readlink(real)
            except asyncssh.SFTPError:
                target = "?"
            raise link_refusal(path, target)
        return real

    def relative(self, real: str) -> str:
        """The root-relative path of the server's real path *real* (inside the root)."""
        return "" if real == self.real_root else real[len(self._below_root()) :]

    def _below_root(self) -> str:
        """How the real path of anything below the root starts (``/`` for the root ``/``)."""
        return f"{(self.real_root or '').rstrip('/')}/"

    async def attributes(
        self, sftp: asyncssh.SFTPClient, full: str, path: str, *, follow: bool
    ) -> asyncssh.SFTPAttrs:
        """The attributes of *full* (``lstat`` unless *follow*), checked to lie inside the root."""
        await self.confined(sftp, full, path)
        try:
            return await (sftp.stat(full) if follow else sftp.lstat(full))
        except asyncssh.SFTPError as exc:
            raise await self.refine(sftp, exc, path) from exc

    async def file_version(
        self, sftp: asyncssh.SFTPClient, full: str, path: str
    ) -> tuple[Version | None, int | None]:
        """The version (content hash) and permission bits of file *full* now, or (None, None).

        Raises:
            IsADirectory, NotARegularFile: *full* is not a regular file.

        """
        attrs = await self.file_attributes(sftp, full, path)
        if attrs is None:
            return None, None
        hasher = ContentHasher()
        async with sftp.open(full, "rb", block_size=READ_BLOCK) as handle:
            while True:
                chunk: bytes = await handle.read(READ_BLOCK)
                if not chunk:
                    break
                hasher.update(chunk)
        return hasher.version(), _mode(attrs)

    async def file_blob(
        self, sftp: asyncssh.SFTPClient, full: str, path: str, request: ReadRequest
    ) -> tuple[Blob | None, int | None]:
        """File *full* whole now and its permission bits, or (None, None); errors as above."""
        attrs = await self.file_attributes(sftp, full, path)
        if attrs is None:
            return None, None
        request.check(path, size=attrs.size or 0)
        async with sftp.open(full, "rb", block_size=READ_BLOCK) as handle:
            data: bytes = await handle.read()
        return Blob(data=data, version=content_version(data), size=len(data)), _mode(attrs)

    async def file_attributes(
        self, sftp: asyncssh.SFTPClient, full: str, path: str
    ) -> asyncssh.SFTPAttrs | None:
        """The attributes of regular file *full*, None if it does not exist; errors as above."""
        try:
            attrs = await sftp.stat(full)
        except asyncssh.SFTPError as exc:
            error = sftp_error(exc, path)
            if isinstance(error, NotFound):
                return None
            raise error from exc
        return regular(attrs, path)

    async def refine(self, sftp: asyncssh.SFTPClient, exc: BaseException, path: str) -> FsError:
        """The error for *exc* on *path*: ``NotADirectory`` when a parent is a file."""
        error = sftp_error(exc, path)
        if not isinstance(error, NotFound) and _code(exc) != asyncssh.FX_FAILURE:
            return error
        parent = path
        while "/" in parent:
            parent = parent.rpartition("/")[0]
            try:
                attrs = await sftp.stat(self.full(parent))
            except asyncssh.SFTPError:
                continue
            if attrs.type != asyncssh.FILEXFER_TYPE_DIRECTORY:
                return NotADirectory(f"{parent} is a file, not a directory", path=path)
            break
        return error

    async def _run(self, path: str, fn: SftpCall[T], used: list[int]) -> T:
        try:
            sftp = await self._session()
            used.append(self._generation)
            return await fn(sftp)
        except FsError:
            raise
        except Exception as exc:
            raise sftp_error(exc, path) from exc

    async def _session(self) -> asyncssh.SFTPClient:
        """The SFTP session, connecting on first use and after a loss."""
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._sftp is None:
                options = {"port": self.port, **self._connect_options}
                if self.username is not None:
                    options["username"] = self.username
                self._connection = await asyncssh.connect(self.host, **options)
                self._sftp = await self._connection.start_sftp_client(
                    path_errors="surrogateescape"  # (a name that is not UTF-8, as os.fsdecode)
                )
                self._generation += 1
                await self._sftp.makedirs(self.root, exist_ok=True)  # as a bucket prefix is
                self.real_root = await self._sftp.realpath(self.root)
            return self._sftp

    async def _drop(self, generation: int | None) -> None:
        """Close the connection (only if it is still *generation*, when one is given)."""
        if generation is not None and generation != self._generation:
            return  # already replaced by a newer connection
        connection, self._connection, self._sftp = self._connection, None, None
        if connection is not None:
            connection.close()
            await connection.wait_closed()


def regular(attrs: asyncssh.SFTPAttrs, path: str) -> asyncssh.SFTPAttrs:
    """*attrs*, if they are a regular file's (else ``IsADirectory`` or ``NotARegularFile``)."""
    if attrs.type == asyncssh.FILEXFER_TYPE_DIRECTORY:
        raise IsADirectory(f"{path} is a directory", path=path)
    if attrs.type != asyncssh.FILEXFER_TYPE_REGULAR:
        raise NotARegularFile(f"{path} is not a regular file", path=path)
    return attrs


def is_missing(exc: BaseException) -> bool:
    """Whether *exc* says the file is not there."""
    return _code(exc) in _MISSING


def _code(exc: BaseException) -> int | None:
    return exc.code if isinstance(exc, asyncssh.SFTPError) else None


def sftp_error(exc: BaseException, path: str) -> FsError:  # noqa: PLR0911 - a return per kind
    """The ctxfs error for an asyncssh (or transport) failure on *path*."""
    if isinstance(exc, FsError):
        return exc
    if isinstance(exc, asyncssh.SFTPError):
        code, reason = exc.code, exc.reason
        if code in _MISSING:
            return NotFound(f"{path} does not exist", path=path)
        if code in (asyncssh.FX_PERMISSION_DENIED, asyncssh.FX_WRITE_PROTECT):
            return PermissionDenied(f"the server refused access to {path}: {reason}", path=path)
        if code == asyncssh.FX_FILE_ALREADY_EXISTS:
            return AlreadyExists(f"{path} already exists", path=path)
        if code in (asyncssh.FX_NO_SPACE_ON_FILESYSTEM, asyncssh.FX_QUOTA_EXCEEDED):
            return TooLarge(f"the server has no room for {path}: {reason}", path=path)
        if code in (asyncssh.FX_NO_CONNECTION, asyncssh.FX_CONNECTION_LOST):
            return Unavailable(f"the SFTP connection was lost: {reason}", path=path)
        return translate(exc)
    if isinstance(exc, asyncssh.PermissionDenied):
        return PermissionDenied(f"SSH login refused: {exc.reason}", path=path)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return PermissionDenied(
            f"the SSH server's host key is not trusted: {exc.reason}",
            path=path,
            hint="Add the server's host key to known_hosts (or pass known_hosts=...); "
            "retrying cannot help.",
        )
    if isinstance(exc, asyncssh.KeyImportError | asyncssh.KeyEncryptionError):
        return InvalidArgument(
            f"an SSH key cannot be used: {exc}",
            path=path,
            hint="Check client_keys (and the passphrase of an encrypted key).",
        )
    if isinstance(exc, OSError) and exc.filename is not None:  # (a local file, not the socket)
        return InvalidArgument(
            f"a file the SSH connection needs cannot be read: {exc}",
            path=path,
            hint="Check the paths of client_keys and known_hosts, and their permissions.",
        )
    if isinstance(exc, asyncssh.Error | OSError):
        return Unavailable(f"SSH connection failed: {exc}", path=path)
    return translate(exc)


def _mode(attrs: asyncssh.SFTPAttrs) -> int | None:
    """The permission bits a file written in place of this one gets: setuid and setgid dropped."""
    if attrs.permissions is None:
        return None
    return stat.S_IMODE(attrs.permissions) & ~(stat.S_ISUID | stat.S_ISGID)
