"""Reads beneath a :class:`~ctxfs.local.root.RootDirectory`: whole, ranged, streamed, for an update.

Each function blocks; one that takes an open descriptor closes it.
"""

from __future__ import annotations

import errno
import functools
import os
import stat

from ctxfs.core import NotFound, Stale
from ctxfs.core.kit import (
    DEFAULT_CHUNK_SIZE,
    Blob,
    ContentHasher,
    ReadRequest,
    Version,
    content_version,
)
from ctxfs.local.oserrors import translated
from ctxfs.local.root import RootDirectory, Seen, identity

__all__ = [
    "HeldFile",
    "hash_fd",
    "open_and_read",
    "open_entry",
    "read_at",
    "read_entry",
    "read_open",
    "zeros",
]


def read_open(path: str, request: ReadRequest, fd: int, info: os.stat_result) -> Blob:
    """Read from *fd* (opened on *path*, *info* its fstat) as *request* asks, then close it."""
    try:
        request.check(path, size=info.st_size)
        with translated(path):
            if request.whole:
                data = _read_all(fd, info.st_size)
                version = content_version(data)
            else:
                version = hash_fd(fd)
                first = request.start or 0
                last = info.st_size if request.end is None else min(request.end, info.st_size)
                data = os.pread(fd, last - first, first) if last > first else b""
            size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    return Blob(data=data, version=version, size=size)


def open_and_read(
    root: RootDirectory, path: str, chunk_size: int
) -> tuple[int, os.stat_result, bytes]:
    """Open file *path* and read its first chunk; the descriptor stays open."""
    fd, info = root.open_file(path)
    try:
        with translated(path):
            return fd, info, os.read(fd, chunk_size)
    except BaseException:
        os.close(fd)
        raise


def open_entry(
    root: RootDirectory, path: str, max_size: int | None
) -> tuple[int, os.stat_result, int] | None:
    """Open file *path* for an update, not following a final symlink; None if missing.

    With the descriptor and its ``fstat``, the device of the file's directory.
    """
    parent, _, name = path.rpartition("/")
    try:
        dir_fd = root.open_dir(parent, create=False, entry=path)
    except NotFound:
        return None
    try:
        with translated(path):
            directory_device = os.fstat(dir_fd).st_dev
            entry = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(entry.st_mode):
                _refuse_link(root, dir_fd, name, path)
                return None  # a dangling link reads as missing; a write refuses the link
            located = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except NotFound:
        root.check()  # a deleted root is unavailable, not a missing file
        return None
    finally:
        os.close(dir_fd)
    fd, info = root.readable(located, path, writing=True)
    try:
        ReadRequest(max_size=max_size).check(path, size=info.st_size)
    except BaseException:
        os.close(fd)
        raise
    return fd, info, directory_device


def _refuse_link(root: RootDirectory, dir_fd: int, name: str, path: str) -> None:
    """Refuse to update symlink *name*, unless it dangles (then return).

    One leading out, or not followed, is refused as a read of it is; one inside is never replaced.
    """
    try:
        os.close(root.open(path, os.O_PATH))
    except NotFound:
        return
    raise root.symlink_refusal(dir_fd, name, path)


class HeldFile:
    """The file an update read for its version alone, kept open to give its content if asked."""

    def __init__(self) -> None:
        self.fd: int | None = None

    def content(self, path: str, read: Blob) -> bytes:
        """The whole content of the file as *read*, at its version still (its inode, even unlinked).

        Raises:
            Stale: Someone changed the file in place since (through another descriptor).

        """
        assert self.fd is not None
        with translated(path):
            os.lseek(self.fd, 0, os.SEEK_SET)
            data = _read_all(self.fd, read.size)
        if len(data) != read.size or content_version(data) != read.version:
            raise Stale(f"{path} changed in place since it was read; it is not put back", path=path)
        return data

    def close(self) -> None:
        """Close the file, if it was kept."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


def read_entry(
    path: str,
    fd: int,
    info: os.stat_result,
    directory_device: int,
    *,
    content_max: int | None = None,
    held: HeldFile | None = None,
) -> tuple[Blob, Seen]:
    """Read the whole file open at *fd* (*info*: its fstat at open), then close it.

    A file of more than *content_max* bytes is hashed instead, its content left out of the
    blob (``Blob.data`` empty); *fd* is then kept in *held*, not closed. ``Stale`` unless its
    identity is unchanged and it holds as many bytes as were read (a writer meanwhile would
    leave a mix of two states).
    """
    kept = held is not None and content_max is not None and info.st_size > content_max
    try:
        with translated(path):
            if kept:
                data = b""
                version, size = _hash_counted(fd)
            else:
                data = _read_all(fd, info.st_size)
                version, size = content_version(data), len(data)
            after = os.fstat(fd)
    finally:
        if kept:
            assert held is not None
            held.fd = fd
        else:
            os.close(fd)
    if identity(after) != identity(info) or size != after.st_size:
        raise Stale(f"{path} changed while it was read; read it again", path=path)
    blob = Blob(data=data, version=version, size=size)
    return blob, Seen(identity(after), info=after, directory_device=directory_device)


def _read_all(fd: int, size: int) -> bytes:
    """Read a whole file, asking for the size it had at open in one go (one copy)."""
    chunks = []
    wanted = max(size, DEFAULT_CHUNK_SIZE)
    while chunk := os.read(fd, wanted):  # until EOF: a read may return less than asked
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def hash_fd(fd: int) -> Version:
    """The version of the content of open file *fd*."""
    return _hash_counted(fd)[0]


def _hash_counted(fd: int) -> tuple[Version, int]:
    """The version of the content of open file *fd*, and its bytes counted."""
    hasher, offset = ContentHasher(), 0
    while chunk := os.pread(fd, DEFAULT_CHUNK_SIZE, offset):
        hasher.update(chunk)
        offset += len(chunk)
    return hasher.version(), offset


def read_at(fd: int, position: int, chunk_size: int, size: int) -> bytes | int:
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
def zeros(size: int) -> bytes:
    """*size* zero bytes: what a hole reads as (one object, shared)."""
    return bytes(size)
