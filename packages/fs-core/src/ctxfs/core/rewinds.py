"""Checkpoints, undo and rewind: the session memory used to put an owner's files back.

An undo puts back what the owner's last steps changed, a rewind what every step
since a checkpoint changed: all the files at once, under the mutation protocol
(every file authorized, locked in key order, checked, then written; any failure
undoes the rest). A file changed by someone else since the owner's step is not
overwritten: the whole call is refused ``stale``, naming each such file with its
diff.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import anyio

from ctxfs.core.backend import NO_PERMISSIONS, Permissions
from ctxfs.core.directories import authorize_removals, made, removable, remove_made
from ctxfs.core.errors import (
    AlreadyExists,
    FsError,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotARegularFile,
    NotEnabled,
    Stale,
    Unavailable,
)
from ctxfs.core.moves import kind_at, move
from ctxfs.core.mutations import rolled_back, store, taken_back, updating_all
from ctxfs.core.outcomes import OpKind, RestoredFile, UndoOutcome
from ctxfs.core.reports import Report, reported
from ctxfs.core.rewind_checks import (
    AlreadyBack,
    SeenBefore,
    changed_file,
    refuse_another_root,
    refuse_another_tree,
    refuse_changed,
    refuse_history_changed,
    refuse_interleaved,
    refuse_relocated,
    refuse_unrecorded,
    refused,
)
from ctxfs.core.sessions import Checkpoint, FileChange, Step
from ctxfs.core.sessions.base import UNDONE

if TYPE_CHECKING:
    from ctxfs.core.backend import Update
    from ctxfs.core.context import Context
    from ctxfs.core.session_memory import SessionMemory
    from ctxfs.core.versions import Version

__all__ = ["checkpoint", "rewind", "undo"]


def _kept_for(memory: SessionMemory) -> str:
    """How much of a history is kept, as an error says it."""
    days, most = memory.store.max_idle_days, memory.store.max_steps
    return f"at most {most} steps are kept, none after {days} day{'s' * (days != 1)} without a call"


async def checkpoint(ctx: Context, label: str | None) -> Checkpoint:
    """:meth:`ContextFs.checkpoint <ctxfs.core.ContextFs.checkpoint>`."""
    given: object = label  # (a caller without type checks may pass anything)
    if given is not None and not isinstance(given, str):
        raise InvalidArgument(
            f"a checkpoint's label is text or None, got {type(given).__name__}",
            details={"field": "label"},
        )
    if label is not None and Checkpoint.is_id(label):
        raise InvalidArgument(
            f"a checkpoint's label cannot look like a checkpoint's id ({label!r})",
            hint="Choose another label: ids name checkpoints before labels do.",
            details={"field": "label"},
        )
    return await (await _memory(ctx)).store.mark(ctx.owner, label, at=time.time())


async def undo(ctx: Context, steps: int, *, dry_run: bool, newest: int | None) -> UndoOutcome:
    """:meth:`ContextFs.undo <ctxfs.core.ContextFs.undo>`."""
    memory = await _memory(ctx)
    given: object = steps  # (a caller without type checks may pass anything)
    if not isinstance(given, int) or isinstance(given, bool) or given < 1:
        raise InvalidArgument(
            f"steps must be a whole number, 1 or more, got {steps!r}", details={"field": "steps"}
        )
    async with memory.undoing(ctx.owner):
        return await _undo(ctx, memory, steps, dry_run=dry_run, newest=newest)


async def _undo(
    ctx: Context, memory: SessionMemory, steps: int, *, dry_run: bool, newest: int | None
) -> UndoOutcome:
    history = await memory.store.steps(ctx.owner)
    kept = [step for step in history if step.undid is None]
    if newest is not None and (not kept or kept[-1].number != newest):
        raise Stale(
            f"your newest step is no longer step {newest}: another call of yours made or "
            "undid one meanwhile; nothing was put back",
            hint="Look at what changed (changes), then undo again if still needed.",
            details={"newest": kept[-1].number if kept else None},
        )
    if len(kept) < steps:
        gone = await memory.store.given_up(ctx.owner)
        raise InvalidArgument(
            f"there {'is' if len(kept) == 1 else 'are'} only {len(kept)} step(s) to undo"
            + (f"; steps up to {gone} were given up" if gone else ""),
            hint="Undo fewer steps; only changes made through ctxfs are kept"
            + (f" ({_kept_for(memory)})" if gone else "."),
            details={"steps": len(kept), "given_up": gone},
        )
    return await _put_back(ctx, memory, kept[-steps:], dry_run=dry_run)


async def rewind(ctx: Context, checkpoint_id: str, *, dry_run: bool) -> UndoOutcome:
    """:meth:`ContextFs.rewind <ctxfs.core.ContextFs.rewind>`."""
    memory = await _memory(ctx)
    async with memory.undoing(ctx.owner):
        return await _rewind(ctx, memory, checkpoint_id, dry_run=dry_run)


async def _rewind(
    ctx: Context, memory: SessionMemory, checkpoint_id: str, *, dry_run: bool
) -> UndoOutcome:
    marks = await memory.store.checkpoints(ctx.owner)
    mark = next((m for m in marks if m.id == checkpoint_id), None)
    if mark is None:
        gone, most = await memory.store.given_up(ctx.owner), memory.store.max_steps
        raise InvalidArgument(
            f"no checkpoint is named {checkpoint_id!r}"
            + (f"; only the newest {most} checkpoints are kept" if len(marks) >= most else "")
            + (f"; steps up to {gone} were given up, and checkpoints may be too" if gone else ""),
            hint="Rewind to one of the checkpoints listed in details"
            + (f" ({_kept_for(memory)})." if gone else "."),
            details={"checkpoints": [m.id for m in marks], "given_up": gone},
        )
    since = await memory.store.steps(ctx.owner, after=mark.step)
    if await memory.store.given_up(ctx.owner) > mark.step:
        raise InvalidArgument(
            f"steps since checkpoint {checkpoint_id!r} were given up ({_kept_for(memory)}); "
            "nothing was put back",
            hint="Rewind to a later checkpoint, or undo steps one at a time.",
        )
    undone = [step.undid for step in since if step.undid is not None and step.undid <= mark.step]
    if undone:
        raise InvalidArgument(
            f"step {min(undone)}, made before checkpoint {checkpoint_id!r}, was undone since: "
            "a rewind cannot make it again; nothing was put back",
            hint="Rewind to an earlier checkpoint, or undo steps one at a time.",
            details={"undone": min(undone)},
        )
    steps = [step for step in since if step.undid is None]
    if not steps:
        return UndoOutcome(steps=(), files=(), written=not dry_run)
    return await _put_back(ctx, memory, steps, dry_run=dry_run)


@dataclass
class Planned:
    """One file of an undo: the version its steps left, and the one to put back."""

    path: str
    key: str
    resolved: str | None
    """Where the path led within the root (None: not recorded)."""
    left: Version | None
    back: Version | None
    content: bytes | None = None
    gaps: list[tuple[Version | None, Version | None]] = field(default_factory=list)
    """(left, found next) where they differ: another's change, or the same content anew."""
    permissions: Permissions = NO_PERMISSIONS
    """The file's permissions before the steps, for a file they made anew."""
    replaced: bool = False
    """Whether a step deleted, made or moved a file at the path (not only changed it)."""


