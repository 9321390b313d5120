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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ctxfs.core.backend import NO_PERMISSIONS, FileKind, Permissions
from ctxfs.core.directories import authorize_removals, made, removable, remove_made
from ctxfs.core.errors import (
    AlreadyExists,
    FsError,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotARegularFile,
    NotEnabled,
    NotFound,
    Stale,
    Unavailable,
)
from ctxfs.core.moves import another_tree, entries_below, kind_at, move, tree_version
from ctxfs.core.mutations import rolled_back, store, taken_back, updating_all
from ctxfs.core.outcomes import OpKind, RestoredFile, UndoOutcome
from ctxfs.core.reports import Report, reported
from ctxfs.core.sessions import Checkpoint, FileChange, Step
from ctxfs.core.sessions.base import UNDONE, UNRECORDED

if TYPE_CHECKING:
    from ctxfs.core.backend import Update
    from ctxfs.core.context import Context
    from ctxfs.core.observations import Observation
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


async def undo(ctx: Context, steps: int, *, dry_run: bool) -> UndoOutcome:
    """:meth:`ContextFs.undo <ctxfs.core.ContextFs.undo>`."""
    memory = await _memory(ctx)
    given: object = steps  # (a caller without type checks may pass anything)
    if not isinstance(given, int) or isinstance(given, bool) or given < 1:
        raise InvalidArgument(
            f"steps must be a whole number, 1 or more, got {steps!r}", details={"field": "steps"}
        )
    async with memory.undoing(ctx.owner):
        return await _undo(ctx, memory, steps, dry_run=dry_run)


async def _undo(ctx: Context, memory: SessionMemory, steps: int, *, dry_run: bool) -> UndoOutcome:
    history = await memory.store.steps(ctx.owner)
    kept = [step for step in history if step.undid is None]
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
        gone = await memory.store.given_up(ctx.owner)
        raise InvalidArgument(
            f"no checkpoint is named {checkpoint_id!r}"
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
class _Planned:
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


def _plan(steps: Sequence[Step]) -> dict[str, _Planned]:
    """What *steps* (oldest first) did to each file, by key, in the order first touched."""
    planned: dict[str, _Planned] = {}
    for step in reversed(steps):  # newest first: the oldest step's "before" wins
        for change in step.changes:
            if change.directory:
                continue
            replaced = None in (change.before, change.after) or change.moved_from is not None
            entry = planned.get(change.key)
            if entry is None:
                planned[change.key] = _Planned(
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


async def _put_back(
    ctx: Context,
    memory: SessionMemory,
    steps: Sequence[Step],
    *,
    dry_run: bool,
) -> UndoOutcome:
    """Undo *steps*, the owner's last (oldest first)."""
    _refuse_unrecorded(steps)
    if any(change.directory and change.moved_from for step in steps for change in step.changes):
        return await _move_back(ctx, memory, steps, dry_run=dry_run)
    planned, directories = _plan(steps), made([step.changes for step in steps])
    entries = list(planned.values())
    seen_before: list[tuple[str, Observation | None]] = []  # (a dry run puts them back)
    covered: list[int] | None = None
    dropped = False

    async def drop() -> None:  # (under the locks: the owner's other undos see the steps gone)
        nonlocal dropped
        dropped = True
        await _drop_steps(ctx, memory, steps, covered)

    async def refuse(updates: list[Update]) -> None:  # (every file authorized and locked)
        nonlocal covered
        await _refuse_history_changed(ctx, memory, steps)
        if not dry_run:  # (asked now, before anything changes: a mark since counts)
            covered = await _covered_records(ctx, memory, steps)
        await _refuse_interleaved(ctx, memory, entries)
        await _fetch_contents(ctx, memory, entries)
        await _refuse_changed(ctx, memory, entries, updates, seen_before if dry_run else None)

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
            await _refuse_relocated(ctx, memory, entries, reports)
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
                    await _write_back(ctx, entries, reports, updates)
        except _AlreadyBack:
            pass  # (the steps are then dropped, as after writing)
        except (IsADirectory, NotADirectory, NotARegularFile) as error:  # no file there now
            left = next((entry.left for entry in entries if entry.path == error.path), None)
            raise _refused(
                [await _changed(ctx, memory, str(error.path), (left, None), now=None, data=None)],
                f"changed since your step(s), by someone else ({error.message})",
                hint="Leave it as it is, or put a file back there by hand.",
            ) from error
        finally:
            with anyio.CancelScope(shield=True):
                for key, seen in seen_before:
                    await ctx.opened_fs.file_context.observations.put(ctx.owner, key, seen)
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
    """
    if covered is None:
        covered = await _covered_records(ctx, memory, steps)
    if covered is not None:
        oldest = min(step.number for step in steps)
        record = FileChange(path="", key="", kind=UNDONE, before=None, after=None, undid=oldest)
        await memory.record(ctx.owner, [record])
    await memory.store.drop_steps(ctx.owner, [*(step.number for step in steps), *(covered or [])])


def _refuse_unrecorded(steps: Sequence[Step]) -> None:
    """Refuse to undo *steps* if the owner's history misses a step among them."""
    missed = [step.number for step in steps if any(c.kind == UNRECORDED for c in step.changes)]
    if missed:
        raise InvalidArgument(
            f"changes made before step {missed[-1] + 1} could not be recorded (the session "
            "store failed then), so they cannot be undone; nothing was put back",
            hint=f"Undo only the steps after step {missed[-1]}, or restore files by hand.",
            details={"unrecorded": missed[-1]},
        )


async def _fetch_contents(ctx: Context, memory: SessionMemory, entries: list[_Planned]) -> None:
    """Fetch the content each of *entries* goes back to; refuse if one is not kept."""
    given_up = []
    for entry in entries:
        if entry.back is not None:
            entry.content = await memory.content(ctx.owner, entry.back)
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
    entries: list[_Planned],
    reports: list[Report],
    updates: list[Update],
) -> None:
    """Put each file back; if one fails (or the call is cancelled), undo those put back."""
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
    await _refuse_another_tree(ctx, there, moves[0].after)  # (the move checks it under the locks)
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
        files=(RestoredFile(path=here, was=None, now=None),),
        directories=tuple(directories),
        kept_directories=tuple(kept),
        written=not dry_run,
    )


