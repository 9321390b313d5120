"""Walking the workspace through ``ctx.fs`` (glob, grep): the files below a directory, sorted.

A walk visits directories breadth first, in sorted order, and leaves out what its
:class:`WalkFilter` says, counting each kind; given a glob, it enters only the directories a match
may lie in. On a store that lists a whole tree at once (an object store), it walks that listing.
Symlinked directories are not followed, what a policy hides is never listed (nor counted), and a
walk stops, saying so, after a bounded number of entries.

What a walk leaves out follows ripgrep's defaults: directories named in ``ToolsetOptions.ignore``;
unless asked to include ignored files, what ``.gitignore``, ``.ignore``, ``.rgignore`` and
``.git/info/exclude`` exclude (see :mod:`ctxfs.tools.ignorefiles`); and, unless asked for, hidden
names (starting with ``.``), even those a rule re-includes. Each ignore file applies to its
directory and below, those above the walked directory included. As in ripgrep, the kind of file
decides first: a rule of any ``.rgignore`` that matches overrides those of every ``.ignore``, which
override those of every ``.gitignore``, which override the exclude files'; among files of one
kind, the deeper decides. ``.gitignore`` counts outside a git repository too (ripgrep's
``--no-require-git``). A directory left out is not entered.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Final

import anyio.lowlevel

from ctxfs.core import (
    Context,
    FileKind,
    FileSearch,
    FsError,
    GlobMatcher,
    Listing,
    NotADirectory,
    Stat,
    TooLarge,
    normalize_path,
    relative_to,
)
from ctxfs.core.kit import IGNORE_FILES, LISTING_WORK_INLINE_ENTRIES, listing_work

if TYPE_CHECKING:
    from ctxfs.tools.ignorefiles import IgnoreFile

__all__ = [
    "DEFAULT_IGNORE",
    "IGNORE_FILE_MAX_CHARS",
    "IgnoreRules",
    "Walk",
    "WalkFilter",
    "WalkOptions",
    "all_lines",
    "files_below",
    "walk",
]

DEFAULT_IGNORE: Final = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".idea",
    }
)  # fmt: skip
"""Directories glob and grep do not descend into (list_dir still shows them)."""
IGNORE_FILE_MAX_CHARS = 1 << 20
"""The largest ignore file read (in characters); a larger one gives no rules."""


EXCLUDE: Final = IGNORE_FILES[0]
"""The repository's own ignore file, read where ``.git`` is a directory; the others, anywhere."""


@dataclass(frozen=True, kw_only=True)
class WalkOptions:
    """The options of the walks of glob and grep."""

    ignore: frozenset[str] = DEFAULT_IGNORE
    max_walk_entries: int = 200_000
    """Entries a glob or grep walk visits before it stops and says which directories it
    did not finish. A walk holds about 210 bytes per file it keeps (200,000: about 45 MB)."""
    grep_seconds: float = 10.0
    """Time one grep call may search (and a glob may list, through the store's engine);
    then it stops and says so, with what it found."""


@dataclass(frozen=True, kw_only=True)
class WalkFilter:
    """What a walk leaves out."""

    skip_dirs: frozenset[str]
    """Directory names never entered (``ToolsetOptions.ignore``)."""
    hidden: bool = False
    """Include names starting with ``.``."""
    ignored: bool = False
    """Include what ignore files exclude (they are then not read at all)."""


@dataclass(frozen=True)
class IgnoreRules:
    """The ignore files that apply in one directory, shallowest first."""

    files: tuple[IgnoreFile, ...] = ()

    def adding(self, files: list[IgnoreFile]) -> IgnoreRules:
        """These rules, then those of *files* (deeper than all of these)."""
        return IgnoreRules(self.files + tuple(files)) if files else self

    def verdict(self, path: str, *, directory: bool) -> bool | None:
        """Whether the strongest file with a rule matching *path* excludes it (None: no rule).

        The strongest kind of file with a matching rule decides; within it, the deepest file.
        """
        verdicts: dict[int, bool] = {}
        for file in reversed(self.files):
            if file.kind not in verdicts:
                verdict = file.verdict(relative_to(path, file.directory), directory=directory)
                if verdict is not None:
                    verdicts[file.kind] = verdict
        return verdicts[max(verdicts)] if verdicts else None