def _plan(steps: Sequence[Step]) -> dict[str, Planned]:
    """What *steps* (oldest first) did to each file, by key, in the order first touched."""
    planned: dict[str, Planned] = {}
    for step in reversed(steps):  # newest first: the oldest step's "before" wins
        for change in step.changes:
            if change.directory:
                continue
            replaced = None in (change.before, change.after) or change.moved_from is not None
            entry = planned.get(change.key)
            if entry is None:
                planned[change.key] = Planned(
                    path=change.path,
                    key=change.key,
                    resolved=change.resolved,
                    left=change.after,
                    back=change.before,
                    permissions=change.permissions,
                    replaced=replaced,
                )
                continue
            if change.after != entry.back:
                entry.gaps.append((change.after, entry.back))
            entry.back, entry.permissions = change.before, change.permissions
            entry.replaced = entry.replaced or replaced
    return {key: entry for key, entry in planned.items() if entry.left != entry.back or entry.gaps}


async def _seen_after(ctx: Context, seen_before: list[SeenBefore], *, undone: bool) -> None:
    """Put back what the owner had seen of each file, unless *undone*.

    Undone, each file put back is seen as completely as the owner had seen it before the
    undo; partly where a step deleted, made or moved a file at its path (the file seen
    before the undo was another), and where it is made again.
    """
    observations = ctx.opened_fs.file_context.observations
    for key, seen, anew in seen_before:
        if not undone:
            await observations.put(ctx.owner, key, seen)
        elif (anew or seen is None or not seen.complete) and (
            now := await observations.get(ctx.owner, key)
        ) is not None:
            await observations.put(ctx.owner, key, replace(now, complete=False, lines=()))


