"""What a search is asked and what it finds: the values :mod:`.search` deals in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from ctxfs.core import GlobMatcher
from ctxfs.tools.builtin.grep.memo import ScanMemo
from ctxfs.tools.builtin.grep.patterns import LinePattern
from ctxfs.tools.results import Page
from ctxfs.tools.walk import Walk, WalkFilter

__all__ = [
    "PROGRESS_GAP",
    "FileCount",
    "Grep",
    "GrepQuery",
    "Hit",
    "Line",
    "OutputMode",
    "SearchProgress",
    "SearchStatus",
]


@dataclass(frozen=True, kw_only=True)
class SearchStatus:
    """How far a long search is: what is known of it so far."""

    searched: int | None = None
    """Files searched (ctxfs's own engine)."""
    files: int | None = None
    """Files to search in all, where known."""
    matching_files: int | None = None
    """Files found to hold a match (a backend's engine, which tells no more as it goes)."""
    matching_lines: int | None = None


SearchProgress = Callable[[SearchStatus], Awaitable[None]]
"""Where a long search reports how far it is."""

PROGRESS_GAP: Final = 0.1
"""The fewest seconds between two reports of a search's progress."""


class OutputMode(StrEnum):
    """What a search returns."""

    CONTENT = "content"
    """The matching lines (with context lines, when asked)."""
    FILES = "files_with_matches"
    """The paths of the files that hold a match."""
    COUNT = "count"
    """Each file that holds a match, with its number of matching lines."""


@dataclass(frozen=True, kw_only=True)
class Line:
    """A context line: its number and text (cut like a hit's)."""

    number: int
    text: str


@dataclass(kw_only=True)
class Hit:
    """One line that matched (or, multiline, the lines one match spans), around its match."""

    path: str
    line: int
    text: str
    """The line (lines), or the part of it around the match when longer than the cap."""
    column: int
    """Where the match starts in the line (0-based, in characters)."""
    text_start: int
    """Where *text* starts in the line (0 unless the line was cut)."""
    line_chars: int
    end_line: int | None = None
    """The last line a multiline match spans, when past *line*."""
    before: list[Line] = field(default_factory=list)
    after: list[Line] = field(default_factory=list)

    @property
    def cut(self) -> bool:
        """Whether *text* is a part of the line."""
        return len(self.text) < self.line_chars


@dataclass(kw_only=True)
class FileCount:
    """A file holding matches, and how many lines (multiline: matches) match."""

    path: str
    count: int = 0


@dataclass(frozen=True, kw_only=True)
class GrepQuery:
    """One search: what to look for, where, and what to return."""

    pattern: LinePattern
    root: str = ""
    mode: OutputMode = OutputMode.CONTENT
    before: int = 0
    after: int = 0
    multiline: bool = False
    file_filter: Callable[[str], bool] | None = None
    """Which files (by path below *root*) to search; None: all."""
    filter_widened: bool = False
    """Whether an engine filtering by :attr:`names` and :attr:`glob` keeps more files than
    *file_filter* (it counts them as searched)."""
    names: tuple[str, ...] | None = None
    """Globs every searched file's name matches (see :meth:`GlobMatcher.names`), for an
    engine to filter with first; None: any name."""
    glob: GlobMatcher | None = None
    """A glob every searched file's path below *root* matches, for an engine to filter
    with first and a walk to enter only the directories that may hold one; None: any."""
    only: WalkFilter
    max_entries: int
    page: Page
    max_line_chars: int
    seconds: float
    memo: ScanMemo | None = None
    """What earlier pages of this search learned; it learns what this one reads."""
    progress: SearchProgress | None = None
    """Told how far the search is, after *progress_seconds* and as often after that (every
    :data:`PROGRESS_GAP` at most: 0 tells at once, not at every step)."""
    progress_seconds: float = 1.0

    @property
    def progress_gap(self) -> float:
        """The seconds between two progress reports."""
        return max(self.progress_seconds, PROGRESS_GAP)


@dataclass
class Grep:
    """What a search found: the requested page, and totals over everything searched."""

    hits: list[Hit] = field(default_factory=list)
    """The page of hits (content mode)."""
    files: list[FileCount] = field(default_factory=list)
    """The page of files (the other modes)."""
    total: int = 0
    """Items of the mode: matching lines (multiline: matches), or files with matches."""
    lines_matched: int = 0
    """Matching lines (multiline: matches) in all."""
    files_searched: int = 0
    searched_told: bool = True
    """Whether :attr:`files_searched` may be told (not where it counts files a policy hides)."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Files not searched, by the error code that stopped them (``binary_file``, ...)."""
    timed_out: bool = False
    """The call's deadline passed: the counts cover what was searched until then."""
    complete: bool = True
    """Every file was searched: the totals are exact (else they are "at least")."""
    walk: Walk = field(default_factory=Walk)
