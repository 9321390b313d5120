"""Changes beneath a :class:`~ctxfs.local.root.RootDirectory`: atomic, durable, not via links.

A write goes to a temporary file in the target's own directory (``O_EXCL | O_NOFOLLOW``),
written in full, given the old mode, group and extended attributes
(:mod:`ctxfs.local.xattrs`), ``fsync``-ed and renamed over the target within that directory,
whose entry is then ``fsync``-ed too. A precondition is a version (compared by hash),
``ABSENT``, or a :class:`Seen` entry (compared by identity, under the CAS lock held since the
read). Each function blocks.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from functools import partial
from typing import Final

from ctxfs.core import (
    AlreadyExists,
    Busy,
    InvalidArgument,
    NotADirectory,
    Stale,
)
from ctxfs.core.kit import (
    ABSENT,
    NO_PERMISSIONS,
    Expect,
    Permissions,
    Version,
    check_expect,
    content_version,
)
from ctxfs.local.oserrors import translate, translated
from ctxfs.local.reads import hash_fd
from ctxfs.local.root import TEMP_PREFIX, RootDirectory, Seen, identity
from ctxfs.local.xattrs import copy_xattrs

__all__ = ["delete", "kept_in_memory", "mkdir", "move", "move_back", "move_directory", "write"]

_MEMORY_FILESYSTEMS: Final = frozenset({"tmpfs", "ramfs"})
_RENAME_NOREPLACE: Final = 1
_DIRECTORY_RACES: Final = 3
_LIBC = ctypes.CDLL(None, use_errno=True)


class _DirectoryGone(Exception):
    """The directory a write was about to publish in was removed meanwhile."""


def write(
    root: RootDirectory,
    path: str,
    data: bytes,
    expect: Expect | Seen,
    *,
    like: os.stat_result | None = None,
    permissions: Permissions = NO_PERMISSIONS,
    own: bool = False,
) -> Version:
    """Write *data* at *path* under *expect*, keeping its metadata (or *like*'s mode and owner).

    A file replaced keeps its mode, owner (where this process may give it: root), group (where
    it may: root, or a member of the group) and extended attributes (its ACL, its ``user.``
    attributes: :func:`~ctxfs.local.xattrs.copy_xattrs`); a file made anew (*like*: a file
    put back), its mode, owner and group. *permissions*, where they give a mode, are what the
    file gets instead (its owner and group given as above), and no extended attributes:
    the file there may be another than the one whose content comes back; unless it is
    *own*, this writer's own change (being undone), which kept them.

    Raises:
        PermissionDenied: The file's access control list cannot be kept (nothing changed:
            the file would be open to whom it denies).

    """
    for _ in range(_DIRECTORY_RACES):
        try:
            return _write_once(
                root, path, data, expect, like=like, permissions=permissions, own=own
            )
        except _DirectoryGone:
            continue  # a failed create removed the directory it had made: make it again
    raise Busy(f"the directory of {path} keeps being removed", path=path)


def kept_in_memory(device: int, *, mounts: str = "/proc/self/mountinfo") -> bool:
    """Whether *device* holds tmpfs or ramfs: kept in memory, its ``fsync`` waits for nothing.

    Told by the kernel's table of *mounts*; False where that cannot be read.
    """
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        with open(mounts, encoding="utf-8", errors="replace") as table:
            for line in table:  # "ID PARENT MAJOR:MINOR ROOT POINT ... - TYPE SOURCE ..."
                fields, _, filesystem = line.partition(" - ")
                if fields.split(" ", 3)[2:3] == [wanted]:
                    return filesystem.split(" ", 1)[0] in _MEMORY_FILESYSTEMS
    except OSError:
        pass
    return False


def _write_once(
    root: RootDirectory,
    path: str,
    data: bytes,
    expect: Expect | Seen,
    *,
    like: os.stat_result | None,
    permissions: Permissions,
    own: bool,
) -> Version:
    parent, _, name = path.rpartition("/")
    with root.made_dir(parent, entry=path) as dir_fd:
        current = root.entry(dir_fd, name, path)
        if current is not None and not os.access(name, os.W_OK, dir_fd=dir_fd, effective_ids=True):
            read_only = os.fstatvfs(dir_fd).f_flag & os.ST_RDONLY  # (a rename would replace it)
            raise translate(
                OSError(errno.EROFS if read_only else errno.EACCES, "not writable"), path
            )
        _check_precondition(root, dir_fd, name, path, current=current, expect=expect)
        with translated(path, on_missing=root.gone):
            try:
                model = current if current is not None else like
                keeps = current is not None and (permissions.mode is None or own)
                replaced = name if keeps else None
                temp = _write_temp(dir_fd, data, model, permissions=permissions, replaced=replaced)
            except FileNotFoundError:
                if os.fstat(dir_fd).st_nlink == 0:
                    raise _DirectoryGone from None
                raise
            try:
                if expect is ABSENT or expect == Seen(None):
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
    root: RootDirectory,
    dir_fd: int,
    name: str,
    path: str,
    *,
    current: os.stat_result | None,
    expect: Expect | Seen,
) -> None:
    """Refuse a change whose precondition the entry *current* (None: missing) fails."""
    if isinstance(expect, Seen):
        if identity(current) != expect.identity:
            raise Stale(f"{path} changed while it was being updated", path=path)
        return
    check_expect(
        path, expect, None if current is None else partial(_hash_entry, root, dir_fd, name, path)
    )


def _hash_entry(root: RootDirectory, dir_fd: int, name: str, path: str) -> Version:
    with translated(path):
        located = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    fd, _ = root.readable(located, path, writing=True)
    try:
        with translated(path):
            return hash_fd(fd)
    finally:
        os.close(fd)


def move(root: RootDirectory, source: str, seen: Seen, target: str, target_seen: Seen) -> None:
    """Rename *source* to *target*, both still as seen; durable once it returns.

    A target seen missing must still be missing (``RENAME_NOREPLACE``); the
    target's missing directories are made.
    """
    target_parent, _, target_name = target.rpartition("/")
    with (
        _parent_of(root, source) as (dir_fd, name),
        root.made_dir(target_parent, entry=target) as target_dir_fd,
    ):
        current = root.entry(dir_fd, name, source)
        _check_precondition(root, dir_fd, name, source, current=current, expect=seen)
        there = root.entry(target_dir_fd, target_name, target)
        _check_precondition(
            root, target_dir_fd, target_name, target, current=there, expect=target_seen
        )
        with translated(target, on_missing=root.gone):
            if target_seen.identity is None:
                _rename_noreplace(dir_fd, name, target_name, target_dir_fd=target_dir_fd)
            else:
                os.replace(name, target_name, src_dir_fd=dir_fd, dst_dir_fd=target_dir_fd)
            os.fsync(target_dir_fd)
            os.fsync(dir_fd)


def move_back(root: RootDirectory, moved: str, seen: Seen, source: str) -> None:
    """Rename *moved* back to *source*, where it was *seen*; *source* must be free.

    The entry must still be the file moved (its inode, size and modification
    time: a rename changes only its change time).
    """
    source_parent, _, source_name = source.rpartition("/")
    with (
        _parent_of(root, moved) as (dir_fd, name),
        root.made_dir(source_parent, entry=source) as source_dir_fd,
    ):
        there = identity(root.entry(dir_fd, name, moved))
        if there is None or seen.identity is None or there[:4] != seen.identity[:4]:
            raise Stale(f"{moved} changed since it was moved there", path=moved)
        with translated(source, on_missing=root.gone):
            _rename_noreplace(dir_fd, name, source_name, target_dir_fd=source_dir_fd)
            os.fsync(source_dir_fd)
            os.fsync(dir_fd)


def move_directory(root: RootDirectory, source: str, destination: str) -> None:
    """Rename directory *source* to *destination*, which must not exist; durable on return.

    The entries are never followed: a symbolic link at *source* is refused, and one at
    *destination* is something that exists.
    """
    target_parent, _, target_name = destination.rpartition("/")
    with _parent_of(root, source) as (dir_fd, name):
        with translated(source, on_missing=root.gone):
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a directory"
            raise NotADirectory(f"{source} is {kind}", path=source)
        with (
            root.made_dir(target_parent, entry=destination) as target_dir_fd,
            translated(destination, on_missing=root.gone),
        ):
            _rename_noreplace(
                dir_fd, name, target_name, target_dir_fd=target_dir_fd, directory=True
            )
            os.fsync(target_dir_fd)
            os.fsync(dir_fd)


def delete(root: RootDirectory, path: str, expect: Version | Seen | None) -> None:
    """Delete file *path* under *expect*, or empty directory *path* (then *expect* is None)."""
    with _parent_of(root, path) as (dir_fd, name):
        with translated(path, on_missing=root.gone):
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            raise root.symlink_refusal(dir_fd, name, path)
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
            _check_precondition(root, dir_fd, name, path, current=info, expect=expect)
            with translated(path):
                os.unlink(name, dir_fd=dir_fd)
        with translated(path):
            os.fsync(dir_fd)


@contextlib.contextmanager
def _parent_of(root: RootDirectory, path: str) -> Iterator[tuple[int, str]]:
    """The directory holding *path* (it must exist), open for the block, and *path*'s name."""
    parent, _, name = path.rpartition("/")
    dir_fd = root.open_dir(parent, create=False, entry=path)
    try:
        yield dir_fd, name
    finally:
        os.close(dir_fd)