async def _put_back(
    ctx: Context,
    memory: SessionMemory,
    steps: Sequence[Step],
    *,
    dry_run: bool,
) -> UndoOutcome:
    """Undo *steps*, the owner's last (oldest first)."""
    refuse_unrecorded(steps)
    refuse_another_root(memory, steps)
    if any(change.directory and change.moved_from for step in steps for change in step.changes):
        return await _move_back(ctx, memory, steps, dry_run=dry_run)
    planned, directories = _plan(steps), made([step.changes for step in steps])
    entries = list(planned.values())
    seen_before: list[SeenBefore] = []  # (put back, unless undone)
    covered: list[int] | None = None
    dropped = written = False

    async def drop() -> None:  # (under the locks: the owner's other undos see the steps gone)
        nonlocal dropped
        dropped = True
        await _drop_steps(ctx, memory, steps, covered)

    async def refuse(updates: list[Update]) -> None:  # (every file authorized and locked)
        nonlocal covered
        await refuse_history_changed(ctx, memory, steps)
        if not dry_run:  # (asked now, before anything changes: a mark since counts)
            covered = await _covered_records(ctx, memory, steps)
        await refuse_interleaved(ctx, memory, entries)
        await _fetch_contents(ctx, memory, entries, updates)
        await refuse_changed(
            ctx, memory, entries, updates, reports=reports, seen_before=seen_before
        )

    async with AsyncExitStack() as stack:
        await authorize_removals(ctx, stack, directories, dry_run=dry_run)
        try:
            reports = [
                await stack.enter_async_context(
                    reported(
                        ctx,
                        OpKind.DELETE if entry.back is None else OpKind.WRITE,
                        entry.path,
                        file=True,
                        dry_run=dry_run,
                    )
                )
                for entry in entries
            ]
            await refuse_relocated(ctx, memory, entries, reports)
            async with updating_all(
                ctx,
                reports,
                max_size=None,
                refuse=refuse,
                record=False,
                then=None if dry_run else drop,
            ) as opened:
                if not dry_run:
                    updates = [update for update, _ in opened]
                    await _write_back(ctx, memory, entries, reports, updates)
            written = not dry_run
        except AlreadyBack:
            pass  # (the steps are then dropped, as after writing)
        except (IsADirectory, NotADirectory, NotARegularFile) as error:  # no file there now
            left = next((entry.left for entry in entries if entry.path == error.path), None)
            raise refused(
                [
                    await changed_file(
                        ctx, memory, str(error.path), (left, None), now=None, data=None
                    )
                ],
                f"changed since your step(s), by someone else ({error.message})",
                hint="Leave it as it is, or put a file back there by hand.",
            ) from error
        finally:
            with anyio.CancelScope(shield=True):
                await _seen_after(ctx, seen_before, undone=written)
        if dry_run:
            removed = {entry.path for entry in entries if entry.back is None}
            directories, kept = await removable(ctx, directories, removed)
        else:
            with anyio.CancelScope(shield=True):  # (the files are back: the undo ends whole)
                directories, kept = await remove_made(ctx, directories)
                if not dropped:  # (they were back already)
                    await _drop_steps(ctx, memory, steps, covered)
    return UndoOutcome(
        steps=tuple(step.number for step in reversed(steps)),
        files=tuple(
            RestoredFile(path=entry.path, was=entry.left, now=entry.back) for entry in entries
        ),
        directories=tuple(directories),
        kept_directories=tuple(kept),
        written=not dry_run,
    )


async def _covered_records(
    ctx: Context, memory: SessionMemory, steps: Sequence[Step]
) -> list[int] | None:
    """The owner's undo records that an undo of *steps* covers (dropped with them).

    None where no checkpoint holds one of *steps*: the undo needs no record.
    """
    oldest = min(step.number for step in steps)
    if not any(mark.step >= oldest for mark in await memory.store.checkpoints(ctx.owner)):
        return None
    later = await memory.store.steps(ctx.owner, after=oldest)
    return [step.number for step in later if (step.undid or 0) >= oldest]


async def _drop_steps(
    ctx: Context, memory: SessionMemory, steps: Sequence[Step], covered: list[int] | None
) -> None:
    """Drop the undone *steps* and *covered*, recording the undo first unless *covered* is None.

    None is asked again: a checkpoint marked since (while the files went back) may hold a step.

    Raises:
        Unavailable: The store failed; the files are back all the same, which it says.

    """
    try:
        if covered is None:
            covered = await _covered_records(ctx, memory, steps)
        if covered is not None:
            oldest = min(step.number for step in steps)
            record = FileChange(path="", key="", kind=UNDONE, before=None, after=None, undid=oldest)
            await memory.record(ctx.owner, [record])
        numbers = [*(step.number for step in steps), *(covered or [])]
        await memory.store.drop_steps(ctx.owner, numbers)
    except Exception as failure:  # (a store's bug too)
        raise Unavailable(
            "the files were put back, but the session store could not drop the steps undone "
            f"from your history: {failure}",
            retryable=True,
            hint="Undo the same steps again once the store is back: the files match them "
            "already, so that only drops them.",
            details={"put_back": sorted({c.path for s in steps for c in s.changes if c.path})},
        ) from failure