async def _refuse_another_tree(ctx: Context, there: str, moved: Version | None) -> None:
    """Refuse to move back what is at *there* unless it is the directory tree moved there."""
    try:
        now = tree_version(await entries_below(ctx, there)) if moved is not None else None
    except (NotFound, NotADirectory):
        now = None
    if now != moved or await kind_at(ctx, there) is not FileKind.DIRECTORY:
        raise another_tree(there)


async def _refuse_changed(
    ctx: Context,
    memory: SessionMemory,
    entries: list[_Planned],
    updates: list[Update],
    seen_before: list[tuple[str, Observation | None]] | None,
) -> None:
    """Refuse the undo if a file is not as the owner's steps left it; else observe each.

    What the owner had seen goes to *seen_before*, if given (a dry run puts it back).
    Raises ``_AlreadyBack`` if every file is as the undo leaves it already.
    """
    pairs = list(zip(entries, updates, strict=True))
    if all(_holds(update, entry.back, entry.content) for entry, update in pairs):
        raise _AlreadyBack
    changed_files = []
    for entry, update in pairs:
        if _holds(update, entry.left, None):
            continue
        left = None if entry.left is None else await memory.content(ctx.owner, entry.left)
        if not _holds(update, entry.left, left):
            now, data = None, None
            if update.current is not None:
                now, data = update.current.version, update.current.data
            changed_files.append(
                await _changed(ctx, memory, entry.path, (entry.left, left), now=now, data=data)
            )
    if changed_files:
        raise _refused(
            changed_files,
            "changed since your step(s), by someone else",
            hint="Leave those files as they are, or read them and change them by hand.",
        )
    # each file is as the owner's steps left it: that is what it saw (a restart may
    # have lost its observations), so the guard lets the undo change it
    file_context = ctx.opened_fs.file_context
    for entry, update in pairs:
        if update.current is not None:
            if seen_before is not None:
                seen_before.append(
                    (entry.key, await file_context.observation(ctx.owner, entry.key))
                )
            await file_context.observe(
                ctx.owner, entry.key, update.current.version, complete=True, path=entry.path
            )


