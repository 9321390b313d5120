"""Translating ``OSError`` into ctxfs errors, at the one place the backend meets the kernel."""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ctxfs.core import (
    AlreadyExists,
    BackendError,
    FsError,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotARegularFile,
    NotFound,
    OutsideRoot,
    PermissionDenied,
    TooLarge,
    Unavailable,
)

__all__ = ["translate", "translated"]


def translate(error: OSError, path: str) -> FsError:
    """Return the ctxfs error for *error*, met while working on *path*."""
    reason = error.strerror or str(error)
    found = _BY_ERRNO.get(error.errno or 0)
    if found is None:
        return BackendError(f"{path}: {reason} (errno {error.errno})", path=path)
    cls, message, options = found
    return cls(message.format(path=path or "the root", reason=reason), path=path, **options)


_ROFS_HINT = "The workspace is on a read-only file system; nothing can be written."
_FULL_HINT = "The disk (or quota) is full; nothing was changed. Free space before retrying."
_BY_ERRNO: dict[int, tuple[type[FsError], str, dict[str, Any]]] = {
    errno.ENOENT: (NotFound, "{path} does not exist", {}),
    errno.EEXIST: (AlreadyExists, "{path} already exists", {}),
    errno.EISDIR: (IsADirectory, "{path} is a directory", {}),
    errno.ENOTDIR: (NotADirectory, "a component of {path} is not a directory", {}),
    errno.EXDEV: (OutsideRoot, "{path} resolves outside the workspace root", {}),
    errno.ENXIO: (NotARegularFile, "{path} is not a regular file", {}),
    errno.ENODEV: (NotARegularFile, "{path} is not a regular file", {}),
    errno.EACCES: (PermissionDenied, "{path}: {reason}", {}),
    errno.EPERM: (PermissionDenied, "{path}: {reason}", {}),
    errno.EROFS: (PermissionDenied, "{path}: the file system is read-only", {"hint": _ROFS_HINT}),
    errno.EFBIG: (TooLarge, "{path}: the file would exceed the file size limit", {}),
    errno.ENOSPC: (Unavailable, "{path}: no space left on the device",
                   {"retryable": False, "hint": _FULL_HINT}),
    errno.EDQUOT: (Unavailable, "{path}: the disk quota is exhausted",
                   {"retryable": False, "hint": _FULL_HINT}),
    errno.ENAMETOOLONG: (InvalidPath, "{path}: {reason}",
                         {"hint": "Use a shorter path: the file system refuses one this long."}),
    errno.EILSEQ: (InvalidPath, "{path}: {reason}", {}),
    errno.ELOOP: (InvalidPath, "{path}: symbolic links loop or nest too deeply",
                  {"hint": "Use a path that reaches the file without these links."}),
    errno.EAGAIN: (Unavailable, "{path}: {reason}", {}),
    errno.EBUSY: (Unavailable, "{path}: {reason}", {}),
    errno.EINTR: (Unavailable, "{path}: {reason}", {}),
}  # fmt: skip


@contextmanager
def translated(
    path: str, *, on_missing: Callable[[], FsError | None] | None = None
) -> Iterator[None]:
    """Raise the ctxfs error for any ``OSError`` in the block.

    *on_missing* may supply a better error for ``ENOENT`` (a deleted root, say).
    """
    try:
        yield
    except FsError:
        raise  # already ours: FsError subclasses are OSErrors too
    except OSError as error:
        if error.errno == errno.ENOENT and on_missing is not None:
            better = on_missing()
            if better is not None:
                raise better from error
        raise translate(error, path) from error
