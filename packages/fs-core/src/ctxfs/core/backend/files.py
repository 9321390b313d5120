"""What a backend answers about files: :class:`Stat`, :class:`Blob`, listings, locations."""

from __future__ import annotations

import builtins
import enum
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, TypeVar

import anyio.to_thread

from ctxfs.core.paths import is_reserved
from ctxfs.core.versions import Version

__all__ = [
    "LISTING_WORK_INLINE_ENTRIES",
    "NO_PERMISSIONS",
    "Blob",
    "FileKind",
    "Listing",
    "ListingPage",
    "Location",
    "Permissions",
    "Stat",
    "listing_work",
]

log = logging.getLogger("ctxfs.core")

T = TypeVar("T")

LISTING_WORK_INLINE_ENTRIES: Final = 2_000
"""Entries whose listing work (sorting, matching) runs on the event loop; more, in a thread."""


class FileKind(enum.StrEnum):
    """What a path names."""

    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"


@dataclass(frozen=True, kw_only=True, slots=True)
class Stat:
    """Metadata of one path, as returned by :meth:`Backend.stat` and listings."""

    path: str
    """Root-relative path."""
    kind: FileKind
    size: int | None = None
    """Size in bytes for files; None where unknown or meaningless."""
    mtime: float | None = None
    """Modification time in seconds since the epoch, where the store keeps one."""
    version: Version | None = None
    """The current version where it is known without reading the content."""

    @property
    def name(self) -> str:
        """The last path segment (``""`` for the root)."""
        return self.path.rpartition("/")[2]


@dataclass(frozen=True, kw_only=True, slots=True)
class Permissions:
    """A file's permission bits and owner, where the store keeps them (None: not known, or kept)."""

    mode: int | None = None
    """The permission bits (``0o7777`` at most)."""
    owner: tuple[int, int] | None = None
    """The owner's and the group's ids."""


NO_PERMISSIONS: Final = Permissions()
"""Permissions that give nothing: a file written keeps its own (a new one: the store's default)."""


@dataclass(frozen=True, kw_only=True)
class Blob:
    """Bytes read from a file, with the version of the whole file they came from."""

    data: bytes
    """The requested bytes (the whole file, or the range)."""
    version: Version
    """The version of the whole file at the moment of the read."""
    size: int
    """The size of the whole file, which may exceed ``len(data)`` for a range."""

    @property
    def whole(self) -> bool:
        """Whether :attr:`data` is the whole file (not a range of it, nor cut short)."""
        return len(self.data) == self.size


class Listing(builtins.list[Stat]):
    """A directory's entries, as :meth:`Backend.list` returns them: a list of :class:`Stat`.

    :attr:`unnamed` holds what the store reported that no path can name (an object
    key with an empty, ``.`` or ``..`` segment): left out of the list, not out of sight.
    """

    def __init__(self, entries: Iterable[Stat] = (), *, unnamed: tuple[str, ...] = ()) -> None:
        super().__init__(entries)
        self.unnamed = unnamed

    @classmethod
    def of(cls, directory: str, entries: Iterable[Stat]) -> Listing:
        """The listing of *directory* from a store's *entries*, by :meth:`Backend.list`'s rules."""
        kept, unnamed = [], []
        for entry in entries:
            if not _names_an_entry_of(directory, entry):
                unnamed.append(entry.path)
            elif not is_reserved(entry.name):
                kept.append(entry)
        return cls._kept(directory, sorted(kept, key=lambda entry: entry.name), unnamed)

    @classmethod
    def tree(cls, directory: str, entries: Iterable[Stat]) -> Listing:
        """As :meth:`of`, for the files at any depth below *directory*, sorted by path."""
        kept, unnamed = [], []
        for entry in entries:
            inside = entry.path.removeprefix(f"{directory}/") if directory else entry.path
            segments = inside.split("/")
            if (directory and inside == entry.path) or any(s in ("", ".", "..") for s in segments):
                unnamed.append(entry.path)
            elif not any(is_reserved(segment) for segment in segments):
                kept.append(entry)
        return cls._kept(directory, sorted(kept, key=lambda entry: entry.path), unnamed)

    @classmethod
    def _kept(
        cls, directory: str, kept: builtins.list[Stat], unnamed: builtins.list[str]
    ) -> Listing:
        if unnamed:
            log.warning(
                "%r: skipped %d entries no path can name: %r", directory, len(unnamed), unnamed
            )
        return cls(kept, unnamed=tuple(unnamed))


async def listing_work(entries: int, work: Callable[[], T]) -> T:
    """Run *work* over a listing of *entries*: inline, or in a worker thread if they are many.

    (Sorting or matching 100,000 entries takes a few hundred milliseconds: the event loop's
    other calls go on meanwhile.)
    """
    if entries <= LISTING_WORK_INLINE_ENTRIES:
        return work()
    return await anyio.to_thread.run_sync(work)


@dataclass(frozen=True, kw_only=True)
class ListingPage:
    """A page of a directory's entries (see ``ctx.fs.list_page``), with the whole's size."""

    entries: builtins.list[Stat]
    """The entries of the page, with their details."""
    total: int
    """Entries in the whole directory (those a policy hides not counted)."""
    unnamed: tuple[str, ...] = ()
    """As :attr:`Listing.unnamed`, for the whole directory."""


@dataclass(frozen=True, kw_only=True)
class Location:
    """What a path names, as :meth:`Backend.locate` finds it."""

    resolved: str
    """The canonical root-relative path it reaches, symbolic links followed."""
    key: str
    """The file's identity: every spelling of one file (a link, a nested root) has the same key,
    and locks, observations and compare-and-swap are keyed by it."""


def _names_an_entry_of(directory: str, entry: Stat) -> bool:
    """Whether *entry* is a child of *directory* whose name is a segment (not empty, . or ..).

    Names refused for other reasons (a control character) are kept: tools show them escaped.
    """
    name = entry.name
    return name not in ("", ".", "..") and entry.path == (
        f"{directory}/{name}" if directory else name
    )