async def _refuse_relocated(
    ctx: Context, memory: SessionMemory, entries: list[_Planned], reports: list[Report]
) -> None:
    """Refuse the undo if a path now leads to another file than the owner's steps changed.

    Within the root: the same root reached by another name (moved, mounted elsewhere,
    another host name) leads to the same files.
    """
    relocated = [
        await _changed(ctx, memory, entry.path, (entry.left, None), now=None, data=None)
        for entry, report in zip(entries, reports, strict=True)
        if entry.resolved is not None and report.op.resolved != entry.resolved
    ]
    if relocated:
        raise _refused(
            relocated,
            "now lead(s) to another file than your step(s) changed (a symbolic link on the "
            "path was changed)",
            hint="Point the link back, or change those files by hand.",
        )


def _holds(update: Update, version: Version | None, content: bytes | None) -> bool:
    """Whether the file *update* read is at *version* (None: missing), or holds *content*."""
    current = update.current
    if current is None or version is None:
        return current is None and version is None
    return current.version == version or (content is not None and current.data == content)


async def _refuse_history_changed(
    ctx: Context, memory: SessionMemory, steps: Sequence[Step]
) -> None:
    """Refuse the undo unless *steps* are still the owner's last, as the history was read.

    Another call of the owner's may have undone them, or made a step, since.
    """
    oldest = min(step.number for step in steps)
    now = await memory.store.steps(ctx.owner, after=oldest - 1)
    if [step.number for step in now if step.undid is None] != [step.number for step in steps]:
        raise Stale(
            "another call of yours undid or made steps while this one was starting; "
            "nothing was put back",
            hint="Look at what changed (changes), then undo again if still needed.",
            details={"steps": [step.number for step in steps]},
        )


async def _refuse_interleaved(ctx: Context, memory: SessionMemory, entries: list[_Planned]) -> None:
    """Refuse the undo if another change came between the owner's steps to a file."""
    changed_files = []
    for entry in entries:
        for was, became in entry.gaps:
            data = None if became is None else await memory.content(ctx.owner, became)
            old = None if was is None or data is None else await memory.content(ctx.owner, was)
            if old is not None and old == data:
                continue  # the same content under a new version
            changed_files.append(
                await _changed(ctx, memory, entry.path, (was, old), now=became, data=data)
            )
            break
    if changed_files:
        raise _refused(
            changed_files,
            "changed between your steps, by someone else (or by a change that was not recorded)",
            hint="Undo fewer steps (those after that change), or change those files by hand.",
        )


async def _changed(
    ctx: Context,
    memory: SessionMemory,
    path: str,
    left: tuple[Version | None, bytes | None],
    *,
    now: Version | None,
    data: bytes | None,
) -> dict[str, object]:
    """A file of a refused undo: the version (and content) *left*, the one *now*, the diff."""
    version, old = left
    diff = None if old is None or data is None else await memory.diff(ctx, path, old, data)
    return {"path": path, "left": version, "current": now, "diff": diff and diff.text}


class _AlreadyBack(Exception):
    """Every file of an undo is as it leaves them already: there is nothing to write."""


def _refused(changed_files: list[dict[str, object]], what: str, *, hint: str) -> Stale:
    paths = [str(changed["path"]) for changed in changed_files]
    diffs = [str(changed["diff"]) for changed in changed_files if changed["diff"]]
    return Stale(
        f"{', '.join(paths)} {what}; nothing was put back",
        path=paths[0],
        hint=hint,
        details={"changed": changed_files, "diff": "\n".join(diffs) or None},
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