async def _fetch_contents(
    ctx: Context, memory: SessionMemory, entries: list[Planned], updates: list[Update]
) -> None:
    """Fetch the content each of *entries* goes back to; refuse if one is not kept.

    A content not kept that one of the files (*updates*, as read) holds now is taken from
    it: a moved file goes back whatever its size, where the move kept its version.
    """
    held = {u.current.version: u.current.data for u in updates if u.current is not None}
    given_up = []
    for entry in entries:
        if entry.back is not None:
            entry.content = await memory.content(ctx.owner, entry.back)
            if entry.content is None:
                entry.content = held.get(entry.back)
            if entry.content is None:
                given_up.append(entry.path)
    if given_up:
        raise InvalidArgument(
            f"the content {', '.join(given_up)} held before is not kept (larger than the "
            "session memory's bound, or given up for newer ones); nothing was put back",
            hint="Undo fewer steps, or restore those files by hand.",
            details={"given_up": given_up},
        )


async def _write_back(
    ctx: Context,
    memory: SessionMemory,
    entries: list[Planned],
    reports: list[Report],
    updates: list[Update],
) -> None:
    """Put each file back (noted as the owner's change); on a failure, take back those put back.

    A cancelled call takes them back too.
    """
    done: list[tuple[Update, Version | None]] = []  # each update, and the version it left
    stored: list[tuple[Update, Report]] = []
    try:
        for entry, report, update in zip(entries, reports, updates, strict=True):
            stored.append((update, report))
            if entry.content is not None:
                # the permissions it had, where the steps made the file anew (an edit keeps them)
                anew = update.current is None or entry.replaced
                permissions = entry.permissions if anew else NO_PERMISSIONS
                await store(ctx, report, update, entry.content, permissions=permissions)
                done.append((update, report.after))
            elif update.current is not None:
                await update.delete()
                done.append((update, None))
    except FsError as failure:
        kept = await taken_back(ctx, stored, done)
        raise rolled_back(failure, done, kept, what="the undo") from failure
    except BaseException:
        await taken_back(ctx, stored, done)
        raise
    at = time.time()
    for entry, report in zip(entries, reports, strict=True):
        if entry.content is not None and report.after is not None:
            memory.authored(ctx.owner, report.op.key, report.after, at=at)


async def _move_back(
    ctx: Context,
    memory: SessionMemory,
    steps: Sequence[Step],
    *,
    dry_run: bool,
) -> UndoOutcome:
    """Undo a directory move: the step must be that move alone (with the parents it made)."""
    step = steps[0] if len(steps) == 1 else None
    moves = [] if step is None else [c for c in step.changes if c.moved_from is not None]
    if step is None or len(moves) != 1:
        raise InvalidArgument(
            "a directory move is among these steps; it can be undone only on its own",
            hint="Undo the steps after it first, then the move alone (steps=1).",
        )
    there, here = moves[0].path, moves[0].moved_from
    assert here is not None
    await refuse_another_tree(ctx, there, moves[0].after)  # (the move checks it under the locks)
    if await kind_at(ctx, here) is not None:  # (the move back checks it again, under the locks)
        raise AlreadyExists(
            f"{here} exists again, so the move to {there} cannot be undone; nothing changed",
            path=here,
            hint=f"Move or remove what is at {here} now, then undo again.",
        )
    async with AsyncExitStack() as stack:
        directories = made([step.changes])
        await authorize_removals(ctx, stack, directories, dry_run=dry_run)
        if dry_run:
            directories, kept = await removable(ctx, directories, [there])
        else:
            covered = await _covered_records(ctx, memory, steps)

            async def moved_back() -> None:  # (shielded: the undo ends whole)
                nonlocal directories, kept
                directories, kept = await remove_made(ctx, directories)
                await _drop_steps(ctx, memory, [step], covered)

            kept = []
            await move(
                ctx,
                there,
                here,
                overwrite=False,
                record=False,
                tree=moves[0].after,
                then=moved_back,
            )
    return UndoOutcome(
        steps=(step.number,),
        files=(RestoredFile(path=here, was=None, now=None, moved_back_from=there),),
        directories=tuple(directories),
        kept_directories=tuple(kept),
        written=not dry_run,
    )


async def _memory(ctx: Context) -> SessionMemory:
    """The session memory, its history of the owner complete (a missed step marked)."""
    memory = ctx.opened_fs.session_memory
    if memory is None:
        raise NotEnabled(
            "the session memory is turned off for this store",
            hint="Open the store with session_memory=True to keep checkpoints and undo.",
        )
    if not await memory.history_complete(ctx.owner):
        raise Unavailable(
            "a change of yours could not be recorded (the session store failed), and the "
            "store cannot be told so yet; nothing was done",
            hint="Try again once the session store works, or restore files by hand.",
        )
    return memory