def mkdir(root: RootDirectory, path: str) -> None:
    """Make directory *path* and its missing parents; ``AlreadyExists`` where it is a file."""
    try:
        with root.made_dir(path):
            pass  # (made and checked where judged; levels made are removed if that fails)
    except NotADirectory:
        if root.is_file(path):
            raise AlreadyExists(f"{path} exists and is a file", path=path) from None
        raise


def _write_temp(
    dir_fd: int,
    data: bytes,
    current: os.stat_result | None,
    *,
    permissions: Permissions,
    replaced: str | None = None,
) -> str:
    """Write *data* to a fresh temporary file in *dir_fd*, durably; return its name.

    It gets the mode *permissions* gives, else *current*'s, else the default (less the umask);
    the owner and group *permissions* give, else *current*'s: as root, where they may be
    given (else they stay root's); otherwise the group alone, where this user belongs to it.
    It gets the extended attributes of the file *replaced* (its name in *dir_fd*; *current*),
    if named, first, the mode after them, and its content last.
    """
    name = f"{TEMP_PREFIX}{os.getpid()}.{secrets.token_hex(8)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    mode, owner = permissions.mode, permissions.owner
    if mode is None and current is not None:
        mode = stat.S_IMODE(current.st_mode)
    group = owner[1] if owner is not None else None if current is None else current.st_gid
    fd = os.open(name, flags, 0o600 if mode is not None else 0o666, dir_fd=dir_fd)
    try:  # (who may read it is settled while it is empty: the content comes last)
        if replaced is not None:
            _copy_xattrs_of(dir_fd, replaced, current, fd)  # (then the mode: its ACL's mask)
        if mode is not None:
            os.fchmod(fd, mode & ~(stat.S_ISUID | stat.S_ISGID))
        if os.geteuid() == 0 and owner is not None:
            _give(fd, owner)
        elif os.geteuid() == 0 and current is not None:
            os.fchown(fd, current.st_uid, current.st_gid)
        elif group is not None:  # another user: the group alone, where the user is in it
            _give(fd, (-1, group))
        view, written = memoryview(data), 0
        while written < len(data):
            written += os.write(fd, view[written:])
        os.fsync(fd)  # an error here fails the write: never retry-and-trust
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    os.close(fd)
    return name


def _give(fd: int, owner: tuple[int, int]) -> None:
    """Give the file *fd* to *owner* (owner and group ids; -1 keeps one), where this process may.

    Root may not without the capability to, to an id its user namespace does not map, or
    on a filesystem without owners; another user may give only a group it belongs to. The
    file stays as it is where it may not.
    """
    try:
        os.fchown(fd, *owner)
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EINVAL, errno.EOPNOTSUPP):
            raise


def _copy_xattrs_of(dir_fd: int, name: str, info: os.stat_result | None, fd: int) -> None:
    """Copy to *fd* the extended attributes of file *name* in *dir_fd*, if it is still *info*."""
    try:
        source = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return  # removed meanwhile: there is nothing to keep
    try:
        now = os.fstat(source)
        if info is not None and (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
            copy_xattrs(source, fd)
    finally:
        os.close(source)


def _rename_noreplace(
    dir_fd: int,
    source: str,
    target: str,
    *,
    target_dir_fd: int | None = None,
    directory: bool = False,
) -> None:
    """Rename *source* to *target* (in *target_dir_fd*, by default the same) if it does not exist.

    Without ``renameat2`` flags it links then unlinks, which a *directory* cannot: then it is
    refused (``EOPNOTSUPP``), never replaced.
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
