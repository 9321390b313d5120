"""What ``ctx.fs`` operations return (frozen values), and the operation record hooks receive."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from ctxfs.core.backend.files import FileKind
from ctxfs.core.versions import Version

__all__ = [
    "BytesOutcome",
    "ChangedFile",
    "EditOutcome",
    "InsertOutcome",
    "MoveOutcome",
    "OpKind",
    "Operation",
    "PatchOutcome",
    "PatchedFile",
    "ReadOutcome",
    "RestoredFile",
    "UndoOutcome",
    "WriteOutcome",
]


class OpKind(enum.StrEnum):
    """The kinds of ``ctx.fs`` operation."""

    READ = "read"
    STAT = "stat"
    LIST = "list"
    WRITE = "write"
    EDIT = "edit"
    INSERT = "insert"
    MKDIR = "mkdir"
    DELETE = "delete"
    MOVE = "move"
    """Asked twice for one move: for the source (:attr:`Operation.moved_to` set) and for
    the destination (:attr:`Operation.moved_from` set); both must be allowed."""

    @property
    def mutates(self) -> bool:
        """Whether the operation changes the store."""
        return self in _MUTATING


_MUTATING = frozenset(
    {OpKind.WRITE, OpKind.EDIT, OpKind.INSERT, OpKind.MKDIR, OpKind.DELETE, OpKind.MOVE}
)


_UNLOCATED: Final = "\0"
"""Where an operation's location is not given (no path holds NUL; ``""`` is the root)."""


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One requested operation, as policies see it before anything is touched."""

    kind: OpKind
    path: str
    """Canonical root-relative path, as the caller spelled it."""
    size: int | None = None
    """For a write, the size in bytes of the new content."""
    resolved: str = _UNLOCATED
    """The canonical root-relative path it reaches, symbolic links followed (a policy must
    judge both: ``envlink`` may reach ``.env``; a link to the root reaches ``""``); the path
    itself where none is given."""
    key: str = _UNLOCATED
    """The identity of the file: every spelling of one file has the same key (locks and
    observations are keyed by it); what it resolves to where none is given."""
    moved_to: str | None = None
    """For a move's source: the destination (canonical, as spelled)."""
    moved_from: str | None = None
    """For a move's destination: the source (canonical, as spelled)."""
    dry_run: bool = False
    """Nothing is to be written: the operation only says what it would change."""

    def __post_init__(self) -> None:
        if self.resolved == _UNLOCATED:
            object.__setattr__(self, "resolved", self.path)
        if self.key == _UNLOCATED:
            object.__setattr__(self, "key", self.resolved)


@dataclass(frozen=True, kw_only=True)
class ReadOutcome:
    """A window of a text file."""

    path: str
    text: str
    """The returned lines, joined, without line numbers."""
    version: Version
    """The version of the whole file the window was read from."""
    offset: int
    """1-based number of the first returned line."""
    returned_lines: int
    total_lines: int
    """Lines in the whole file."""
    next_offset: int | None
    """The ``offset`` that continues this read, or None when the window reached the end."""
    partial: bool
    """Whether the window leaves out any part of the file (lines, or the end of a cut line)."""
    truncated_lines: tuple[int, ...] = ()
    """Numbers of the lines cut by the per-line cap (each marked at the cut)."""
    output_capped: bool = False
    """Whether the output budget ended the window before the line limit."""
    encoding: str = "utf-8"
    """The encoding the file was decoded with, e.g. ``"utf-8 with BOM"`` or ``"cp1252"``."""


@dataclass(frozen=True, kw_only=True)
class BytesOutcome:
    """Bytes of a file, text or not: the whole file, or a range of it."""

    path: str
    data: bytes
    version: Version
    """The version of the whole file the bytes were read from."""
    offset: int
    """Where the bytes start in the file."""
    size: int
    """The size of the whole file."""
    complete: bool
    """Whether the bytes are the whole file (then the read counts as reading all of it)."""


@dataclass(frozen=True, kw_only=True)
class WriteOutcome:
    """A whole-file write."""

    path: str
    version: Version
    """The version now in the store."""
    previous_version: Version | None
    """The version replaced, or None when the file was created."""
    created: bool
    size: int
    """Bytes written."""
    first_line: int = 1
    """1-based first line that differs from the previous content (1 for a new file)."""
    last_line: int = 1
    """1-based last line of the differing region, in the new content."""
    diff: str | None = None
    """A unified diff of the change when it is small; None for a new file or a large change."""
    total_lines: int | None = None
    """Lines the new text holds; None for bytes written as they are."""


