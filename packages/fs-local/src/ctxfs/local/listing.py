"""Directory listings, and names without a ``stat`` per entry, remembered while unchanged.

A page of a large directory needs every name but the details of its own entries only:
:class:`DirectoryNames` keeps the sorted names and kinds (``d_type``) of a directory whose identity
and times are unchanged. As Git does with its index, a directory modified in the last
:data:`SETTLE_SECONDS` (its times may not show a change in the same clock tick) is not remembered,
nor one whose listing left out a reserved name.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ctxfs.core import FileKind, Listing, NotADirectory, NotFound, Stat, join_path
from ctxfs.local.oserrors import translated
from ctxfs.local.root import DIR_FLAGS, TEMP_PREFIX, RootDirectory, stat_of

__all__ = [
    "ORPHAN_SECONDS",
    "SETTLE_SECONDS",
    "DirectoryNames",
    "details",
    "kind_of",
    "list_entries",
    "list_names",
]

SETTLE_SECONDS: Final = 2
"""A directory modified more recently than this is listed again each time."""
ORPHAN_SECONDS: Final = 600.0
"""How long a temporary file whose writer's process id names no process here is kept.

That id may be of another PID namespace (a container sharing the volume), or of another host
(a network file system), where the writer lives on: its file is written to within this time."""
_TEMP_NAME: Final = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)\.[0-9a-f]{16}")
"""The name of a temporary file a writer made: its process id, 8 random bytes in hex."""


def kind_of(entry: os.DirEntry[str]) -> FileKind:
    """An entry's kind from the directory entry (``stat`` only where the file system omits it)."""
    if entry.is_symlink():
        return FileKind.SYMLINK
    if entry.is_dir(follow_symlinks=False):
        return FileKind.DIRECTORY
    if entry.is_file(follow_symlinks=False):
        return FileKind.FILE
    return FileKind.OTHER


@dataclass(frozen=True, kw_only=True)
class _Listed:
    stamp: tuple[int, int, int, int]
    entries: Listing


class DirectoryNames:
    """The names (and kinds) of recently listed directories, at most *max_entries* in all."""

    def __init__(self, *, max_entries: int = 1_000_000) -> None:
        self.max_entries = max_entries
        self._listed: OrderedDict[str, _Listed] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def entries(
        self, dir_fd: int, path: str, *, finish: Callable[[str, list[Stat]], Listing]
    ) -> Listing:
        """The listing of directory *path* (open as *dir_fd*), made by *finish* from its entries.

        A listing that leaves some out (reserved names) is not kept. Blocks.
        """
        info = os.fstat(dir_fd)
        stamp = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        with self._lock:
            listed = self._listed.get(path)
            if listed is not None and listed.stamp == stamp:
                self._listed.move_to_end(path)
                return listed.entries
        with os.scandir(dir_fd) as scan:
            found = [Stat(path=join_path(path, entry.name), kind=kind_of(entry)) for entry in scan]
        entries = finish(path, found)
        settled = time.time_ns() - info.st_mtime_ns > SETTLE_SECONDS * 10**9
        if settled and len(entries) == len(found):  # and no reserved name left out
            self._remember(path, _Listed(stamp=stamp, entries=entries))
        return entries

    def _remember(self, path: str, listed: _Listed) -> None:
        if len(listed.entries) > self.max_entries:
            return
        with self._lock:
            if (earlier := self._listed.pop(path, None)) is not None:
                self._held -= len(earlier.entries)
            self._listed[path] = listed
            self._held += len(listed.entries)
            while self._held > self.max_entries:
                _, oldest = self._listed.popitem(last=False)
                self._held -= len(oldest.entries)


def list_entries(root: RootDirectory, path: str, temp_max_age: float) -> list[Stat]:
    """The entries of directory *path*, with details; temporary files are reaped."""
    root.check()  # a deleted root still lists as empty through its descriptor
    dir_fd = _listed(root, path)
    entries: list[Stat] = []
    try:
        with translated(path), os.scandir(dir_fd) as scan:
            for entry in scan:
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed while listing
                if entry.name.startswith(TEMP_PREFIX):
                    _reap(dir_fd, entry.name, temp_max_age, info)
                    continue
                entries.append(stat_of(join_path(path, entry.name), info))
    finally:
        os.close(dir_fd)
    return entries


def list_names(
    root: RootDirectory, names: DirectoryNames, path: str, temp_max_age: float
) -> Listing:
    """Directory *path*'s listing, kinds only, kept in *names*; temporary files are reaped."""
    root.check()
    dir_fd = _listed(root, path)

    def finish(path: str, entries: list[Stat]) -> Listing:
        for entry in entries:
            if entry.name.startswith(TEMP_PREFIX):
                _reap(dir_fd, entry.name, temp_max_age)
        return Listing.of(path, entries)

    try:
        with translated(path):
            return names.entries(dir_fd, path, finish=finish)
    finally:
        os.close(dir_fd)


def _listed(root: RootDirectory, path: str) -> int:
    """Directory *path*, open to list; a file there is said to be one."""
    try:
        return root.open(path, DIR_FLAGS)
    except NotADirectory:
        if root.stat(path).kind is FileKind.DIRECTORY:  # (else: a parent is no directory)
            raise
        raise NotADirectory(
            f"{path} is a file, not a directory",
            path=path,
            hint="Read the file, or list the directory that holds it.",
        ) from None


def details(root: RootDirectory, entries: list[Stat]) -> list[Stat]:
    """*entries* with their size and time (``lstat``); those gone since are left out.

    Raises:
        PermissionDenied: A directory may be read but not searched (no ``x``): its entries'
            details cannot be had, as :func:`list_entries` says.

    """
    directories: dict[str, int] = {}
    detailed = []
    try:
        for entry in entries:
            parent, _, name = entry.path.rpartition("/")
            try:
                if parent not in directories:
                    directories[parent] = root.open(parent, DIR_FLAGS)
                with translated(parent):
                    info = os.stat(name, dir_fd=directories[parent], follow_symlinks=False)
            except NotFound:
                continue  # removed since the listing
            detailed.append(stat_of(entry.path, info))
    finally:
        for fd in directories.values():
            os.close(fd)
    return detailed


def _reap(dir_fd: int, name: str, max_age: float, info: os.stat_result | None = None) -> None:
    """Remove temporary file *name* (*info*: its ``lstat``) once older than *max_age*.

    One whose writer is gone (its process id names no process here) goes once older than
    :data:`ORPHAN_SECONDS`, if that is sooner.
    """
    if info is None:
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return
    ours = _TEMP_NAME.fullmatch(name)
    if ours is None:
        return  # (not a temporary file ctxfs made: someone else's)
    age = time.time() - info.st_mtime
    if age > max_age or (age > ORPHAN_SECONDS and not _alive(int(ours[1]))):
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
