"""Moves: a file under the mutation protocol; a directory whole, every entry judged and locked."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Final, TypeAlias

import anyio

from ctxfs.core.backend import FileKind, Location
from ctxfs.core.directories import directory_changes, missing_directories
from ctxfs.core.errors import (
    AlreadyExists,
    BackendError,
    Busy,
    FsError,
    InvalidArgument,
    NotADirectory,
    NotFound,
    Stale,
    TooLarge,
)
from ctxfs.core.globs import relative_to
from ctxfs.core.mutations import making_parents, updating_all
from ctxfs.core.outcomes import MoveOutcome, Operation, OpKind
from ctxfs.core.paths import check_file_spelling, join_path
from ctxfs.core.reports import Report, reported
from ctxfs.core.sessions import FileChange
from ctxfs.core.versions import Version

if TYPE_CHECKING:
    from ctxfs.core.backend import Update
    from ctxfs.core.context import Context

__all__ = [
    "MAX_MOVED_ENTRIES",
    "another_tree",
    "entries_below",
    "kind_at",
    "move",
    "moving",
    "tree_version",
]

MAX_MOVED_ENTRIES: Final = 1000
"""Most entries (files, directories, links, at any depth) one directory move carries:
each is judged by the policies and locked while it moves."""

Pairs: TypeAlias = list[tuple[Operation, Operation]]
"""Each entry's ``MOVE`` operations: (leaving, arriving)."""


@asynccontextmanager
async def moving(
    ctx: Context, source: str, destination: str, *, file: bool, dry_run: bool = False
) -> AsyncIterator[tuple[Report, Report]]:
    """The two ``MOVE`` operations of a move, each naming the other, reported as it ends."""
    async with (
        reported(ctx, OpKind.MOVE, source, file=file, dry_run=dry_run) as leaving,
        reported(ctx, OpKind.MOVE, destination, file=file, dry_run=dry_run) as arriving,
    ):
        leaving.op = replace(leaving.op, moved_to=arriving.op.path)
        arriving.op = replace(arriving.op, moved_from=leaving.op.path)
        yield leaving, arriving


async def move(
    ctx: Context,
    source: str,
    destination: str,
    *,
    overwrite: bool,
    record: bool = True,
    tree: Version | None = None,
    then: Callable[[], Awaitable[None]] | None = None,
) -> MoveOutcome:
    """:meth:`ContextFs.move <ctxfs.core.ContextFs.move>` (*record*: as a step of the owner's).

    With *tree* (an undo's): only the directory whose :func:`tree_version` is *tree* moves,
    checked under its locks; *then* runs, shielded, once it has moved, before the observers
    hear that the move ended.
    """
    async with moving(ctx, source, destination, file=False) as (leaving, arriving):
        if not leaving.op.path or not arriving.op.path:
            raise InvalidArgument(
                "the root cannot be moved, nor be a destination", path=leaving.op.path
            )
        for report in (leaving, arriving):
            await ctx.opened_fs.hooks.authorize(ctx, report.op)
        if (await kind_at(ctx, leaving.op.path)) is FileKind.DIRECTORY:
            moved = await _move_directory(
                ctx, leaving.op, arriving.op, overwrite=overwrite, record=record, tree=tree
            )
            if then is not None:
                with anyio.CancelScope(shield=True):
                    await then()
            return MoveOutcome(
                path=leaving.op.path,
                destination=arriving.op.path,
                version=None,
                directory=True,
                moved=moved,
            )
        if tree is not None:
            raise another_tree(leaving.op.path)
        check_file_spelling(source, leaving.op.path)
        check_file_spelling(destination, arriving.op.path)
        await _move_file(ctx, leaving, arriving, overwrite=overwrite, record=record)
    return MoveOutcome(
        path=leaving.op.path,
        destination=arriving.op.path,
        version=arriving.stored,
        replaced=arriving.before,
    )


