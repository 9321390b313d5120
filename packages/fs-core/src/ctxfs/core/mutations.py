"""The mutation protocol: every change of a file is locked, checked, stored and recorded, or undone.

A commit that fails (the guard cannot record it, an observer fails) or is
cancelled is undone under the same locks: the files and the owner's
observations are put back as they were.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

import anyio

from ctxfs.core.backend import NO_PERMISSIONS, Permissions
from ctxfs.core.directories import directory_changes, made, missing_directories, remove_made
from ctxfs.core.errors import AlreadyExists, BackendError, FsError, InvalidArgument, Stale
from ctxfs.core.textwork import TEXT_WORK_INLINE_BYTES, decoded, text_work
from ctxfs.core.versions import ABSENT, Absent, Version

if TYPE_CHECKING:
    from ctxfs.core.backend import Update
    from ctxfs.core.context import Context
    from ctxfs.core.reports import Report
    from ctxfs.core.text import AnyDocument, Change

__all__ = [
    "Opened",
    "Refusal",
    "change_text",
    "making_parents",
    "rolled_back",
    "store",
    "taken_back",
    "updating",
    "updating_all",
]

Opened: TypeAlias = tuple["Update", "AnyDocument | None"]
"""A file open for a change: its update, and its text where it was decoded."""
Refusal: TypeAlias = Callable[[list["Update"]], Awaitable[None]]
"""A check of what the files hold (the updates, in the operations' order) that may raise."""


@asynccontextmanager
async def updating(
    ctx: Context,
    report: Report,
    *,
    decode: bool = False,
    max_size: int | Absent | None = ABSENT,
    content: bool = True,
) -> AsyncIterator[Opened]:
    """:func:`updating_all` for one file."""
    async with updating_all(ctx, [report], decode=decode, max_size=max_size, content=content) as [
        opened
    ]:
        yield opened


@asynccontextmanager
async def updating_all(
    ctx: Context,
    reports: list[Report],
    *,
    decode: bool = False,
    max_size: int | Absent | None = ABSENT,
    content: bool = True,
    refuse: Refusal | None = None,
    authorized: bool = False,
    record: bool = True,
    then: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[list[Opened]]:
    """Open the files of *reports* for a change, all or none; yielded in *reports*' order.

    Every operation is authorized (unless *authorized*: the caller did)
    before any lock is taken; the locks, then the updates
    (:meth:`Backend.open_update`, one read each), are taken in the order of
    the files' keys, so that two operations on the same files cannot
    deadlock. Two paths naming one file are refused, once authorized. With
    *decode*, each existing file is decoded. *refuse* may raise on what the
    files hold, before the checkers vote (``ctxfs_check_version``). *max_size*
    bounds what is read (default: ``TextOptions.max_edit_bytes``; None: no
    bound). Without *content* (a change that needs the files' versions alone: a
    delete, a move), a file larger than the session memory keeps may be opened
    without its content (``content_max``: :attr:`Update.current`). The block
    stores the changes (:func:`store`); when it ends, each is committed
    (``ctxfs_committed``) and, with *record*, the whole is a step of the
    owner's session memory; or every one is undone. *then* runs, shielded,
    after the commit and before the locks go (what it raises undoes nothing).
    A ``stale`` refusal carries the diff since the owner's version where it
    is kept (and the file's content was read).
    """
    opened_fs = ctx.opened_fs
    for report in [] if authorized else reports:
        await opened_fs.hooks.authorize(ctx, report.op)
    named: dict[str, Report] = {}
    for report in reports:
        if (first := named.setdefault(report.op.key, report)) is not report:
            said = (
                f"names {first.op.path} twice"
                if first.op.path == report.op.path
                else f"names one file twice: {first.op.path} and {report.op.path}"
            )
            raise InvalidArgument(
                f"the call {said}",
                path=first.op.path,
                hint="Change each file once in a call (one update of it, or one move); "
                "do the rest in a call of its own after.",
            )
    if max_size is ABSENT:
        max_size = opened_fs.text_options.max_edit_bytes
    memory = opened_fs.session_memory
    content_max = None if content else 0 if memory is None else memory.store.largest_kept
    ordered = sorted(reports, key=lambda report: opened_fs.backend.lock_order(report.op.key))
    opened: dict[int, Opened] = {}
    async with AsyncExitStack() as stack:
        for report in ordered:
            for lock in opened_fs.hooks.mutation_locks(ctx, report.op):
                await stack.enter_async_context(lock)
        for report in ordered:
            update = await stack.enter_async_context(
                opened_fs.backend.open_update(
                    report.op.path, max_size=max_size, content_max=content_max
                )
            )
            current, document = update.current, None
            report.before = current.version if current is not None else None
            if decode and current is not None:
                document = await text_work(
                    current.size, partial(decoded, ctx, report.op.path, current)
                )
            opened[id(report)] = (update, document)
        updates = [opened[id(report)][0] for report in reports]
        if refuse is not None:
            await refuse(updates)
        for report, update in zip(reports, updates, strict=True):
            try:
                report.seen = await opened_fs.hooks.check_version(ctx, report.op, report.before)
            except Stale as stale:
                memory, current = opened_fs.session_memory, update.current
                if memory is None or current is None:
                    raise
                report.seen = await opened_fs.file_context.observation(ctx.owner, report.op.key)
                raise await memory.explained(ctx, report, current, stale) from None
        yield [opened[id(report)] for report in reports]
        await _commit(ctx, reports, updates, record=record, then=then)


async def change_text(
    ctx: Context,
    report: Report,
    apply: Callable[[AnyDocument], Change],
    *,
    costly: Callable[[AnyDocument], bool] | None = None,
) -> Change:
    """Change the text of *report*'s existing file by *apply*; store it unless a dry run.

    *costly* says, cheaply, whether *apply* may take long whatever the size
    (it then runs in a worker thread).
    """
    async with updating(ctx, report, decode=True) as (update, document):
        if update.current is None or document is None:
            raise await update.missing()
        size = update.current.size
        change = await text_work(
            size,
            lambda: apply(document),
            # a large file is changed off the loop anyway: no need to ask
            costly=costly is not None and size <= TEXT_WORK_INLINE_BYTES and costly(document),
        )
        if not report.op.dry_run:
            await store(ctx, report, update, change.data, document)
    return change


async def store(
    ctx: Context,
    report: Report,
    update: Update,
    data: bytes,
    document: AnyDocument | None = None,
    *,
    permissions: Permissions = NO_PERMISSIONS,
) -> None:
    """Write *data* through *update*; for a changed text, remember its encoding by version.

    *permissions*: what the file gets (see :meth:`Update.write`).

    Raises:
        Stale: The file was created by someone else since it was read as missing.

    """
    if update.current is None:
        await making_parents(ctx, report)
    try:
        report.after = await update.write(data, permissions=permissions)
        report.written = data
    except AlreadyExists:
        raise Stale(
            f"{report.op.path} was created by someone else meanwhile", path=report.op.path
        ) from None
    if document is not None and report.after is not None:
        known, path = ctx.opened_fs.known_encodings, report.op.path
        if report.before is not None and known.pinned(ctx.owner, path, report.before):
            known.pin(ctx.owner, path, report.after, document.encoding)  # named: the owner's
        else:
            known.remember(report.after, document.encoding)


async def making_parents(ctx: Context, report: Report) -> None:
    """Note in *report* the parents its file's creation (or arrival) is about to make."""
    report.made = await missing_directories(ctx, report.op.path.rpartition("/")[0])


async def _commit(
    ctx: Context,
    reports: list[Report],
    updates: list[Update],
    *,
    record: bool,
    then: Callable[[], Awaitable[None]] | None,
) -> None:
    """Report each stored operation of *reports*, or undo them all, and what the owner saw."""
    stored = [
        (update, report)
        for update, report in zip(updates, reports, strict=True)
        if not report.op.dry_run
    ]
    opened_fs = ctx.opened_fs
    moved_from = {report.op.path: report.seen for _, report in stored if report.op.moved_to}
    try:
        for _, report in stored:
            seen = moved_from.get(report.op.moved_from or "", report.seen)
            await opened_fs.hooks.committed(ctx, report.op, report.before, report.after, seen=seen)
    except BaseException as failure:
        done = [(update, report.after) for update, report in stored]
        kept = await taken_back(ctx, stored, done)
        with anyio.CancelScope(shield=True):
            for update, report in stored:
                if update.path not in kept:  # best effort: the store may be down still
                    with suppress(FsError):
                        await opened_fs.file_context.restore(ctx.owner, report.op.key, report.seen)
        if isinstance(failure, FsError):
            raise rolled_back(failure, done, kept, what="the change") from failure
        if kept and isinstance(failure, Exception):  # an observer's bug: say what is left
            bug = BackendError(f"an observer failed: {failure!r}", path=stored[0][0].path)
            raise rolled_back(bug, done, kept, what="the change") from failure
        raise
    if record:
        for _, report in stored:  # what the owner was shown, it changed itself: it knows
            if report.before is not None and report.after is not None:
                opened_fs.shown.carry(ctx.owner, report.op.path, report.before, report.after)
        if opened_fs.session_memory is not None:
            await opened_fs.session_memory.recorded(ctx, stored)
    if then is not None:
        with anyio.CancelScope(shield=True):
            await then()


async def taken_back(
    ctx: Context, stored: list[tuple[Update, Report]], done: list[tuple[Update, Version | None]]
) -> list[str]:
    """Undo *done*, the changes of *stored*, shielded; the directories made go if left empty.

    Return the paths left as changed; the operations put back stored nothing.
    """
    with anyio.CancelScope(shield=True):
        kept = await _undone(done, _move_sources(stored))
        for update, report in stored:
            if update.path not in kept:
                report.after = None
        with suppress(FsError):  # (best effort: the store may be down still)
            await remove_made(ctx, made([directory_changes(report.made) for _, report in stored]))
    return kept


async def _undone(
    done: list[tuple[Update, Version | None]], sources: Mapping[int, Update]
) -> list[str]:
    """Undo *done* (each update, and the version it left; None: deleted or moved away).

    Files moved or deleted come back first, newest first, then the files written, but
    for a destination (by update id in *sources*) whose source could not come back: a
    file may end up at two paths, never at none. Return the paths not put back.
    """
    left = {id(update): version for update, version in done}
    carried = {id(update.moved_to) for update, _ in done if update.moved_to is not None}
    steps = [(update, version) for update, version in reversed(done) if id(update) not in carried]
    kept: list[str] = []
    lost: set[int] = set()
    for update, version in steps:
        if version is not None:
            continue
        try:
            if update.moved_to is None:
                await update.undo(None)
            else:
                there = left[id(update.moved_to)]
                assert there is not None  # a move stores a version at its destination
                await update.undo_move(there)
        except FsError:
            kept += (
                [update.path] if update.moved_to is None else [update.path, update.moved_to.path]
            )
            lost.add(id(update))
    for update, version in steps:
        source = sources.get(id(update))
        if version is None:
            continue
        if source is not None and id(source) in lost:
            kept.append(update.path)  # its source did not come back: it keeps the file
            continue
        try:
            await update.undo(version)
        except FsError:
            kept.append(update.path)
    return kept


def _move_sources(stored: list[tuple[Update, Report]]) -> dict[int, Update]:
    """For :func:`_undone`: each move's destination update (by id), and its source's update."""
    by_path = {report.op.path: update for update, report in stored}
    return {
        id(update): by_path[report.op.moved_from]
        for update, report in stored
        if report.op.moved_from is not None and report.op.moved_from in by_path
    }


def rolled_back(
    failure: FsError, done: list[tuple[Update, Version | None]], kept: list[str], *, what: str
) -> FsError:
    """The error of a change (*what*: ``"the patch"``) undone after *failure*, and what is left."""
    touched = list(dict.fromkeys(update.path for update, _ in done))
    if not kept:
        note = f"; what it did to {', '.join(touched)} was undone" if touched else ""
        return failure.retold(
            f"{what} was not applied (nothing changed{note}): {failure.message}",
            restored=touched,
        )
    restored = [path for path in touched if path not in kept]
    left = f"is as {what} left it" if len(kept) == 1 else f"are as {what} left them"
    back = "was put back" if len(restored) == 1 else "were put back"
    return BackendError(
        f"{what} failed part way ({failure.message}) and could not be undone whole: "
        f"{', '.join(kept)} {left}" + (f"; {', '.join(restored)} {back}" if restored else ""),
        path=failure.path,
        hint="Read the files named to see their state before trying again.",
        details={"changed": kept, "restored": restored},
    )
