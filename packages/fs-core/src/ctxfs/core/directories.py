"""Directories an owner creates: made, recorded as a step, and removed again by an undo.

Only where directories are real (:attr:`Capabilities.real_directories`). An undo
removes them deepest first, once the files are put back, each only if it is empty.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from ctxfs.core.backend import FileKind
from ctxfs.core.errors import FsError, InvalidArgument, NotADirectory, NotARegularFile, NotFound
from ctxfs.core.outcomes import OpKind
from ctxfs.core.paths import join_path
from ctxfs.core.reports import reported
from ctxfs.core.sessions import FileChange

if TYPE_CHECKING:
    from ctxfs.core.context import Context

log = logging.getLogger(__name__)

__all__ = [
    "authorize_removals",
    "directory_changes",
    "made",
    "missing_directories",
    "mkdir",
    "removable",
    "remove_made",
]


async def mkdir(ctx: Context, path: str) -> None:
    """:meth:`ContextFs.mkdir <ctxfs.core.ContextFs.mkdir>`: the directories made are a step."""
    opened_fs = ctx.opened_fs
    async with reported(ctx, OpKind.MKDIR, path, file=False) as report:
        await opened_fs.hooks.authorize(ctx, report.op)
        missing = await missing_directories(ctx, report.op.path)
        await opened_fs.backend.mkdir(report.op.path)
    if opened_fs.session_memory is not None and missing:
        await opened_fs.session_memory.record(ctx.owner, directory_changes(missing))


async def missing_directories(ctx: Context, path: str) -> list[str]:
    """*path* and those of its parents that do not exist yet, outermost first (if real)."""
    opened_fs, missing = ctx.opened_fs, list[str]()
    if not opened_fs.backend.capabilities.real_directories:
        return missing
    while path:
        try:
            await opened_fs.backend.stat(path)
        except NotFound:
            missing.insert(0, path)
            path = path.rpartition("/")[0]
            continue
        except NotADirectory:  # a parent is a file: the call making them is refused
            return []
        break
    return missing


def directory_changes(paths: Sequence[str]) -> list[FileChange]:
    """The changes of a step that made directories *paths*."""
    return [
        FileChange(
            path=path, key=path, kind=OpKind.MKDIR.value, before=None, after=None, directory=True
        )
        for path in paths
    ]


def made(steps: Sequence[Sequence[FileChange]]) -> list[str]:
    """The directories the changes of *steps* made, deepest first."""
    paths = {
        change.path
        for changes in steps
        for change in changes
        if change.directory and change.moved_from is None
    }
    return sorted(paths, key=lambda path: (-path.count("/"), path))


async def authorize_removals(
    ctx: Context, stack: AsyncExitStack, directories: Sequence[str], *, dry_run: bool
) -> None:
    """Authorize removing each of *directories*, reported when *stack* closes."""
    for directory in directories:
        report = await stack.enter_async_context(
            reported(ctx, OpKind.DELETE, directory, file=False, dry_run=dry_run)
        )
        await ctx.opened_fs.hooks.authorize(ctx, report.op)


async def removable(
    ctx: Context, directories: Sequence[str], removed: Collection[str]
) -> tuple[list[str], list[str]]:
    """Which of *directories* (deepest first) an undo removing *removed* leaves empty.

    Returns those it can remove, and those it keeps; one already gone is in neither.
    """
    backend, empty, kept = ctx.opened_fs.backend, list[str](), list[str]()
    for directory in directories:
        try:
            entries = await backend.list(directory, details=False)
        except (NotFound, NotADirectory):
            continue
        names = {join_path(directory, entry.name) for entry in entries}
        (kept if names - set(removed) - set(empty) else empty).append(directory)
    return empty, kept


async def remove_made(ctx: Context, directories: Sequence[str]) -> tuple[list[str], list[str]]:
    """Remove *directories* (deepest first) that are empty: those removed, and those kept.

    One is kept where it is not empty, or where the store failed to remove it (logged).
    """
    removed, kept, backend = [], [], ctx.opened_fs.backend
    for directory in directories:
        try:
            if (await backend.stat(directory)).kind is not FileKind.DIRECTORY:
                continue
            await backend.delete(directory)
        except InvalidArgument:  # not empty: someone else put something in it
            kept.append(directory)
        except (NotFound, NotADirectory, NotARegularFile):  # gone meanwhile, or a link now
            continue
        except FsError:  # the store failed: left where it is
            log.warning("a directory made could not be removed: %s", directory, exc_info=True)
            kept.append(directory)
        else:
            removed.append(directory)
    return removed, kept
