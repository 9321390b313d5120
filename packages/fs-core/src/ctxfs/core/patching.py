"""``apply_patch``: a patch over several files, checked whole, then written side by side."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

import anyio

from ctxfs.core.backend import NO_PERMISSIONS
from ctxfs.core.errors import AlreadyExists, BackendError, FsError, InvalidArgument, NoChange
from ctxfs.core.moves import moving
from ctxfs.core.mutations import Opened, Refusal, rolled_back, store, taken_back, updating_all
from ctxfs.core.outcomes import OpKind, PatchedFile, PatchOutcome
from ctxfs.core.reports import Report, reported
from ctxfs.core.text import AnyDocument, Change, FilePatch, PatchAction, patch_document
from ctxfs.core.textwork import decoded, rewritten, text_work, utf8_size

if TYPE_CHECKING:
    from ctxfs.core.backend import Update
    from ctxfs.core.context import Context
    from ctxfs.core.versions import Version

__all__ = ["apply_patch"]

_PATCH_KINDS: Final = {
    PatchAction.ADD: OpKind.WRITE,
    PatchAction.UPDATE: OpKind.EDIT,
    PatchAction.DELETE: OpKind.DELETE,
}
"""The operation each part of a patch is (an update with ``move_to`` is two moves)."""


async def apply_patch(ctx: Context, patches: Sequence[FilePatch], *, dry_run: bool) -> PatchOutcome:
    """:meth:`ContextFs.apply_patch <ctxfs.core.ContextFs.apply_patch>`."""
    if not patches:
        raise InvalidArgument("the patch changes no file", hint="Give at least one file.")
    async with AsyncExitStack() as stack:
        parts = [
            await stack.enter_async_context(_patch_part(ctx, patch, dry_run)) for patch in patches
        ]
        reports = [report for part in parts for report in part.reports]
        async with updating_all(ctx, reports, refuse=_refusal(parts)) as opened:
            updates = iter(opened)
            for part in parts:
                part.opened = [next(updates) for _ in part.reports]
            for part in parts:  # every check, before anything is written
                part.change = await _patched(ctx, part)
            if not dry_run:
                await _write_parts(ctx, parts)
    return PatchOutcome(files=tuple(part.outcome() for part in parts), written=not dry_run)


@dataclass
class _PatchPart:
    """One file's part of a patch, as :func:`apply_patch` works on it."""

    patch: FilePatch
    reports: list[Report]
    """One operation, or two for a move (source, destination)."""
    opened: list[Opened] = field(default_factory=list)
    change: tuple[Change, AnyDocument] | None = None

    def outcome(self) -> PatchedFile:
        first, last = self.reports[0], self.reports[-1]
        change = None if self.change is None else self.change[0]
        return PatchedFile(
            path=first.op.path,
            action=self.patch.action,
            version=last.after,
            previous_version=first.before,
            moved_to=last.op.path if last is not first else None,
            first_line=1 if change is None else change.first_line,
            last_line=1 if change is None else change.last_line,
            diff=None if change is None or first.before is None else change.diff,
        )


@asynccontextmanager
async def _patch_part(ctx: Context, patch: FilePatch, dry_run: bool) -> AsyncIterator[_PatchPart]:
    """The operations of one file's part of a patch, reported however the patch ends."""
    if patch.move_to is not None and patch.action is PatchAction.UPDATE:
        async with moving(ctx, patch.path, patch.move_to, file=True, dry_run=dry_run) as pair:
            yield _PatchPart(patch=patch, reports=list(pair))
        return
    size = None
    if patch.action is PatchAction.ADD:
        size = await utf8_size(patch.content or "")
    async with reported(
        ctx, _PATCH_KINDS[patch.action], patch.path, file=True, size=size, dry_run=dry_run
    ) as report:
        yield _PatchPart(patch=patch, reports=[report])


