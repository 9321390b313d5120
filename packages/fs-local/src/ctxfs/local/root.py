"""The confined root: one directory descriptor every path resolves beneath, and its entries.

:class:`RootDirectory` opens paths through :mod:`ctxfs.local.resolve`, applies the link policies,
refuses what is not a regular file before opening it for reading (a FIFO or a device is never
opened) and tells what a path resolves to. During a call core authorized, it opens a path only
where core judged it to be (:func:`~ctxfs.core.kit.authorized_location`). Its methods block.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, InitVar, dataclass, field
from pathlib import Path
from typing import Final

from ctxfs.core import (
    Denied,
    FsError,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotARegularFile,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from ctxfs.core.kit import (
    MAX_PATH_BYTES,
    FileKind,
    Location,
    Stat,
    authorized_location,
    join_path,
    link_refusal,
    relocated,
)
from ctxfs.local.oserrors import translate, translated
from ctxfs.local.resolve import Resolver

__all__ = ["DIR_FLAGS", "TEMP_PREFIX", "RootDirectory", "Seen", "identity", "stat_of"]

TEMP_PREFIX: Final = ".ctxfs-tmp."
"""Names of temporary files; hidden from listings, reaped, and refused as targets."""
DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY
_REOPEN_FLAGS: Final = os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY
_KINDS: Final = {
    stat.S_IFREG: FileKind.FILE,
    stat.S_IFDIR: FileKind.DIRECTORY,
    stat.S_IFLNK: FileKind.SYMLINK,
}
_DELETED: Final = " (deleted)"
"""What ``/proc/self/fd`` adds to the path of a file unlinked since it was opened."""


@dataclass(frozen=True)
class Seen:
    """The entry an update read, by identity (None: there was none)."""

    identity: tuple[int, ...] | None
    info: os.stat_result | None = field(default=None, compare=False)
    """Its metadata as read (mode and owner, for a file put back)."""
    directory_device: int | None = field(default=None, compare=False)
    """The device of its directory, where a change writes (None: not known)."""


def identity(info: os.stat_result | None) -> tuple[int, ...] | None:
    """What tells one state of a file from another under the CAS lock, without reading it.

    ctxfs writers always publish a new inode; a writer bypassing ctxfs that
    rewrites the file in place changes its size or its times.
    """
    if info is None:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def stat_of(path: str, info: os.stat_result) -> Stat:
    """The :class:`Stat` of *path* from its ``lstat``."""
    kind = _KINDS.get(stat.S_IFMT(info.st_mode), FileKind.OTHER)
    return Stat(
        path=path,
        kind=kind,
        size=info.st_size if kind is FileKind.FILE else None,
        mtime=info.st_mtime,
    )


@dataclass(eq=False)
class RootDirectory:
    """The directory *path*, open as *opened* (:attr:`fd`), with the backend's link policies."""

    path: Path
    opened: InitVar[int]
    resolver: Resolver
    _: KW_ONLY
    backend: object
    """Whose paths core judges (:func:`~ctxfs.core.kit.authorized_location`)."""
    follow_symlinks: bool
    allow_hard_links: bool
    read_hard_links: bool
    text: str = field(init=False)

    def __post_init__(self, opened: int) -> None:
        self.text = str(self.path)
        self._fd: int | None = opened

    @property
    def fd(self) -> int:
        """The root's descriptor, while open.

        Raises:
            Unavailable: It was closed (:meth:`close`): its number may be another file's now.

        """
        if self._fd is None:
            raise Unavailable(
                f"the workspace {self.text} was closed",
                retryable=False,
                hint="The workspace was closed; open it again to go on.",
            )
        return self._fd

    def close(self) -> None:
        """Close the root's descriptor; every later use of it is ``unavailable``."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def open(self, path: str, flags: int) -> int:
        """Open *path* beneath the root with *flags*, where core judged it to be if it did.

        Raises:
            Stale: Core authorized *path* at another location (a link was swapped since).

        """
        try:
            fd = self._open(path, flags)
        except FsError:
            self._check_still_judged(path)  # (an error must not tell what lies elsewhere)
            raise
        try:
            self._check_judged(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open(self, path: str, flags: int) -> int:
        try:
            return self.resolver.open(self.fd, path, flags, follow_symlinks=self.follow_symlinks)
        except NotFound:
            self.check()
            raise

    def _check_judged(self, fd: int, path: str, *, name: str | None = None) -> None:
        """Raise ``Stale`` unless *fd* (or its entry *name*) is where core judged *path* to be.

        An entry that is not there passes if *path* still resolves where it was judged to (a
        final link, judged as its target). Outside a call core authorized
        (:func:`~ctxfs.core.kit.authorized_location`), there is nothing to check.
        """
        judged = authorized_location(self.backend, path)
        if judged is None:
            return
        real = self.real(fd, path)
        if name is None and real != judged.resolved:
            raise relocated(path)
        if name is not None and join_path(real, name) != judged.resolved:
            self._check_still_judged(path)

    def _check_still_judged(self, path: str) -> None:
        """Raise ``Stale`` if *path*, judged by core, now resolves elsewhere (or not at all)."""
        judged = authorized_location(self.backend, path)
        if judged is None:
            return
        self.check()  # (a deleted root is unavailable, not a moved path)
        try:
            now = self.locate(path).resolved
        except FsError:
            now = None
        if now != judged.resolved:
            raise relocated(path) from None

    def check(self) -> None:
        """Raise ``Unavailable`` if the root has been deleted."""
        if (gone := self.gone()) is not None:
            raise gone

    def gone(self) -> FsError | None:
        """The error of a deleted root, or None (for ``translated(on_missing=...)``)."""
        if os.fstat(self.fd).st_nlink:
            return None
        return Unavailable(
            f"the workspace root {self.path} has been deleted",
            retryable=False,
            hint="The workspace directory no longer exists; nothing can be read or written.",
        )

    def open_file(self, path: str) -> tuple[int, os.stat_result]:
        """Open regular file *path* for reading; with its ``fstat``."""
        return self.readable(self.open(path, os.O_PATH), path)

    def readable(
        self, located: int, path: str, *, writing: bool = False
    ) -> tuple[int, os.stat_result]:
        """Open for reading the regular file that ``O_PATH`` descriptor *located* names; close it.

        The type is checked (:meth:`check_regular`) before the file itself is opened, through
        ``/proc/self/fd``: the same inode, whatever its name leads to by then.
        """
        try:
            info = os.fstat(located)
            self.check_regular(path, info, writing=writing)
            with translated(path):
                return os.open(f"/proc/self/fd/{located}", _REOPEN_FLAGS), info
        finally:
            os.close(located)

    def check_regular(self, path: str, info: os.stat_result, *, writing: bool = False) -> None:
        """Refuse what is not a regular file, and a file with other names where not allowed."""
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

    def stat(self, path: str) -> Stat:
        """The metadata of *path*, a final symbolic link not followed."""
        if not path:
            self.check()
        fd = self.open(path, os.O_PATH)
        try:
            with translated(path):
                info = os.fstat(fd)
        finally:
            os.close(fd)
        return stat_of(path, info)

    def is_file(self, path: str) -> bool:
        """Whether *path* is a regular file (False for anything else, or an error)."""
        try:
            return self.stat(path).kind is FileKind.FILE
        except FsError:
            return False

    def locate(self, path: str) -> Location:
        """Resolve *path* as far as it opens; the rest is kept as spelled.

        The key is the absolute path that gives, the same for every spelling and
        every root above the file, before and after a create makes its parents. What
        stops the resolution (a file, a loop, a directory that may not be entered) is
        told by the call itself, once the policies have judged where it leads; a link
        that leads nowhere leads to where its target would be.

        Raises:
            InvalidPath: That absolute path is longer than ``PATH_MAX`` holds, or links
                expand *path* beyond it (refused as a loop, ``ELOOP``).

        """
        resolved = self._resolved(path.split("/") if path else [], path, hops=0)
        assert resolved is not None  # (a path without "..": what does not open stays below)
        key = os.path.join(self.text, resolved) if resolved else self.text
        if len(os.fsencode(key)) > MAX_PATH_BYTES:  # (the kernel could not tell it back)
            raise translate(OSError(errno.ENAMETOOLONG, "File name too long"), path)
        return Location(resolved=resolved, key=key)

    def _resolved(self, parts: list[str], path: str, *, hops: int) -> str | None:
        """Where *parts* (*path*, links expanded) lead (see :meth:`locate`); None: out.

        The longest start that opens is resolved by the kernel (through links and ``..``);
        a link that leads nowhere is followed, its target resolved in turn; the rest is
        joined on as spelled. The work is bounded: a few opens per link followed (the
        longest start is found by halving), at most :data:`_MOST_HOPS` links, none
        expanding the path beyond ``PATH_MAX``.

        Raises:
            InvalidPath: The links expand *path* beyond ``PATH_MAX`` (as a loop: ``ELOOP``).

        """
        if hops and len(os.fsencode("/".join(parts))) > MAX_PATH_BYTES:
            raise translate(OSError(errno.ELOOP, os.strerror(errno.ELOOP)), path)
        depth, fd = _deepest_open(parts, lambda start: self._open(start, os.O_PATH))
        try:
            real = self.real(fd, "/".join(parts))
            name = parts[depth] if depth < len(parts) else ".."
            target = None if name in (".", "..") else _link_target(fd, name)
        finally:
            os.close(fd)
        if target is not None and hops < _MOST_HOPS and self.follow_symlinks:
            steps = [step for step in target.split("/") if step not in ("", ".")]
            here = real.split("/") if real else []
            further = self._resolved([*here, *steps, *parts[depth + 1 :]], path, hops=hops + 1)
            if further is not None:
                return further
        rest = "/".join(parts[depth:])
        if ".." not in parts[depth:]:
            return join_path(real, rest) if rest else real
        joined = posixpath.normpath(join_path(real, rest))  # (real holds no link)
        if joined == ".." or joined.startswith("../"):
            return None
        return "" if joined == "." else joined

    def real(self, fd: int, path: str) -> str:
        """The root-relative path of what is open at *fd*, for *path* (what the kernel resolved).

        Raises:
            InvalidPath: Its absolute path is longer than the kernel can tell (``PATH_MAX``).
            Unavailable: There is no ``/proc`` to ask, or the root has moved since opened.

        """
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError as error:
            if error.errno == errno.ENAMETOOLONG:
                raise translate(error, path) from error
            raise Unavailable(
                f"cannot tell what a path resolves to without /proc ({error.strerror})",
                retryable=False,
            ) from error
        if where.endswith(_DELETED) and os.fstat(fd).st_nlink == 0:
            # replaced since it was opened: its path is where its successor is
            where = where.removesuffix(_DELETED)
        if where == self.text:
            return ""
        if not where.startswith(self.text + "/"):
            raise Unavailable(
                f"the workspace root {self.text} has moved (it is now {where.partition(' (')[0]})",
                retryable=False,
                hint="The workspace directory was renamed or moved; open it again.",
            )
        return where[len(self.text) + 1 :]

    @contextlib.contextmanager
    def made_dir(self, path: str, *, entry: str | None = None) -> Iterator[int]:
        """Directory *path*, made with its missing levels if need be, open for the block.

        With *entry* (a path in it), no level is made unless it leads where core judged
        *entry* to be. If the block (or making the levels) fails, the levels made are
        removed again, deepest first, those still empty.
        """
        made: list[tuple[int, str]] = []
        try:
            fd = self.open_dir(path, create=True, made=made, entry=entry)
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

    def open_dir(
        self,
        path: str,
        *,
        create: bool,
        made: list[tuple[int, str]] | None = None,
        entry: str | None = None,
    ) -> int:
        """Open directory *path*; with *create*, make missing levels one at a time.

        Each is made and opened (``O_NOFOLLOW``) at its parent's descriptor, whose new entry
        is ``fsync``-ed, and added to *made* with that descriptor, which the caller then
        closes. *path* (or *entry*, a path in it) must lead where core judged it to be: none
        is made, and nothing opened, else.
        """
        try:
            return self._holding(self.open(path, DIR_FLAGS), entry)
        except FsError as error:
            if entry is not None:
                self._check_still_judged(entry)  # (an error must not tell what lies elsewhere)
                if isinstance(error, NotADirectory):  # (said of the entry asked for)
                    raise translate(OSError(errno.ENOTDIR, error.message), entry) from error
            if not isinstance(error, NotFound) or not create or not path:
                raise
        parts = path.split("/")
        for existing in range(len(parts) - 1, -1, -1):
            try:
                fd = self.open("/".join(parts[:existing]), DIR_FLAGS)
                break
            except NotFound:
                if existing == 0:
                    raise
        kept = False  # fd is a parent in *made*: the caller closes it
        try:
            missing = "/".join(parts[existing:])
            judged, below = (
                (path, missing)
                if entry is None
                else (entry, join_path(missing, entry.rpartition("/")[2]))
            )
            self._check_judged(fd, judged, name=below)
            for name in parts[existing:]:
                with translated(path, on_missing=self.gone):
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                        if made is not None:
                            made.append((fd, name))
                            kept = True
                        os.fsync(fd)  # (its new entry, durable before anything goes in it)
                    child = os.open(name, DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                if not kept:
                    os.close(fd)
                fd, kept = child, False
        except BaseException:
            if not kept:
                os.close(fd)
            raise
        return fd

    def _holding(self, fd: int, entry: str | None) -> int:
        """Directory *fd*, once it holds *entry* where core judged it to be (else closed)."""
        if entry is not None:
            try:
                self._check_judged(fd, entry, name=entry.rpartition("/")[2])
            except BaseException:
                os.close(fd)
                raise
        return fd

    def entry(self, dir_fd: int, name: str, path: str) -> os.stat_result | None:
        """The regular file *name* in *dir_fd*, to change; None if absent; a link is refused."""
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise translate(error, path) from error
        if stat.S_ISLNK(info.st_mode):
            raise self.symlink_refusal(dir_fd, name, path)
        self.check_regular(path, info, writing=True)
        return info

    def symlink_refusal(self, dir_fd: int, name: str, path: str) -> FsError:
        """The refusal to change symbolic link *name*, naming its target."""
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            target = "?"
        return link_refusal(path, target)


_MOST_HOPS: Final = 40
"""Links that lead nowhere :meth:`RootDirectory.locate` follows in turn, at most (as the kernel)."""


def _deepest_open(parts: list[str], opened: Callable[[str], int]) -> tuple[int, int]:
    """The longest start of *parts* that *opened* opens: its length, and its descriptor.

    The whole first (it opens, mostly), then by halving: a start opens if a longer one
    does (the kernel resolves left to right), so *n* parts cost at most ``log2(n) + 2``
    opens.
    """
    deepest: tuple[int, int] | None = None
    low, high = 0, len(parts)  # (the longest start that opens is in low..high)
    tried = high
    try:
        while low <= high:
            try:
                fd = opened("/".join(parts[:tried]))
            except (NotFound, NotADirectory, InvalidPath, PermissionDenied):
                high = tried - 1
            else:
                if deepest is not None:
                    os.close(deepest[1])
                deepest, low = (tried, fd), tried + 1
            tried = (low + high) // 2
    except BaseException:
        if deepest is not None:
            os.close(deepest[1])
        raise
    if deepest is None:  # pragma: no cover
        raise AssertionError("unreachable: the root always opens")
    return deepest


def _link_target(directory_fd: int, name: str) -> str | None:
    """The target of the link *name* in the directory open at *directory_fd*, to follow.

    None: no link, or one to an absolute path (outside the root).
    """
    try:
        target = os.readlink(name, dir_fd=directory_fd)
    except OSError:  # no such entry, or not a link
        return None
    return None if target.startswith("/") else target
