"""What changed since an owner's reads: the files it saw that hold another version now."""

from __future__ import annotations

from contextlib import ExitStack, suppress
from dataclasses import replace
from typing import TYPE_CHECKING

from ctxfs.core.backend import FileKind, Location
from ctxfs.core.backend.authorized import authorizing
from ctxfs.core.errors import InvalidPath, NotADirectory, NotFound, OutsideRoot, Refused, TooLarge
from ctxfs.core.outcomes import ChangedFile, Operation, OpKind

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.versions import Version

__all__ = ["changed"]


async def changed(ctx: Context) -> list[ChangedFile]:
    """:meth:`ContextFs.changed <ctxfs.core.ContextFs.changed>`."""
    opened_fs = ctx.opened_fs
    owned = await opened_fs.file_context.observations.owned(ctx.owner)
    found = []
    for key, seen in owned.items():
        path = seen.path or key
        with ExitStack() as judged:
            try:  # what the policies let the owner read now (where the kernel resolves it), only
                where = await _located(ctx, path)
                if where is not None and where.key != key:
                    continue  # seen in another root sharing the store, or reached by a link since
                op = Operation(kind=OpKind.READ, path=path, key=key)
                if where is not None:
                    op = replace(op, resolved=where.resolved, key=where.key)
                await opened_fs.hooks.authorize(ctx, op)
                if where is not None:  # (and only there, whatever links change meanwhile)
                    judged.enter_context(authorizing(opened_fs.backend, {path: where}))
                now, data, kind = await _current(ctx, path)
            except (OutsideRoot, InvalidPath):  # the path, or a parent, is a link out or a loop now
                now, data, kind = None, None, FileKind.SYMLINK
            except Refused:
                continue
            if now != seen.version:
                found.append(
                    await _changed_file(ctx, path, key, seen.version, now=now, data=data, kind=kind)
                )
    return sorted(found, key=lambda changed_file: changed_file.path)


async def _located(ctx: Context, path: str) -> Location | None:
    """Where *path* resolves now (a parent may be a link now); None if a parent is gone."""
    try:
        return await ctx.opened_fs.backend.locate(path)
    except (NotFound, NotADirectory):  # (a file where a parent was too)
        return None


async def _current(ctx: Context, path: str) -> tuple[Version | None, bytes | None, FileKind | None]:
    """*path*'s version now (None: no file), its content if read, its kind if not a file."""
    backend, memory = ctx.opened_fs.backend, ctx.opened_fs.session_memory
    try:
        stat = await backend.stat(path)
    except (NotFound, NotADirectory):
        return None, None, None
    if stat.kind is not FileKind.FILE:
        return None, None, stat.kind
    if stat.version is not None:
        return stat.version, None, None
    try:
        if memory is not None:
            with suppress(TooLarge):
                blob = await backend.read(path, max_size=memory.store.max_bytes_per_owner)
                return blob.version, blob.data, None
        async with backend.open_read(path) as stream:
            async for _ in stream:
                pass
    except NotFound:  # gone meanwhile
        return None, None, None
    return stream.version, None, None


async def _changed_file(
    ctx: Context,
    path: str,
    key: str,
    seen: Version,
    *,
    now: Version | None,
    data: bytes | None,
    kind: FileKind | None,
) -> ChangedFile:
    """How *path* changed since the owner saw *seen* (*data*: its content now, if read)."""
    memory = ctx.opened_fs.session_memory
    diff, author = None, None
    if memory is not None and now is not None:
        author = memory.author(key, now)
        old = await memory.content(ctx.owner, seen)
        if old is not None and data is None:
            try:
                blob = await ctx.opened_fs.backend.read(
                    path, max_size=memory.store.max_bytes_per_owner
                )
            except (NotFound, TooLarge):  # gone meanwhile, or too large to diff: no diff
                blob = None
            if blob is not None and blob.version != seen:
                data = blob.data
        if old is not None and data is not None:
            diff = await memory.diff(ctx, path, old, data)
    return ChangedFile(
        path=path,
        seen=seen,
        current=now,
        current_kind=kind,
        diff=None if diff is None else diff.text,
        diff_whole=diff is not None and diff.whole,
        changed_by=None if author is None else author[0],
        changed_at=None if author is None else author[1],
    )