async def _patched(ctx: Context, part: _PatchPart) -> tuple[Change, AnyDocument] | None:
    """What *part* writes (None: a delete, or a move without hunks), checked, unwritten."""
    patch, (update, _), report = part.patch, part.opened[0], part.reports[0]
    path, current = report.op.path, update.current
    if patch.action is PatchAction.DELETE or (patch.move_to and not patch.hunks):
        return None
    if patch.action is PatchAction.ADD:
        content = patch.content or ""
        document, change = await rewritten(ctx, path, current, content, size=report.op.size or 0)
        return change, document
    assert current is not None  # refused before, when missing
    located = replace(patch, path=path)

    def hunks() -> tuple[Change, AnyDocument]:
        document = decoded(ctx, path, current)
        return patch_document(document, located), document

    try:
        return await text_work(current.size, hunks, costly=len(patch.hunks) > 1)
    except NoChange:
        if patch.move_to is None:
            raise
        return None  # a move, no more


async def _write_parts(ctx: Context, parts: list[_PatchPart]) -> None:
    """Write every checked part, files side by side; on a failure, put back what was written.

    No part's failure cancels another's writes: every write that lands is known.
    """
    done: list[tuple[Update, Version | None]] = []  # each update, and the version it left
    failures: list[tuple[int, Exception]] = []
    stored = [
        (update, report)
        for part in parts
        for (update, _), report in zip(part.opened, part.reports, strict=True)
    ]

    async def write(index: int, part: _PatchPart) -> None:
        try:
            await _write_part(ctx, part, done)
        except Exception as failure:  # (a store's bug too, raised as itself once all is back)
            failures.append((index, failure))

    try:
        async with anyio.create_task_group() as group:
            for index, part in enumerate(parts):
                group.start_soon(write, index, part)
    except BaseException:
        await taken_back(ctx, stored, done)
        raise
    if failures:
        bugs = [failure for _, failure in failures if not isinstance(failure, FsError)]
        failure = bugs[0] if bugs else min(failures, key=lambda pair: pair[0])[1]
        kept = await taken_back(ctx, stored, done)
        if not isinstance(failure, FsError) and not kept:
            raise failure
        order = {update.path: n for n, part in enumerate(parts) for update, _ in part.opened}
        done.sort(key=lambda pair: order[pair[0].path])
        told = (  # a store's bug with files left changed is told as one, saying which
            failure
            if isinstance(failure, FsError)
            else BackendError(f"the store failed: {failure!r}", path=parts[0].patch.path)
        )
        raise rolled_back(told, done, kept, what="the patch") from failure


async def _write_part(
    ctx: Context, part: _PatchPart, done: list[tuple[Update, Version | None]]
) -> None:
    last = part.reports[-1]
    (update, _), (there, _) = part.opened[0], part.opened[-1]
    if part.patch.action is PatchAction.DELETE:
        await update.delete()
        done.append((update, None))
    elif part.change is None:  # a move, no more
        last.after = await update.move(there)
        done += [(update, None), (there, last.after)]
    else:
        change, document = part.change
        moved = there is not update  # (its permissions go with it)
        permissions = update.permissions if moved else NO_PERMISSIONS
        await store(ctx, last, there, change.data, document, permissions=permissions)
        done.append((there, last.after))
        if moved:
            await update.delete()
            done.append((update, None))


def _refusal(parts: list[_PatchPart]) -> Refusal:
    """Refuse a patch naming a path inside another, or changing a file that is not there.

    A path with another inside it would be a file and a directory at once.
    """
    named = {report.op.key: report for part in parts for report in part.reports}

    async def refuse(updates: list[Update]) -> None:
        for report in named.values():
            key = report.op.key
            while (cut := key.rfind("/")) > 0:
                key = key[:cut]
                if (outer := named.get(key)) is not None:
                    raise InvalidArgument(
                        f"the patch changes {outer.op.path} and {report.op.path}, inside it: "
                        "a file cannot be a directory too",
                        path=outer.op.path,
                        hint="Change one of them in a patch of its own, then the other.",
                    )
        at = 0
        for part in parts:
            update, at = updates[at], at + len(part.reports)
            if part.patch.action is not PatchAction.ADD and update.current is None:
                raise await update.missing()
            arriving = part.reports[-1]
            if len(part.reports) == 2 and updates[at - 1].current is not None:  # (a move)
                raise AlreadyExists(
                    f"{arriving.op.path} already exists: the patch would move "
                    f"{part.reports[0].op.path} over it",
                    path=arriving.op.path,
                    hint="Move to a path where no file is, or delete that file in a call "
                    "of its own first.",
                )

    return refuse
