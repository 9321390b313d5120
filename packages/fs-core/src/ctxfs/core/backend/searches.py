"""The searches a backend may run with an engine of its own, and their answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

__all__ = ["IGNORE_FILES", "CutLine", "FileLines", "FileMatches", "FileSearch", "LineSearch"]

IGNORE_FILES: Final = (".git/info/exclude", ".gitignore", ".ignore", ".rgignore")
"""The ignore files a search honours (ripgrep's, with ``--no-require-git``), weakest first:
the repository's exclude file, then each directory's own."""


@dataclass(frozen=True, kw_only=True)
class FileSearch:
    """A search a backend may run with an engine of its own (:meth:`Backend.search_files`)."""

    path: str
    """The directory searched (canonical; resolved, on a store with links)."""
    pattern: str | None
    """A regular expression (Python syntax); None lists the files only."""
    ignore_case: bool = False
    multiline: bool = False
    """A match may span lines (``.`` matches a line break too)."""
    hidden: bool = False
    """Include names starting with ``.``."""
    ignored: bool = False
    """Include what the :data:`IGNORE_FILES` exclude."""
    skip_dirs: frozenset[str] = frozenset()
    """Directory names never entered."""
    names: tuple[str, ...] | None = None
    """Only files whose name matches one of these globs (:meth:`GlobMatcher.names`); None:
    any. A first filter: the caller matches the paths it gets again."""
    glob: str | None = None
    """Only files whose path below :attr:`path` matches this glob (:func:`glob_matcher`);
    None: any. A first filter too: an engine may keep more (:meth:`GlobMatcher.outline`),
    never fewer."""
    seconds: float | None = None
    """Stop after this long; the answer then covers what was searched (``complete`` False)."""
    legacy_text: bool = False
    """The caller names encodings it reads text in (``encoding_overrides``, its own
    ``legacy_encodings``): an engine that reads bytes as UTF-8 leaves the files that are not
    to it (:attr:`FileMatches.unsearched`)."""
    found_so_far: Callable[[int], None] | None = field(default=None, compare=False)
    """Told, from any thread, how many files the engine has found so far (the progress
    of a long search)."""


@dataclass(frozen=True, kw_only=True)
class LineSearch:
    """Matching lines of named files, by a backend's own engine (:meth:`Backend.search_lines`)."""

    paths: tuple[str, ...]
    """The files (canonical; resolved, on a store with links)."""
    pattern: str
    """A regular expression (Python syntax), matched line by line."""
    ignore_case: bool = False
    max_count: int | None = None
    """Each file's first this many matching lines at most; None: all."""
    before: int = 0
    after: int = 0
    """Context lines around each matching line."""
    max_line_chars: int = 1 << 20
    """A longer matching or context line comes as a :class:`CutLine` (or, where the
    engine cannot cut it, its file is left out of the answer)."""
    cut_chars: int = 1 << 12
    """The least a :class:`CutLine` holds on either side of its first match."""
    seconds: float | None = None


class CutLine(str):
    """A line too long to give whole: the part of it around its first match.

    At most a few times :attr:`LineSearch.cut_chars` on either side of the match;
    positions are in characters, within the line.
    """

    start: int
    """Where the part given begins in the line."""
    length: int
    """The whole line's length."""
    column: int | None
    """Where the line's first match begins; None for a context line (given from its start)."""

    def __new__(cls, text: str, *, start: int, length: int, column: int | None) -> CutLine:
        """The part *text* of a line of *length* characters, beginning at *start*."""
        cut = super().__new__(cls, text)
        cut.start, cut.length, cut.column = start, length, column
        return cut


@dataclass(frozen=True, kw_only=True)
class FileLines:
    """What :meth:`Backend.search_lines` found: each file's matching and context lines."""

    lines: dict[str, list[tuple[int, str]]]
    """For each file answered, ``(number, text)`` of its matching lines and their context
    lines, in order, without line breaks; a line over the cap comes as a :class:`CutLine`.
    A file left out (binary, not UTF-8 text) is to be searched by reading it."""
    complete: bool = True
    """False when the search stopped at its time limit (no file is then answered)."""


@dataclass(frozen=True, kw_only=True)
class FileMatches:
    """What :meth:`Backend.search_files` found."""

    counts: dict[str, int]
    """Each file holding a match (its canonical path) and its matching lines; listing only:
    every file, with 0."""
    searched: int | None
    """Files searched; None where that number would tell of files a policy hides."""
    complete: bool = True
    """False when the search stopped at its time limit."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Files the engine found but left out, by reason (``hard_linked``, ...)."""
    unsearched: frozenset[str] = frozenset()
    """Files the engine found but does not read as the caller does (text that is not UTF-8):
    not in :attr:`counts`, they are for the caller to search."""