@dataclass
class Walk:
    """The files found below a directory, in sorted order, and what was left out."""

    files: list[Stat] = field(default_factory=list)
    truncated: bool = False
    """The walk stopped at its entry limit: more files may exist."""
    timed_out: bool = False
    """The store's engine stopped at its time limit: more files may exist."""
    not_listed: list[str] = field(default_factory=list)
    """The directories a walk stopped at its limit did not list, or only in part (sorted)."""
    unreadable: int = 0
    """Directories that could not be listed."""
    unnamed: int = 0
    """Entries no path can name (see :class:`~ctxfs.core.Listing`), not listed."""
    hidden: int = 0
    """Hidden entries (names starting with ``.``) left out."""
    ignored: int = 0
    """Entries an ignore file excludes, left out (a directory counts once)."""

    def take(self, entry: Stat, only: WalkFilter, rules: IgnoreRules) -> bool:
        """Keep *entry* if a file, or count why it is left out; True for a directory to enter."""
        is_directory = entry.kind is FileKind.DIRECTORY
        if is_directory and entry.name in only.skip_dirs:
            return False
        if not only.hidden and entry.name.startswith("."):
            self.hidden += 1
        elif rules.verdict(entry.path, directory=is_directory):
            self.ignored += 1
        elif is_directory:
            return True
        elif entry.kind is FileKind.FILE:  # (a link is not followed, as by ripgrep)
            self.files.append(entry)
        return False


async def walk(
    ctx: Context,
    root: str,
    *,
    only: WalkFilter,
    max_entries: int,
    glob: GlobMatcher | None = None,
) -> Walk:
    """Collect the files below *root* that *only* keeps, up to *max_entries* entries.

    With *glob*, only the directories where a path it matches may lie are entered (it is matched
    against paths below *root*; the caller matches the files).
    """
    root = normalize_path(root)
    result = Walk()
    flat = await ctx.fs.list_tree(root)
    lister = ctx.fs.list if flat is None else await _directories(root, flat)
    above = IgnoreRules() if only.ignored else await _rules_above(ctx, root)
    pending: deque[tuple[str, IgnoreRules]] = deque([(root, above)])
    seen = 0
    while pending and not result.truncated:
        directory, rules = pending.popleft()
        try:
            entries = await lister(directory)
            result.unnamed += len(entries.unnamed)
        except FsError:
            if directory == root:
                raise
            result.unreadable += 1
            continue
        if not only.ignored:
            rules = rules.adding(await _ignore_files(ctx, directory, entries))
        for entry in entries:
            seen += 1
            if seen % LISTING_WORK_INLINE_ENTRIES == 0:
                await anyio.lowlevel.checkpoint()  # (a store's whole tree may come at once)
            if seen > max_entries:
                result.truncated = True
                result.not_listed = sorted([directory, *(path for path, _ in pending)])
                break
            entered = result.take(entry, only, rules)
            if entered and (glob is None or glob.may_hold(relative_to(entry.path, root))):
                pending.append((entry.path, rules))
    await listing_work(len(result.files), partial(result.files.sort, key=_path))
    return result


def _path(entry: Stat) -> str:
    return entry.path


async def _directories(root: str, files: Listing) -> Callable[[str], Awaitable[Listing]]:
    """A lister of the directories implied by *files* (every file below *root*).

    In an object store a file may share its name with a directory (a prefix): both are listed.
    """

    def by_directory() -> defaultdict[str, dict[tuple[str, bool], Stat]]:
        children: defaultdict[str, dict[tuple[str, bool], Stat]] = defaultdict(dict)
        for entry in files:
            parent = entry.path.rpartition("/")[0]
            children[parent][entry.path, entry.kind is FileKind.DIRECTORY] = entry
            while (
                parent != root
                and (parent, True) not in children[grand := parent.rpartition("/")[0]]
            ):
                children[grand][parent, True] = Stat(path=parent, kind=FileKind.DIRECTORY)
                parent = grand
        return children

    children = await listing_work(len(files), by_directory)

    async def listed(directory: str) -> Listing:
        found = children.get(directory, {})
        entries = await listing_work(len(found), partial(sorted, found.values(), key=_name))
        return Listing(entries, unnamed=files.unnamed if directory == root else ())

    return listed


