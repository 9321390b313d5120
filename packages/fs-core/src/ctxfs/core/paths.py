"""The string layer of path handling: checks that run before any store is touched.

:func:`normalize_path` turns a caller's root-relative ``/``-separated path into
the canonical form every backend receives, or refuses it; :func:`check_path`
lets a backend verify that it was handed one. Neither trims whitespace, decodes
``%``-escapes, expands ``~`` or folds ``..`` (refused outright: a string cannot
know what ``link/..`` means on disk, so containment is the backend's).
"""

from __future__ import annotations

import functools
import re
from typing import Final

from ctxfs.core.errors import InvalidPath, OutsideRoot

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "RESERVED_PREFIX",
    "check_file_spelling",
    "check_path",
    "is_reserved",
    "join_path",
    "normalize_path",
]

RESERVED_PREFIX: Final = ".ctxfs-"
"""Names starting with this are the backends' own (temporary files, lock files, probes),
never a caller's: refused in every path, hidden from every listing, on every backend."""
MAX_PATH_BYTES: Final = 4095
"""Longest accepted path, in UTF-8 bytes (Linux ``PATH_MAX``, less its terminating NUL)."""
MAX_NAME_BYTES: Final = 255
"""Longest accepted path segment, in UTF-8 bytes (``NAME_MAX``)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")


def normalize_path(path: str, *, file: bool = False) -> str:
    """Return the canonical root-relative form of *path*, or refuse it.

    ``""``, ``"."`` and ``"./"`` name the root. ``.`` segments and repeated
    slashes are dropped (``"./src//a.py"`` is ``"src/a.py"``); a trailing slash is
    accepted for directories. Bytes that are not UTF-8, carried as lone
    surrogates (``os.fsdecode``), stay so; escaped bytes that do spell UTF-8
    become the characters they spell, so a file has one spelling. With *file*
    set, the path must name a file: the root and a trailing slash are refused.

    Raises:
        OutsideRoot: The path is absolute or has a ``..`` segment.
        InvalidPath: The path is not a string, holds a NUL, another control
            character or a backslash, looks like a URL or a drive, is not valid
            Unicode, is too long, or has a segment starting with
            :data:`RESERVED_PREFIX`.

    """
    if not isinstance(path, str):
        raise InvalidPath(f"a path must be a string, got {type(path).__name__}")
    return _normalize(path, file)


@functools.lru_cache(maxsize=4096)  # agents touch the same few paths over and over
def _normalize(path: str, file: bool) -> str:
    _check_characters(path)
    if not path.isascii():  # bytes carried as escapes that spell characters are those characters
        path = path.encode(errors="surrogateescape").decode(errors="surrogateescape")
    if path.startswith("/"):
        raise OutsideRoot(
            f"absolute path {path!r} refused: paths are relative to the workspace root",
            path=path,
        )
    segments = [segment for segment in path.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise OutsideRoot(f"path {path!r} has a '..' segment, which is never allowed", path=path)
    for segment in segments:
        if len(segment.encode(errors="surrogateescape")) > MAX_NAME_BYTES:
            raise InvalidPath(
                f"a segment of {path!r} is longer than {MAX_NAME_BYTES} bytes",
                path=path,
                hint=f"Use names of at most {MAX_NAME_BYTES} bytes (UTF-8) between the slashes.",
            )
        if is_reserved(segment):
            raise InvalidPath(
                f"{path!r}: names starting with {RESERVED_PREFIX} are reserved for ctxfs",
                path=path,
                hint=f"Choose a name that does not start with {RESERVED_PREFIX}.",
            )
    canonical = "/".join(segments)
    if file:
        check_file_spelling(path, canonical)
    return canonical


def check_file_spelling(path: str, canonical: str) -> None:
    """Refuse *path*, spelling *canonical*, where a file is meant: the root, a trailing slash.

    Raises:
        InvalidPath: *path* does not name a file.

    """
    if not canonical or path.endswith("/"):
        if not path.isascii():
            path = path.encode(errors="surrogateescape").decode(errors="surrogateescape")
        raise InvalidPath(f"{path!r} does not name a file", path=path)


def check_path(path: str) -> str:
    """Verify that *path* is already canonical and return it unchanged.

    Backends call this on every path they receive: a path that
    :func:`normalize_path` would change is refused, never repaired.

    Raises:
        OutsideRoot: As for :func:`normalize_path`.
        InvalidPath: As for :func:`normalize_path`, or the path is not canonical
            (an empty or ``.`` segment, a trailing slash).

    """
    if normalize_path(path) != path:
        raise InvalidPath(f"path {path!r} is not in canonical form", path=path)
    return path


def is_reserved(name: str) -> bool:
    """Whether *name* (one path segment) is reserved for the backends (:data:`RESERVED_PREFIX`)."""
    return name.startswith(RESERVED_PREFIX)


def join_path(parent: str, name: str) -> str:
    """Join a canonical directory path and one entry name."""
    return f"{parent}/{name}" if parent else name


def _check_characters(path: str) -> None:
    try:
        size = len(path.encode(errors="surrogateescape"))  # names that are not UTF-8 round-trip
    except UnicodeEncodeError:
        raise InvalidPath("the path is not valid Unicode (lone surrogate)", path=path) from None
    if size > MAX_PATH_BYTES:
        raise InvalidPath(
            f"the path is longer than {MAX_PATH_BYTES} bytes",
            path=path[:200],
            hint=f"Use a path of at most {MAX_PATH_BYTES} bytes (UTF-8).",
        )
    if _CONTROL.search(path):
        raise InvalidPath(
            f"the path {path!r} holds a NUL or another control character",
            path=path,
            hint="Give the path without control characters (a name holding one cannot be used).",
        )
    if "\\" in path:
        raise InvalidPath(f"the path {path!r} holds a backslash; use '/' separators", path=path)
    if "://" in path or _DRIVE.match(path):
        raise InvalidPath(
            f"{path!r} looks like a URL or a drive; give a path relative to the root", path=path
        )