def another_tree(path: str) -> Stale:
    """The refusal to undo a directory move to *path* whose tree is no longer the one moved."""
    return Stale(
        f"{path} changed since your move (entries came, went or were renamed, or it is "
        "no longer the directory you moved); nothing was moved back",
        path=path,
        hint=f"Leave it, or move what you need from {path} by hand.",
    )


async def kind_at(ctx: Context, path: str) -> FileKind | None:
    """What *path* names (links followed), or None where nothing does."""
    try:
        return (await ctx.opened_fs.backend.stat(path)).kind
    except (NotFound, NotADirectory):
        return None


async def _move_file(
    ctx: Context, leaving: Report, arriving: Report, *, overwrite: bool, record: bool
) -> None:
    """Move one file (both operations authorized already) under the mutation protocol."""

    async def refuse(updates: list[Update]) -> None:
        here, there = updates
        if here.current is None:
            raise await here.missing()
        if there.current is not None and not overwrite:
            raise AlreadyExists(
                f"{arriving.op.path} already exists",
                path=arriving.op.path,
                hint="Choose another destination, or pass overwrite=true after "
                "reading the file there.",
            )

    async with updating_all(
        ctx,
        [leaving, arriving],
        max_size=None,
        content=False,
        refuse=refuse,
        authorized=True,
        record=record,
    ) as opened:
        (here, _), (there, _) = opened
        if there.current is None:
            await making_parents(ctx, arriving)
        arriving.after = await here.move(there)


async def _move_directory(
    ctx: Context,
    here: Operation,
    there: Operation,
    *,
    overwrite: bool,
    record: bool,
    tree: Version | None,
) -> int:
    """Move directory *here* whole to *there* (both authorized); return the entries moved.

    Every entry below it is judged (two ``MOVE`` operations) before anything is locked,
    then all are locked, in the backend's lock order, while the backend renames the directory.
    """
    opened_fs = ctx.opened_fs
    _check_directory_move(here, there, overwrite=overwrite)
    if not opened_fs.backend.capabilities.directory_moves:
        await opened_fs.backend.move_directory(here.path, there.path)  # refuses, touching nothing
    if await kind_at(ctx, there.path) is not None:
        raise AlreadyExists(
            f"{there.path} already exists",
            path=there.path,
            hint="Choose a destination that does not exist yet.",
        )
    entries = await entries_below(ctx, here.path)
    if tree is not None and tree_version(entries) != tree:
        raise another_tree(here.path)
    pairs = [(here, there)]
    pairs += [await _entry_pair(ctx, here, there, relative, kind) for relative, kind in entries]
    for pair in pairs[1:]:
        for op in pair:
            await opened_fs.hooks.authorize(ctx, op)
    by_key = {op.key: op for pair in pairs for op in pair}
    async with AsyncExitStack() as stack:
        for key in sorted(by_key, key=opened_fs.backend.lock_order):
            for lock in opened_fs.hooks.mutation_locks(ctx, by_key[key]):
                await stack.enter_async_context(lock)
        if await entries_below(ctx, here.path) != entries:
            # an entry came or went since the policies judged them
            raise Busy(
                f"{here.path} changed while it was being moved; nothing moved",
                path=here.path,
                hint="Retry the move.",
            )
        await opened_fs.file_context.observation(ctx.owner, here.key)  # the store answers
        made = await missing_directories(ctx, there.path.rpartition("/")[0]) if record else []
        await opened_fs.backend.move_directory(here.path, there.path)
        try:
            await opened_fs.hooks.moved(ctx, pairs)
        except BaseException as failure:
            with anyio.CancelScope(shield=True):
                await _move_directory_back(ctx, pairs, failure)
            raise
    if record and opened_fs.session_memory is not None:
        moved = FileChange(
            path=there.path,
            key=there.key,
            kind=OpKind.MOVE.value,
            before=None,
            after=tree_version(entries),
            moved_from=here.path,
            directory=True,
        )
        await opened_fs.session_memory.record(ctx.owner, [*directory_changes(made), moved])
    return len(pairs) - 1