def _name(entry: Stat) -> str:
    return entry.name


async def files_below(
    ctx: Context,
    root: str,
    *,
    only: WalkFilter,
    max_entries: int,
    seconds: float,
    glob: GlobMatcher | None = None,
) -> Walk:
    """The files below *root* that *only* keeps, by the backend's own engine where it has one.

    Such an engine (fs-local: ripgrep) lists them at its own speed, without their metadata, and does
    not say what it left out; else this is :func:`walk`. A listing stopped at *seconds* is marked
    timed out. *glob* narrows it first to the files it may match (the caller matches them exactly).
    """
    root = normalize_path(root)
    search = FileSearch(
        path=root,
        pattern=None,
        hidden=only.hidden,
        ignored=only.ignored,
        skip_dirs=only.skip_dirs,
        glob=None if glob is None else glob.pattern,
        seconds=seconds,
    )
    listed = await ctx.fs.search_files(search)
    if listed is None:
        return await walk(ctx, root, only=only, max_entries=max_entries, glob=glob)
    if root and root in listed.counts:  # (the engine lists a file given as the root)
        raise NotADirectory(f"{root} is not a directory", path=root)

    def files() -> list[Stat]:
        return [Stat(path=path, kind=FileKind.FILE) for path in sorted(listed.counts)]

    return Walk(files=await listing_work(len(listed.counts), files), timed_out=not listed.complete)


async def all_lines(ctx: Context, path: str, *, max_chars: int) -> list[str]:
    """Every line of a text file, whole (a search primitive: no observation is recorded).

    Raises:
        TooLarge: The file holds more than *max_chars* characters.
        FsError: It cannot be read as text (``BinaryFile``, ``EncodingError``, a refusal).

    """
    lines, chars = [], 0  # a longer line comes cut, its length past the bound: never held whole
    async with aclosing(ctx.fs.lines(path, max_line_chars=max_chars + 1)) as numbered:
        async for _, line in numbered:
            chars += len(line) + 1
            if chars > max_chars:
                raise TooLarge(f"{path} holds more than {max_chars:,} characters", path=path)
            lines.append(line)
    return lines


async def _rules_above(ctx: Context, root: str) -> IgnoreRules:
    """The rules of the ignore files in the directories above *root*, from the workspace's top."""
    rules = IgnoreRules()
    parts = root.split("/") if root else []
    for depth in range(len(parts)):
        directory = "/".join(parts[:depth])
        try:
            entries = await ctx.fs.list(directory)
        except FsError:
            continue  # (hidden from this owner, say: no rules from it)
        rules = rules.adding(await _ignore_files(ctx, directory, entries))
    return rules


async def _ignore_files(ctx: Context, directory: str, entries: Listing) -> list[IgnoreFile]:
    """The ignore files of *directory* (listed as *entries*), weakest first; unreadable: none."""
    from ctxfs.tools.ignorefiles import IgnoreFile  # noqa: PLC0415 - loaded by the first walk

    names = await listing_work(len(entries), lambda: {entry.name: entry for entry in entries})
    wanted = [(kind, names[name].path) for kind, name in enumerate(IGNORE_FILES) if name in names]
    git = names.get(".git")
    if git is not None and git.kind is FileKind.DIRECTORY:
        wanted.insert(0, (0, f"{git.path}/{EXCLUDE.removeprefix('.git/')}"))
    files = []
    for kind, path in wanted:
        try:
            lines = await all_lines(ctx, path, max_chars=IGNORE_FILE_MAX_CHARS)
        except FsError:
            continue  # missing (exclude), binary, too large, refused: no rules from it
        files.append(IgnoreFile.parse("\n".join(lines), kind=kind, directory=directory))
    return files