@dataclass(frozen=True, kw_only=True)
class EditOutcome:
    """A string replacement inside a text file."""

    path: str
    version: Version
    """The version now in the store."""
    previous_version: Version
    replacements: int
    """How many occurrences were replaced."""
    first_line: int
    """1-based first line of the changed range, in the new text."""
    last_line: int
    """1-based last line of the changed range, in the new text."""
    stripped_line_numbers: bool = False
    """Whether line numbers pasted from read output were removed from old_string first."""
    diff: str | None = None
    """A unified diff of the change when it is small, else None."""
    written: bool = True
    """False for a dry run: nothing was written, and *version* is still *previous_version*."""
    edits: int = 1
    """How many replacements were asked (``multi_edit``), each applied to the text the one
    before left."""


@dataclass(frozen=True, kw_only=True)
class InsertOutcome:
    """Lines inserted into a text file."""

    path: str
    version: Version
    """The version now in the store."""
    previous_version: Version
    first_line: int
    """1-based number of the first inserted line."""
    last_line: int
    """1-based number of the last inserted line."""
    diff: str | None = None
    """A unified diff of the insertion when it is small, else None."""


@dataclass(frozen=True, kw_only=True)
class MoveOutcome:
    """A file, or a directory with everything in it, moved (renamed) to another path."""

    path: str
    """Where the file (or directory) was."""
    destination: str
    """Where it is now."""
    version: Version | None
    """The file's version at the destination (the same content; a store may give a new
    token); None for a directory."""
    replaced: Version | None = None
    """The version of the file the move replaced at the destination (``overwrite``)."""
    directory: bool = False
    """Whether a whole directory moved."""
    moved: int = 1
    """Entries moved: 1 for a file; for a directory, everything below it (files,
    directories and symbolic links), the directory itself not counted."""


@dataclass(frozen=True, kw_only=True)
class PatchedFile:
    """What a patch did (or, in a dry run, would do) to one file."""

    path: str
    """The file's path before the patch (for an added file, its path)."""
    action: str
    """``add``, ``update`` or ``delete`` (a :class:`~ctxfs.core.PatchAction`)."""
    version: Version | None
    """Its version now (after a move, at *moved_to*); None once deleted, or in a dry run."""
    previous_version: Version | None
    """Its version before, or None for a file the patch created."""
    moved_to: str | None = None
    """Where an updated file went."""
    first_line: int = 1
    """1-based first changed line, in the new text."""
    last_line: int = 1
    """1-based last changed line, in the new text."""
    diff: str | None = None
    """A unified diff of the file's change when it is small, else None."""


@dataclass(frozen=True, kw_only=True)
class PatchOutcome:
    """A patch over several files, applied whole (or, in a dry run, checked whole)."""

    files: tuple[PatchedFile, ...]
    """In the patch's order."""
    written: bool = True
    """False for a dry run: every check passed, and nothing was written."""


@dataclass(frozen=True, kw_only=True)
class ChangedFile:
    """A file an owner saw whose current version is another (:meth:`ContextFs.changed`)."""

    path: str
    seen: Version
    """The version the owner last saw (or wrote)."""
    current: Version | None
    """The version there now; None: the file is gone."""
    current_kind: FileKind | None = None
    """What the path names now where that is no file: a directory, a special file, or a link
    (the path's or a parent's) out of the root or that loops; None: a file, or nothing."""
    diff: str | None = None
    """What changed since :attr:`seen`, when its content is kept: a unified diff, or a
    summary when too much changed (:attr:`diff_whole` false)."""
    diff_whole: bool = False
    changed_by: str | None = None
    """The owner who stored :attr:`current`, when known (a change made through this process)."""
    changed_at: float | None = None
    """When :attr:`current` was stored (seconds since the epoch), when known."""


@dataclass(frozen=True, kw_only=True)
class RestoredFile:
    """One file an undo or a rewind put back."""

    path: str
    was: Version | None
    """The version it held before the undo (None: it did not exist)."""
    now: Version | None
    """The version it holds after (None: removed). In a dry run, what it would hold."""
    moved_back_from: str | None = None
    """For a directory moved back (its files with it), where it was; *was* and *now* are None."""


@dataclass(frozen=True, kw_only=True)
class UndoOutcome:
    """An undo or rewind: the owner's files put back as they were, all or nothing."""

    steps: tuple[int, ...]
    """The steps undone, newest first."""
    files: tuple[RestoredFile, ...]
    directories: tuple[str, ...] = ()
    """The directories the steps had made, removed, deepest first (a dry run: to remove)."""
    kept_directories: tuple[str, ...] = ()
    """The directories the steps had made that are kept: something else is in them."""
    written: bool = True
    """False for a dry run: every check passed, and nothing was written."""