async def _move_directory_back(ctx: Context, pairs: Pairs, failure: BaseException) -> None:
    """Undo a directory move (its *pairs*) whose observers failed: raise what to tell."""
    opened_fs, (here, there) = ctx.opened_fs, pairs[0]
    try:
        await opened_fs.backend.move_directory(there.path, here.path)
    except FsError as undo:
        if not isinstance(failure, Exception):
            return
        raise BackendError(
            f"the move of {here.path} failed part way ({failure}) and could not be "
            f"undone ({undo.message}): the directory is now at {there.path}",
            path=here.path,
            hint="List both paths to see where the directory is before trying again.",
            details={"destination": there.path},
        ) from failure
    with suppress(FsError):
        await opened_fs.file_context.follow(ctx.owner, [(new, old) for old, new in pairs])
    if isinstance(failure, FsError):
        raise failure.retold(
            f"the move was not applied (nothing changed; {here.path} put back): {failure.message}",
            restored=[here.path],
        ) from failure


async def entries_below(ctx: Context, directory: str) -> list[tuple[str, FileKind]]:
    """Each entry below *directory*, at any depth (links not followed), and its kind.

    Paths are relative to *directory*.

    Raises:
        TooLarge: There are more than :data:`MAX_MOVED_ENTRIES`.
        NotFound, NotADirectory: *directory* is no directory.

    """
    backend, found, pending = ctx.opened_fs.backend, list[tuple[str, FileKind]](), [directory]
    while pending:
        listed = pending.pop()
        for entry in await backend.list(listed, details=False):
            if len(found) == MAX_MOVED_ENTRIES:
                raise TooLarge(
                    f"{directory} holds more than {MAX_MOVED_ENTRIES} entries, more than one "
                    "move may carry",
                    path=directory,
                    hint="Move smaller parts of it (its subdirectories one by one), then the rest.",
                    details={"max_entries": MAX_MOVED_ENTRIES},
                )
            found.append((relative_to(entry.path, directory), entry.kind))
            if entry.kind is FileKind.DIRECTORY:
                pending.append(entry.path)
    return found


def tree_version(entries: Iterable[tuple[str, FileKind]]) -> Version:
    """A version of a directory's tree (*entries*): the paths below it and their kinds."""
    listed = "\0".join(sorted(f"{kind.value}:{path}" for path, kind in entries))
    names = listed.encode("utf-8", "surrogateescape")
    return Version(f"tree:{hashlib.sha256(names).hexdigest()[:32]}")


async def _entry_pair(
    ctx: Context, here: Operation, there: Operation, relative: str, kind: FileKind
) -> tuple[Operation, Operation]:
    """The ``MOVE`` operations of entry *relative* of directory *here*, moving to *there*."""
    backend = ctx.opened_fs.backend
    old, new = join_path(here.path, relative), join_path(there.path, relative)
    if kind is FileKind.SYMLINK:  # the link itself moves: what it leads to does not
        link = join_path(here.resolved, relative)
        gone = Location(resolved=link, key=link)  # (its own key: the link's path)
    else:
        gone = await backend.locate(old)
    come = await backend.locate(new)
    return (
        Operation(kind=OpKind.MOVE, path=old, moved_to=new, resolved=gone.resolved, key=gone.key),
        Operation(kind=OpKind.MOVE, path=new, moved_from=old, resolved=come.resolved, key=come.key),
    )


def _check_directory_move(here: Operation, there: Operation, *, overwrite: bool) -> None:
    """Refuse a directory move that cannot be: over something, or into itself."""
    if overwrite:
        raise InvalidArgument(
            f"{here.path} is a directory; a directory never replaces anything",
            path=here.path,
            hint="Move it with overwrite=false to a path that does not exist yet.",
        )
    for source, destination in ((here.path, there.path), (here.resolved, there.resolved)):
        if destination == source or destination.startswith(f"{source}/"):
            raise InvalidArgument(
                f"{there.path} is inside {here.path}: a directory cannot move into itself",
                path=here.path,
                hint="Choose a destination outside the directory being moved.",
            )
