"""``LocalBackend``: a directory on local disk, confined by the kernel, written atomically.

The root is opened once; every later operation starts from that descriptor and
resolves through :mod:`ctxfs.local.resolve`, so renaming or swapping paths
cannot redirect it. Opens are non-blocking and checked with ``fstat``: FIFOs,
sockets and devices are refused at once. Writes go to a temporary file in the
target's own directory (``O_EXCL | O_NOFOLLOW``), which is written in full,
given the old mode, ``fsync``-ed and renamed over the target within that
directory, whose entry is then ``fsync``-ed too. Versions are the ``xxh3_128``
hash of the content (no timestamp shortcut: none is provably safe).
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import errno
import functools
import os
import secrets
import stat
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Final, Self, TypeVar
from urllib.parse import urlsplit

import anyio

from ctxfs.core import (
    AlreadyExists,
    Busy,
    Denied,
    FsError,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotARegularFile,
    NotFound,
    Stale,
    Unavailable,
)
from ctxfs.core.kit import (
    ABSENT,
    DEFAULT_CHUNK_SIZE,
    Backend,
    Blob,
    Capabilities,
    CasScope,
    ContentHasher,
    Expect,
    FileKind,
    FileLines,
    FileMatches,
    FileSearch,
    LineSearch,
    Listing,
    Location,
    ReadRequest,
    ReadStream,
    Stat,
    Update,
    Version,
    check_expect,
    content_version,
    join_path,
)
from ctxfs.local.answers import RecentAnswers
from ctxfs.local.flocks import LockDirectory, default_state_dir
from ctxfs.local.listing import DirectoryNames
from ctxfs.local.oserrors import translate, translated
from ctxfs.local.resolve import Resolver, choose_resolver
from ctxfs.local.ripgrep import find_ripgrep

__all__ = ["TEMP_PREFIX", "LocalBackend"]

TEMP_PREFIX: Final = ".ctxfs-tmp."
"""Names of temporary files; hidden from listings, reaped, and refused as targets."""
INLINE_READ_MAX: Final = 256 * 1024
"""Files up to this size are read on the event loop (see ``inline_reads``)."""

_CAS_LOCK_TIMEOUT: Final = 30.0
_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY
_RENAME_NOREPLACE: Final = 1
_KINDS: Final = {
    stat.S_IFREG: FileKind.FILE,
    stat.S_IFDIR: FileKind.DIRECTORY,
    stat.S_IFLNK: FileKind.SYMLINK,
}
_LIBC = ctypes.CDLL(None, use_errno=True)

T = TypeVar("T")


class LocalBackend(Backend):
    """Files under one local directory.

    Args:
        root: The directory; it must exist (it is never created).
        follow_symlinks: Follow symlinks whose targets stay inside the root
            (default). A write or edit never replaces a symlink: it is refused
            and names the link's target. When false, any symlink on a path is
            refused (``denied``).
        allow_hard_links: Serve files that have other names too. Off by default:
            a hard link can make a file outside the root look like one inside.
        read_hard_links: Serve such files for reading and searching only (a
            uv-installed ``.venv`` is made of them); changing one stays refused.
        resolver: ``"auto"`` (openat2 where the kernel has it), ``"openat2"`` or
            ``"walk"`` (the portable fallback). ``$CTXFS_LOCAL_RESOLVER`` sets the default.
        state_dir: Private directory for lock files, outside the root
            (default: ``$CTXFS_STATE_DIR``, else ``$XDG_STATE_HOME/ctxfs``).
        temp_max_age: Seconds after which a stray temporary file is reaped even
            if its writer may still be alive.
        inline_reads: Read files of up to ``INLINE_READ_MAX`` bytes on the event
            loop itself: a few microseconds of system calls on a local disk, where
            a worker-thread visit costs hundreds. Turn off for a root on a network
            filesystem, whose reads can stall. Writes always run in a worker
            thread (they wait for ``fsync``).
        ripgrep: Search with ripgrep (:mod:`ctxfs.local.ripgrep`), confined to the
            root by Landlock, where both are available; else searches walk and
            read through the backend.

    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        follow_symlinks: bool = True,
        allow_hard_links: bool = False,
        read_hard_links: bool = False,
        resolver: str | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        temp_max_age: float = 3600.0,
        inline_reads: bool = True,
        ripgrep: bool = True,
    ) -> None:
        if not os.fspath(root):  # "" would be the working directory, whatever it is
            raise InvalidArgument(
                "the workspace root is empty", hint="Name the directory to open (. for here)."
            )
        self.root = Path(os.path.realpath(root))
        self._root_text = str(self.root)
        try:
            self.root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as error:
            raise InvalidArgument(
                f"cannot open workspace root {self.root}: {error.strerror}"
            ) from error
        self.follow_symlinks = follow_symlinks
        self.allow_hard_links = allow_hard_links
        self.read_hard_links = read_hard_links or allow_hard_links
        self.temp_max_age = temp_max_age
        self.inline_reads = inline_reads
        self.ripgrep = ripgrep
        self._names = DirectoryNames()
        self.answers = RecentAnswers()
        try:
            self.resolver: Resolver = choose_resolver(
                self.root_fd, resolver or os.environ.get("CTXFS_LOCAL_RESOLVER", "auto")
            )
            self.locks = _lock_directory(self.root, state_dir)
        except BaseException:
            os.close(self.root_fd)
            raise

    @classmethod
    def from_url(cls, url: str, **options: object) -> Self:
        """Open ``file:///abs/dir`` or a plain path (relative to the working directory)."""
        parts = urlsplit(url)
        if parts.scheme.lower() == "file":
            if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
                raise InvalidArgument(f"unsupported file URL {url!r}")
            from urllib.request import url2pathname  # noqa: PLC0415 - HTTP's modules with it

            url = url2pathname(parts.path)
        return cls(url, **options)  # type: ignore[arg-type]

    @property
    def capabilities(self) -> Capabilities:
        """Host-wide CAS (flock), ranges, real directories, symlinks, cross-process locks."""
        return _CAPABILITIES

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.root)!r}, resolver={self.resolver.name!r})"

    # -- the primitives ----------------------------------------------------------------------

    async def _stat(self, path: str) -> Stat:
        return await self._run(self._stat_sync, path)

    async def _locate(self, path: str) -> Location:
        if self.inline_reads:
            return self._locate_sync(path)  # a few system calls, as a small read
        return await self._run(self._locate_sync, path)

    async def _read(self, path: str, request: ReadRequest) -> Blob:
        if not self.inline_reads:
            return await self._run(self._read_sync, path, request)
        fd, info = self._open_file(path)
        rest = partial(self._read_open, fd, info, path, request)
        if info.st_size <= INLINE_READ_MAX:
            return rest()
        return await self._run_owning(fd, rest)

    @asynccontextmanager
    async def _open_read(self, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
        """Stream a file from one open descriptor, so a concurrent replace cannot tear it."""
        if self.inline_reads:
            fd, info, first = self._open_and_read(path, min(chunk_size, INLINE_READ_MAX))
        else:
            fd, info, first = await self._run(self._open_and_read, path, chunk_size)

        async def chunks() -> AsyncIterator[bytes]:
            chunk, seen, hole_end = first, 0, 0
            while chunk:
                yield chunk
                seen += len(chunk)
                if 0 < info.st_size <= seen:
                    break  # the whole file as it was at open: no extra visit to learn of EOF
                if seen >= hole_end:
                    read = await self._run(_read_at, fd, seen, chunk_size, info.st_size)
                    if isinstance(read, bytes):
                        chunk = read
                        continue
                    hole_end = seen + read
                chunk = _zeros(min(chunk_size, hole_end - seen))  # a hole is not read

        stream = ReadStream(chunks(), size=info.st_size)
        try:
            yield stream
        finally:
            await stream.aclose()
            os.close(fd)

    @asynccontextmanager
    async def _open_update(self, path: str, request: ReadRequest) -> AsyncIterator[Update]:
        """Read the file under its CAS lock and keep the lock until the update is done.

        No other ctxfs writer can replace the file meanwhile, so the write checks
        only that the entry is still the file read (the same inode, size and
        times: a writer bypassing ctxfs shows there), not its content again.
        """
        key = (await self._locate(path)).key
        async with self.locks.hold("cas", key, timeout=_CAS_LOCK_TIMEOUT):
            if self.inline_reads:
                opened = self._open_entry(path, request.max_size)
            else:
                opened = await self._run(self._open_entry, path, request.max_size)
            if opened is None:
                yield _LockedUpdate(self, path, None, _Seen(None))
                return
            fd, info = opened
            read = partial(self._read_entry, fd, info, path)
            if self.inline_reads and info.st_size <= INLINE_READ_MAX:
                current, seen = read()
            else:
                current, seen = await self._run_owning(fd, read)
            yield _LockedUpdate(self, path, current, seen)

    async def _write(self, path: str, data: bytes, expect: Expect) -> Version:
        """Atomically replace or create a file, under the file's CAS lock."""
        key = (await self._locate(path)).key
        async with self.locks.hold("cas", key, timeout=_CAS_LOCK_TIMEOUT):
            return await self._run(self._write_sync, path, data, expect)

    async def _delete(self, path: str, expect: Version | None) -> None:
        """Delete a file or an empty directory, under the file's CAS lock."""
        key = (await self._locate(path)).key
        async with self.locks.hold("cas", key, timeout=_CAS_LOCK_TIMEOUT):
            await self._run(self._delete_sync, path, expect)

    async def _list(self, path: str) -> builtins.list[Stat]:
        """List a directory; temporary files are reaped."""
        return await self._run(self._list_sync, path)

    async def _list_names(self, path: str) -> Listing:
        """A directory's names and kinds, no ``stat``; kept while it is unchanged.

        Temporary files are reaped, as :meth:`_list` does.
        """
        return await self._run(self._list_names_sync, path)

    async def _details(self, entries: builtins.list[Stat]) -> builtins.list[Stat]:
        """``stat`` the entries (of one directory) in one worker trip."""
        if all(entry.mtime is not None for entry in entries):
            return entries
        return await self._run(self._details_sync, entries)

    async def _move_directory(self, source: str, destination: str) -> None:
        """Rename directory *source* to *destination* (``RENAME_NOREPLACE``), durably."""
        await self._run(self._move_directory_sync, source, destination)

    async def _mkdir(self, path: str) -> None:
        """Create a directory and its parents, one level at a time."""
        await self._run(self._mkdir_sync, path)

    async def search_files(self, search: FileSearch) -> FileMatches | None:
        """Ripgrep's answer, confined by Landlock (None where either is missing).

        The same question asked again while nothing below the directory has
        changed (the next page) gets the same answer without a search
        (:mod:`ctxfs.local.answers`).

        Files with other names (hard links) are left out unless they may be read.
        """
        # the first call runs the binary once (what it loads): not on the event loop
        engine = await anyio.to_thread.run_sync(find_ripgrep) if self.ripgrep else None
        if engine is None:
            return None
        found = None
        if self.answers.holds(search):
            found = await anyio.to_thread.run_sync(self.answers.recall, self.root_fd, search)
        if found is None:
            since_ns = self.answers.started()
            found = await engine.search(self.root, self.root_fd, search)
            if found is not None:
                self.answers.remember(search, found, since_ns=since_ns)
        if found is None or self.read_hard_links or search.pattern is None:
            return found
        counts, linked = await anyio.to_thread.run_sync(self._single_named, found.counts)
        return replace(found, counts=counts, skipped={"hard_linked": linked} if linked else {})

    async def search_lines(self, search: LineSearch) -> FileLines | None:
        """Ripgrep's matching lines of the files, confined by Landlock (None where it cannot).

        Each file is opened here as a read opens it, and ripgrep reads that.
        """
        engine = await anyio.to_thread.run_sync(find_ripgrep) if self.ripgrep else None
        if engine is None:
            return None
        opened = await anyio.to_thread.run_sync(self._open_searchable, search.paths)
        if not opened:  # none is a regular file that may be read: none to give
            return FileLines(lines={})
        try:
            return await engine.lines(self.root, self.root_fd, search, opened=opened)
        finally:
            for fd in opened.values():
                os.close(fd)

    def _open_searchable(self, paths: tuple[str, ...]) -> dict[str, int]:
        """Each path a search may read, opened as a read opens it (others left out).

        A FIFO, socket or device is left out at once: the open does not wait for a writer.
        """
        opened: dict[str, int] = {}
        for path in paths:
            with contextlib.suppress(FsError):
                opened[path] = self._open_file(path)[0]
        return opened

    def _single_named(self, counts: dict[str, int]) -> tuple[dict[str, int], int]:
        """The files of *counts* with no other name, and how many had one (left out)."""
        kept, linked = {}, 0
        for path, count in counts.items():
            try:
                info = os.stat(path, dir_fd=self.root_fd, follow_symlinks=False)
            except OSError:
                continue  # gone since ripgrep saw it
            if info.st_nlink == 1:
                kept[path] = count
            else:
                linked += 1
        return kept, linked

    def lock(self, key: str, *, timeout: float) -> AbstractAsyncContextManager[None]:
        """The cross-process mutation lock of the file *key* (:meth:`locate`'s key)."""
        return self.locks.hold("mutation", key, timeout=timeout)

    async def aclose(self) -> None:
        """Close the root and lock-directory descriptors."""
        with contextlib.suppress(OSError):
            os.close(self.root_fd)
        with contextlib.suppress(OSError):
            self.locks.close()

    # -- blocking work, run in worker threads ------------------------------------------------

    async def _run(self, function: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(partial(function, *args))

    async def _run_owning(self, fd: int, work: Callable[[], T]) -> T:
        """Run *work*, which closes *fd*, in a worker thread; close *fd* here if it never ran.

        A worker that ran has closed the descriptor already: closing it again could
        close another thread's newer descriptor of the same number.
        """
        ran = False

        def run() -> T:
            nonlocal ran
            ran = True
            return work()

        try:
            return await self._run(run)
        finally:
            if not ran:  # cancelled before a worker took it
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _open(self, path: str, flags: int) -> int:
        try:
            return self.resolver.open(
                self.root_fd, path, flags, follow_symlinks=self.follow_symlinks
            )
        except NotFound:
            self._check_root()
            raise

    def _check_root(self) -> None:
        if os.fstat(self.root_fd).st_nlink == 0:
            raise Unavailable(
                f"the workspace root {self.root} has been deleted",
                retryable=False,
                hint="The workspace directory no longer exists; nothing can be read or written.",
            )

    def _open_file(self, path: str) -> tuple[int, os.stat_result]:
        fd = self._open(path, _READ_FLAGS)
        try:
            info = os.fstat(fd)
            self._check_regular(path, info)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd, info

    def _open_and_read(self, path: str, chunk_size: int) -> tuple[int, os.stat_result, bytes]:
        """Open a file and read its first chunk in the same worker-thread visit."""
        fd, info = self._open_file(path)
        try:
            with translated(path):
                return fd, info, os.read(fd, chunk_size)
        except BaseException:
            os.close(fd)
            raise

    def _check_regular(self, path: str, info: os.stat_result, *, writing: bool = False) -> None:
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectory(f"{path or 'the root'} is a directory", path=path)
        if stat.S_ISLNK(info.st_mode):
            raise NotARegularFile(f"{path} is a symbolic link", path=path)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(
                f"{path} is not a regular file (a FIFO, socket or device)", path=path
            )
        if info.st_nlink > 1 and not (self.allow_hard_links if writing else self.read_hard_links):
            done = "changed" if self.read_hard_links else "read or changed"
            raise Denied(
                f"{path} has {info.st_nlink} hard links; such files cannot be {done}",
                path=path,
                hint="A hard link may share this file with a place outside the workspace.",
                details={"hard_links": info.st_nlink},
            )

    def _stat_sync(self, path: str) -> Stat:
        if not path:
            self._check_root()
        fd = self._open(path, os.O_PATH)
        try:
            with translated(path):
                info = os.fstat(fd)
        finally:
            os.close(fd)
        return _stat_of(path, info)

    def _locate_sync(self, path: str) -> Location:
        """Resolve *path* as far as it exists, symlinks followed by the policy.

        The kernel resolves the deepest part that exists (``/proc/self/fd`` says
        where it led); the rest is kept as spelled. The key is the absolute path
        that gives, the same for every spelling and every root above the file,
        and the same before and after a create makes the missing directories.
        """
        parts = path.split("/") if path else []
        for depth in range(len(parts), -1, -1):
            try:
                fd = self._open("/".join(parts[:depth]), os.O_PATH)
            except NotFound:
                continue
            try:
                real = self._real(fd)
            finally:
                os.close(fd)
            rest = "/".join(parts[depth:])
            resolved = join_path(real, rest) if rest else real
            key = os.path.join(self._root_text, resolved) if resolved else self._root_text
            return Location(resolved=resolved, key=key)
        raise AssertionError("unreachable: the root always opens")  # pragma: no cover

    def _real(self, fd: int) -> str:
        """The root-relative path of what is open at *fd* (what the kernel resolved).

        Raises:
            Unavailable: There is no ``/proc`` to ask, or the root has moved since
                it was opened.

        """
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError as error:
            raise Unavailable(
                f"cannot tell what a path resolves to without /proc ({error.strerror})",
                retryable=False,
            ) from error
        if where.endswith(_DELETED) and os.fstat(fd).st_nlink == 0:
            # Replaced (a write renames a new file over it) since it was opened: the
            # path it had is where its successor is.
            where = where.removesuffix(_DELETED)
        root = self._root_text
        if where == root:
            return ""
        if not where.startswith(root + "/"):
            raise Unavailable(
                f"the workspace root {root} has moved (it is now {where.partition(' (')[0]})",
                retryable=False,
                hint="The workspace directory was renamed or moved; open it again.",
            )
        return where[len(root) + 1 :]

    def _read_sync(self, path: str, request: ReadRequest) -> Blob:
        fd, info = self._open_file(path)
        return self._read_open(fd, info, path, request)

    def _read_open(self, fd: int, info: os.stat_result, path: str, request: ReadRequest) -> Blob:
        """Read from *fd* (opened on *path*, *info* its fstat), then close it."""
        try:
            request.check(path, size=info.st_size)
            with translated(path):
                if request.whole:
                    data = _read_all(fd, info.st_size)
                    version = content_version(data)
                else:
                    version = _hash_fd(fd)
                    first = request.start or 0
                    end = info.st_size if request.end is None else request.end
                    last = min(end, info.st_size)
                    data = os.pread(fd, max(0, last - first), first) if last > first else b""
                size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        return Blob(data=data, version=version, size=size)

    def _open_entry(self, path: str, max_size: int | None) -> tuple[int, os.stat_result] | None:
        """Open file *path* for an update, not following a final symlink; None if missing."""
        parent, _, name = path.rpartition("/")
        try:
            dir_fd = self._open_dir(parent, create=False)
        except NotFound:
            return None
        try:
            with translated(path):
                entry = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if stat.S_ISLNK(entry.st_mode):
                    self._refuse_link(dir_fd, name, path)
                    return None  # a dangling link reads as missing; a write refuses the link
                fd = os.open(name, _READ_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except NotFound:
            self._check_root()  # a deleted root is unavailable, not a missing file
            return None
        finally:
            os.close(dir_fd)
        try:
            info = os.fstat(fd)
            self._check_regular(path, info, writing=True)
            ReadRequest(max_size=max_size).check(path, size=info.st_size)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd, info

    def _refuse_link(self, dir_fd: int, name: str, path: str) -> None:
        """Refuse to update the symlink *name*, unless it dangles (then return).

        A link that leads out of the root, or one the policy does not follow, is
        refused as a read of it would be; a link inside the root is never replaced.
        """
        try:
            os.close(self._open(path, os.O_PATH))
        except NotFound:
            return
        raise self._symlink_refusal(dir_fd, name, path)

    def _read_entry(self, fd: int, info: os.stat_result, path: str) -> tuple[Blob, _Seen]:
        """Read the whole file open at *fd* (*info*: its fstat at open), then close it.

        The file must have the same identity after the read as before it, and
        hold as many bytes as were read: a writer that changed it meanwhile would
        leave a mix of two states, which is ``Stale``.
        """
        try:
            with translated(path):
                data = _read_all(fd, info.st_size)
                after = os.fstat(fd)
        finally:
            os.close(fd)
        if _identity(after) != _identity(info) or len(data) != after.st_size:
            raise Stale(f"{path} changed while it was read; read it again", path=path)
        blob = Blob(data=data, version=content_version(data), size=len(data))
        return blob, _Seen(_identity(after), info=after)

    @contextlib.contextmanager
    def _made_dir(self, path: str) -> Iterator[int]:
        """Directory *path*, made with its missing levels if need be, open for the block.

        If the block (or making the levels) fails, the levels made are removed
        again, deepest first, those still empty.
        """
        made: list[tuple[int, str]] = []
        try:
            fd = self._open_dir(path, create=True, made=made)
            try:
                yield fd
            finally:
                os.close(fd)
        except BaseException:
            for parent_fd, name in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=parent_fd)
            raise
        finally:
            for parent_fd, _ in made:
                os.close(parent_fd)

    def _open_dir(
        self, path: str, *, create: bool, made: list[tuple[int, str]] | None = None
    ) -> int:
        """Open directory *path*; with *create*, make missing levels one at a time.

        The deepest existing ancestor is found by resolving upwards; each missing
        level is then made and opened (``O_NOFOLLOW``) relative to its parent's fd.
        Each level made is added to *made* with its parent's fd, which is then
        left open for the caller to close.
        """
        try:
            return self._open(path, _DIR_FLAGS)
        except NotFound:
            if not create or not path:
                raise
        parts = path.split("/")
        existing = len(parts) - 1
        while True:
            try:
                fd = self._open("/".join(parts[:existing]), _DIR_FLAGS)
                break
            except NotFound:
                if existing == 0:
                    raise
                existing -= 1
        kept = False  # fd is a parent in *made*: the caller closes it
        try:
            for name in parts[existing:]:
                with translated(path, on_missing=self._root_gone):
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                    else:
                        if made is not None:
                            made.append((fd, name))
                            kept = True
                    child = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                if not kept:
                    os.close(fd)
                fd, kept = child, False
        except BaseException:
            if not kept:
                os.close(fd)
            raise
        return fd

    def _root_gone(self) -> FsError | None:
        try:
            self._check_root()
        except Unavailable as gone:
            return gone
        return None

    def _entry(self, dir_fd: int, name: str, path: str) -> os.stat_result | None:
        """The entry *name* in *dir_fd*, not following a symlink; None if absent."""
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise translate(error, path) from error
        if stat.S_ISLNK(info.st_mode):
            raise self._symlink_refusal(dir_fd, name, path)
        self._check_regular(path, info, writing=True)
        return info

    def _symlink_refusal(self, dir_fd: int, name: str, path: str) -> FsError:
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            target = "?"
        return NotARegularFile(
            f"{path} is a symbolic link (to {target}); it is never replaced by a write",
            path=path,
            hint=f"Change the file the link points to ({target}) instead.",
            details={"symlink_target": target},
        )

    def _write_sync(
        self, path: str, data: bytes, expect: Expect | _Seen, like: os.stat_result | None = None
    ) -> Version:
        """Write *data* at *path* under *expect*; a new file takes *like*'s mode and owner."""
        for _ in range(_DIRECTORY_RACES):
            try:
                return self._write_once(path, data, expect, like)
            except _DirectoryGone:
                continue  # a failed create removed the directory it had made: make it again
        raise Busy(f"the directory of {path} keeps being removed", path=path)

    def _write_once(
        self, path: str, data: bytes, expect: Expect | _Seen, like: os.stat_result | None
    ) -> Version:
        parent, _, name = path.rpartition("/")
        with self._made_dir(parent) as dir_fd:
            current = self._entry(dir_fd, name, path)
            self._check_precondition(dir_fd, name, path, current, expect)
            with translated(path, on_missing=self._root_gone):
                try:
                    temp = _write_temp(dir_fd, data, current if current is not None else like)
                except FileNotFoundError:
                    if os.fstat(dir_fd).st_nlink == 0:
                        raise _DirectoryGone from None
                    raise
                try:
                    if expect is ABSENT or expect == _Seen(None):
                        _rename_noreplace(dir_fd, temp, name)
                    else:
                        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(temp, dir_fd=dir_fd)
                    raise
                os.fsync(dir_fd)
        return content_version(data)

    def _check_precondition(
        self,
        dir_fd: int,
        name: str,
        path: str,
        current: os.stat_result | None,
        expect: Expect | _Seen,
    ) -> None:
        """Refuse a change whose precondition the entry *current* (None: missing) fails."""
        if isinstance(expect, _Seen):
            if _identity(current) != expect.identity:
                raise Stale(f"{path} changed while it was being updated", path=path)
            return
        check_expect(
            path, expect, None if current is None else partial(self._hash_entry, dir_fd, name, path)
        )

    def _hash_entry(self, dir_fd: int, name: str, path: str) -> Version:
        with translated(path):
            fd = os.open(name, _READ_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            self._check_regular(path, os.fstat(fd), writing=True)
            os.set_blocking(fd, True)
            with translated(path):
                return _hash_fd(fd)
        finally:
            os.close(fd)

    def _move_sync(self, source: str, seen: _Seen, target: str, target_seen: _Seen) -> None:
        """Rename *source* to *target*, both still as seen; durable once it returns.

        A target seen missing must still be missing (``RENAME_NOREPLACE``); the
        target's missing directories are made.
        """
        parent, _, name = source.rpartition("/")
        target_parent, _, target_name = target.rpartition("/")
        dir_fd = self._open_dir(parent, create=False)
        try:
            with self._made_dir(target_parent) as target_dir_fd:
                current = self._entry(dir_fd, name, source)
                self._check_precondition(dir_fd, name, source, current, seen)
                there = self._entry(target_dir_fd, target_name, target)
                self._check_precondition(target_dir_fd, target_name, target, there, target_seen)
                with translated(target, on_missing=self._root_gone):
                    if target_seen.identity is None:
                        _rename_noreplace(dir_fd, name, target_name, target_dir_fd=target_dir_fd)
                    else:
                        os.replace(name, target_name, src_dir_fd=dir_fd, dst_dir_fd=target_dir_fd)
                    os.fsync(target_dir_fd)
                    os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _move_back_sync(self, moved: str, seen: _Seen, source: str) -> None:
        """Rename *moved* back to *source*, where it was *seen*; *source* must be free.

        The entry must still be the file moved (its inode, size and modification
        time: a rename changes only its change time).
        """
        parent, _, name = moved.rpartition("/")
        source_parent, _, source_name = source.rpartition("/")
        dir_fd = self._open_dir(parent, create=False)
        try:
            with self._made_dir(source_parent) as source_dir_fd:
                there = _identity(self._entry(dir_fd, name, moved))
                if there is None or seen.identity is None or there[:4] != seen.identity[:4]:
                    raise Stale(f"{moved} changed since it was moved there", path=moved)
                with translated(source, on_missing=self._root_gone):
                    _rename_noreplace(dir_fd, name, source_name, target_dir_fd=source_dir_fd)
                    os.fsync(source_dir_fd)
                    os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _move_directory_sync(self, source: str, destination: str) -> None:
        """Rename directory *source* to *destination*, which must not exist; durable on return.

        Both parents are opened as :meth:`_move_sync` opens them (confined beneath
        the root); the entries themselves are never followed: a symbolic link at
        *source* is refused, and one at *destination* is something that exists.
        """
        parent, _, name = source.rpartition("/")
        target_parent, _, target_name = destination.rpartition("/")
        dir_fd = self._open_dir(parent, create=False)
        try:
            with translated(source, on_missing=self._root_gone):
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a directory"
                raise NotADirectory(f"{source} is {kind}", path=source)
            with (
                self._made_dir(target_parent) as target_dir_fd,
                translated(destination, on_missing=self._root_gone),
            ):
                _rename_noreplace(
                    dir_fd, name, target_name, target_dir_fd=target_dir_fd, directory=True
                )
                os.fsync(target_dir_fd)
                os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _delete_sync(self, path: str, expect: Version | _Seen | None) -> None:
        parent, _, name = path.rpartition("/")
        dir_fd = self._open_dir(parent, create=False)
        try:
            with translated(path, on_missing=self._root_gone):
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                raise self._symlink_refusal(dir_fd, name, path)
            if stat.S_ISDIR(info.st_mode):
                if expect is not None:
                    raise InvalidArgument(f"{path} is a directory; it has no version", path=path)
                try:
                    os.rmdir(name, dir_fd=dir_fd)
                except OSError as error:
                    if error.errno == errno.ENOTEMPTY:
                        raise InvalidArgument(f"directory {path} is not empty", path=path) from None
                    with translated(path):
                        raise
            else:
                self._check_precondition(dir_fd, name, path, info, expect)
                with translated(path):
                    os.unlink(name, dir_fd=dir_fd)
            with translated(path):
                os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _list_sync(self, path: str) -> builtins.list[Stat]:
        self._check_root()  # a deleted root still lists as empty through its descriptor
        dir_fd = self._open(path, _DIR_FLAGS)
        entries: builtins.list[Stat] = []
        try:
            with translated(path), os.scandir(dir_fd) as scan:
                for entry in scan:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed while listing
                    if entry.name.startswith(TEMP_PREFIX):
                        self._reap(dir_fd, entry.name, info)
                        continue
                    entries.append(_stat_of(join_path(path, entry.name), info))
        finally:
            os.close(dir_fd)
        return entries

    def _list_names_sync(self, path: str) -> Listing:
        self._check_root()
        dir_fd = self._open(path, _DIR_FLAGS)

        def finish(path: str, entries: builtins.list[Stat]) -> Listing:
            for entry in entries:
                if entry.name.startswith(TEMP_PREFIX):
                    self._reap(dir_fd, entry.name)
            return self.listing(path, entries)

        try:
            with translated(path):
                return self._names.entries(dir_fd, path, finish=finish)
        finally:
            os.close(dir_fd)

    def _details_sync(self, entries: builtins.list[Stat]) -> builtins.list[Stat]:
        directories: dict[str, int] = {}
        detailed = []
        try:
            for entry in entries:
                parent, _, name = entry.path.rpartition("/")
                try:
                    if parent not in directories:
                        directories[parent] = self._open(parent, _DIR_FLAGS)
                    info = os.stat(name, dir_fd=directories[parent], follow_symlinks=False)
                except (NotFound, FileNotFoundError):
                    continue  # removed since the listing
                detailed.append(_stat_of(entry.path, info))
        finally:
            for fd in directories.values():
                os.close(fd)
        return detailed

    def _reap(self, dir_fd: int, name: str, info: os.stat_result | None = None) -> None:
        """Remove a temporary file whose writer is gone, or which is simply too old.

        *info* is its ``lstat``, if the caller has it.
        """
        if info is None:
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return
        writer = name[len(TEMP_PREFIX) :].partition(".")[0]
        age = time.time() - info.st_mtime
        if age > self.temp_max_age or not (writer.isdigit() and _alive(int(writer))):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)

    def _mkdir_sync(self, path: str) -> None:
        try:
            os.close(self._open_dir(path, create=True))
        except NotADirectory:
            if self._is_file(path):
                raise AlreadyExists(f"{path} exists and is a file", path=path) from None
            raise

    def _is_file(self, path: str) -> bool:
        try:
            return self._stat_sync(path).kind is FileKind.FILE
        except FsError:
            return False


@dataclass(frozen=True)
class _Seen:
    """The entry an update read, by identity (None: there was none)."""

    identity: tuple[int, ...] | None
    info: os.stat_result | None = field(default=None, compare=False)
    """Its metadata as read (mode and owner, for a file put back)."""


def _identity(info: os.stat_result | None) -> tuple[int, ...] | None:
    """What tells one state of a file from another under the CAS lock, without reading it.

    ctxfs writers always publish a new inode; a writer bypassing ctxfs that
    rewrites the file in place changes its size or its times.
    """
    if info is None:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class _LockedUpdate(Update):
    """An update whose CAS lock is held since the read.

    Its first change checks only that the entry is still the one read (its
    identity); an undo, after it, checks the version this update left.
    """

    def __init__(self, backend: LocalBackend, path: str, current: Blob | None, seen: _Seen):
        super().__init__(backend, path, current)
        self.local = backend
        self.seen = seen
        self._as_read = True

    async def _put(self, data: bytes, *, was: Version | None) -> Version:
        expect = self.seen if self._as_read else (ABSENT if was is None else was)
        local = self.local
        version = await local._run(local._write_sync, self.path, data, expect, self.seen.info)
        self._as_read = False
        return version

    async def _remove(self, *, was: Version) -> None:
        expect = self.seen if self._as_read else was
        await self.local._run(self.local._delete_sync, self.path, expect)
        self._as_read = False

    async def _move(self, destination: Update) -> Version:
        assert self.current is not None
        assert isinstance(destination, _LockedUpdate)
        await self.local._run(
            self.local._move_sync, self.path, self.seen, destination.path, destination.seen
        )
        self._as_read = destination._as_read = False
        return self.current.version

    async def _undo_move(self, destination: Update, written: Version) -> None:
        assert isinstance(destination, _LockedUpdate)
        del written  # the file moved is known by its inode
        await self.local._run(self.local._move_back_sync, destination.path, self.seen, self.path)
        if destination.current is not None:  # the file the move replaced
            await destination._undo(None)


_CAPABILITIES = Capabilities(
    cas_scope=CasScope.HOST,
    range_reads=True,
    real_directories=True,
    symlinks=True,
    locks=True,
    directory_moves=True,
    file_search=True,
    line_search=True,
)


def _lock_directory(root: Path, state_dir: str | os.PathLike[str] | None) -> LockDirectory:
    state = Path(os.path.realpath(state_dir or default_state_dir()))
    if state == root or root in state.parents:
        raise InvalidArgument(f"the state directory {state} must lie outside the root")
    return LockDirectory(state)


def _stat_of(path: str, info: os.stat_result) -> Stat:
    kind = _KINDS.get(stat.S_IFMT(info.st_mode), FileKind.OTHER)
    return Stat(
        path=path,
        kind=kind,
        size=info.st_size if kind is FileKind.FILE else None,
        mtime=info.st_mtime,
    )


def _read_all(fd: int, size: int) -> bytes:
    """Read a whole file, asking for the size it had at open in one go (one copy)."""
    chunks = []
    wanted = max(size, DEFAULT_CHUNK_SIZE)
    while chunk := os.read(fd, wanted):  # until EOF: a read may return less than asked
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _hash_fd(fd: int) -> Version:
    hasher, offset = ContentHasher(), 0
    while chunk := os.pread(fd, DEFAULT_CHUNK_SIZE, offset):
        hasher.update(chunk)
        offset += len(chunk)
    return hasher.version()


def _write_temp(dir_fd: int, data: bytes, current: os.stat_result | None) -> str:
    """Write *data* to a fresh temporary file in *dir_fd*, durably; return its name."""
    name = f"{TEMP_PREFIX}{os.getpid()}.{secrets.token_hex(8)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600 if current is not None else 0o666, dir_fd=dir_fd)
    try:
        view, written = memoryview(data), 0
        while written < len(data):
            written += os.write(fd, view[written:])
        if current is not None:
            os.fchmod(fd, stat.S_IMODE(current.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
            if os.geteuid() == 0:
                os.fchown(fd, current.st_uid, current.st_gid)
        os.fsync(fd)  # an error here fails the write: never retry-and-trust
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    os.close(fd)
    return name


def _rename_noreplace(
    dir_fd: int,
    source: str,
    target: str,
    *,
    target_dir_fd: int | None = None,
    directory: bool = False,
) -> None:
    """Rename *source* to *target* only if *target* does not exist (not even as a symlink).

    *target* is in *target_dir_fd* (by default the same directory). A file
    system without ``renameat2`` flags falls back to link-then-unlink, which a
    *directory* cannot do: it is then refused (``EOPNOTSUPP``), never replaced.
    """
    to_fd = dir_fd if target_dir_fd is None else target_dir_fd
    renameat2 = getattr(_LIBC, "renameat2", None)
    if renameat2 is not None:
        result = renameat2(
            dir_fd, os.fsencode(source), to_fd, os.fsencode(target), _RENAME_NOREPLACE
        )
        if result == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(code, os.strerror(code), target)
    if directory:
        code = errno.EOPNOTSUPP
        raise OSError(code, "this file system cannot move a directory without replacing", target)
    os.link(source, target, src_dir_fd=dir_fd, dst_dir_fd=to_fd, follow_symlinks=False)
    os.unlink(source, dir_fd=dir_fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_DIRECTORY_RACES: Final = 3


class _DirectoryGone(Exception):
    """The directory a write was about to publish in was removed meanwhile."""


_DELETED: Final = " (deleted)"
"""What ``/proc/self/fd`` adds to the path of a file unlinked since it was opened."""


def _read_at(fd: int, position: int, chunk_size: int, size: int) -> bytes | int:
    """The chunk at *position*; or, where a hole of a sparse file covers it, the hole's length.

    ``SEEK_DATA`` finds the next data; a file system without it reads as usual.
    """
    try:
        hole = os.lseek(fd, position, os.SEEK_DATA) - position
    except OSError as error:
        # ENXIO: a hole to the end, unless the file was cut short meanwhile (read to learn)
        ended = error.errno == errno.ENXIO and os.fstat(fd).st_size >= size
        hole = size - position if ended else 0
    hole = min(hole, size - position)  # a file grown meanwhile is read as it was at open
    if hole >= min(chunk_size, size - position) > 0:
        return hole
    return os.pread(fd, chunk_size, position)


@functools.lru_cache(maxsize=4)
def _zeros(size: int) -> bytes:
    """*size* zero bytes: what a hole reads as (one object, shared)."""
    return bytes(size)
