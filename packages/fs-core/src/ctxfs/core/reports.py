"""The entry of every ``ctx.fs`` call: its path checked and located once, its end reported."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ctxfs.core.backend.authorized import authorizing
from ctxfs.core.errors import BackendError, FsError
from ctxfs.core.outcomes import Operation, OpKind
from ctxfs.core.paths import normalize_path

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.observations import Observation
    from ctxfs.core.versions import Version

__all__ = ["Report", "reported"]


@dataclass
class Report:
    """What an operation did, as far as it got: for ``ctxfs_finished``."""

    op: Operation
    before: Version | None = None
    after: Version | None = None
    seen: Observation | None = None
    """What the owner had seen of the file before the change (put back if it is undone)."""
    written: bytes | None = None
    """The content the operation stored, when it wrote one (for the session memory)."""
    made: list[str] = field(default_factory=list)
    """The directories a file's creation made, outermost first (a step of the session memory;
    removed again, if left empty, when the change is undone)."""

    @property
    def found(self) -> Version:
        """The version the operation found (it must have found one)."""
        if self.before is None:
            raise RuntimeError("the operation found no file")  # pragma: no cover
        return self.before

    @property
    def stored(self) -> Version:
        """The version the operation stored (it must have stored one)."""
        if self.after is None:
            raise RuntimeError("the operation stored nothing")  # pragma: no cover
        return self.after


@asynccontextmanager
async def reported(
    ctx: Context,
    kind: OpKind,
    path: str,
    *,
    file: bool,
    size: int | None = None,
    dry_run: bool = False,
    judged_in_block: bool = True,
) -> AsyncIterator[Report]:
    """Normalize *path*, locate it, run the block, then report the operation however it ended.

    The block gets the operation with the canonical path, what it resolves to
    and the file's key (:meth:`Backend.locate`), and works on those only: the
    backend opens nothing else (:mod:`ctxfs.core.backend.authorized`). A
    path that cannot be located is authorized first: what a denied area holds
    (a file in the way, a link out) is not told. With *judged_in_block* false, the
    block itself sets where the path was judged around its backend calls (a generator
    must: its context is its consumer's).
    """
    report = Report(op=Operation(kind=kind, path=path, size=size, dry_run=dry_run))
    opened_fs = ctx.opened_fs
    hooks = opened_fs.hooks
    try:
        canonical = normalize_path(path, file=file)
        report.op = Operation(kind=kind, path=canonical, size=size, dry_run=dry_run)
        try:
            where = await opened_fs.backend.locate(canonical)
        except FsError:
            await hooks.authorize(ctx, report.op)
            raise
        report.op = replace(report.op, resolved=where.resolved, key=where.key)
        with (
            authorizing(opened_fs.backend, {canonical: where}) if judged_in_block else nullcontext()
        ):
            yield report
    except FsError as error:
        await hooks.finished(ctx, report.op, error, report.before, report.after)
        raise
    except Exception as bug:
        failure = BackendError(f"{kind} failed unexpectedly: {bug!r}", path=report.op.path)
        await hooks.finished(ctx, report.op, failure, report.before, report.after)
        raise
    await hooks.finished(ctx, report.op, None, report.before, report.after)
