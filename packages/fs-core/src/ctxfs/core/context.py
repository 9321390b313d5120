"""Execution contexts and ``ctx.fs``, the owner-bound seam every tool calls.

Each operation runs the same pipeline: the path is checked as a string, the
policies vote (``ctxfs_authorize``), and only then is the store touched. A
mutation then takes the locks, reads the current version, lets the checkers
vote on it, writes with the store's compare-and-swap and reports the commit;
see :mod:`ctxfs.core.hookspecs` for the order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from ctxfs.core import text
from ctxfs.core.errors import AlreadyExists, NotFound, Stale
from ctxfs.core.outcomes import EditOutcome, Operation, OpKind, ReadOutcome, WriteOutcome
from ctxfs.core.paths import normalize_path
from ctxfs.core.versions import ABSENT

if TYPE_CHECKING:
    from ctxfs.core.backend import Blob, Stat
    from ctxfs.core.fs import Fs

__all__ = ["Context", "ContextFs"]


class Context:
    """One execution context: an owner (an agent, a session) in a workspace.

    Observations are kept per owner, so two contexts with the same owner share
    what they have read. Create contexts with :meth:`Fs.context`.
    """

    __slots__ = ("_fs", "mount", "owner", "workspace")

    def __init__(self, mount: Fs, *, owner: str, workspace: str | None = None) -> None:
        if not owner:
            raise ValueError("a context needs a non-empty owner")
        self.mount = mount
        """The :class:`Fs` this context works on."""
        self.owner = owner
        self.workspace = workspace
        self._fs = ContextFs(self)

    @property
    def fs(self) -> ContextFs:
        """File operations on behalf of this context's owner."""
        return self._fs

    def __repr__(self) -> str:
        return f"Context(owner={self.owner!r}, workspace={self.workspace!r})"


class ContextFs:
    """The file operations of one context. Failures raise ``FsError`` subclasses."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def read(self, path: str, *, offset: int = 1, limit: int | None = None) -> ReadOutcome:
        """Read up to *limit* lines of a text file from 1-based line *offset*.

        Raises:
            NotFound, IsADirectory, BinaryFile, EncodingError, InvalidArgument,
            and any refusal of a policy.

        """
        ctx, mount = self._ctx, self._ctx.mount
        op = Operation(kind=OpKind.READ, path=normalize_path(path, file=True))
        await mount.hooks.authorize(ctx, op)
        blob = await mount.backend.read(op.path)
        cut = text.window(text.decode(blob.data, path=op.path), offset=offset, limit=limit)
        partial = cut.offset > 1 or cut.next_offset is not None
        await mount.hooks.observed(ctx, op.path, blob.version, complete=not partial)
        return ReadOutcome(
            path=op.path,
            text=cut.text,
            version=blob.version,
            offset=cut.offset,
            returned_lines=cut.returned_lines,
            total_lines=cut.total_lines,
            next_offset=cut.next_offset,
            partial=partial,
        )

    async def write(self, path: str, content: str) -> WriteOutcome:
        """Create a file, or replace one the owner has read whole, with *content*.

        Raises:
            NotObserved, Stale, Busy, IsADirectory, NotADirectory, and any
            refusal of a policy.

        """
        data = text.encode(content)
        op = Operation(kind=OpKind.WRITE, path=normalize_path(path, file=True), size=len(data))
        async with self._mutation(op):
            current = await self._current(op.path)
            before = current.version if current is not None else None
            await self._ctx.mount.hooks.check_version(self._ctx, op, before)
            try:
                after = await self._ctx.mount.backend.write(
                    op.path, data, expect=before if before is not None else ABSENT
                )
            except AlreadyExists:
                raise Stale(
                    f"{op.path} was created by someone else meanwhile", path=op.path
                ) from None
            await self._ctx.mount.hooks.committed(self._ctx, op, before, after)
        return WriteOutcome(
            path=op.path,
            version=after,
            previous_version=before,
            created=before is None,
            size=len(data),
        )

    async def edit(
        self, path: str, old_string: str, new_string: str, *, replace_all: bool = False
    ) -> EditOutcome:
        """Replace *old_string* by *new_string* in a file the owner has read.

        *old_string* must occur exactly once unless *replace_all* is set.

        Raises:
            EmptyOldString, NoChange, NotFound, NotObserved, Stale, NoMatch,
            AmbiguousMatch, Busy, and any refusal of a policy.

        """
        text.check_edit_strings(old_string, new_string)
        op = Operation(kind=OpKind.EDIT, path=normalize_path(path, file=True))
        async with self._mutation(op):
            current = await self._ctx.mount.backend.read(op.path)
            await self._ctx.mount.hooks.check_version(self._ctx, op, current.version)
            edited = text.apply_edit(
                text.decode(current.data, path=op.path),
                old_string,
                new_string,
                replace_all=replace_all,
                path=op.path,
            )
            after = await self._ctx.mount.backend.write(
                op.path, text.encode(edited.text), expect=current.version
            )
            await self._ctx.mount.hooks.committed(self._ctx, op, current.version, after)
        return EditOutcome(
            path=op.path,
            version=after,
            previous_version=current.version,
            replacements=edited.replacements,
            first_line=edited.first_line,
            last_line=edited.last_line,
        )

    async def delete(self, path: str) -> None:
        """Delete a file the owner has read (any window of its current version).

        Raises:
            NotFound, NotObserved, Stale, Busy, IsADirectory, and any refusal of a policy.

        """
        op = Operation(kind=OpKind.DELETE, path=normalize_path(path, file=True))
        async with self._mutation(op):
            current = await self._ctx.mount.backend.read(op.path)
            await self._ctx.mount.hooks.check_version(self._ctx, op, current.version)
            await self._ctx.mount.backend.delete(op.path, expect=current.version)
            await self._ctx.mount.hooks.committed(self._ctx, op, current.version, None)

    async def list(self, path: str = "") -> list[Stat]:
        """List a directory (the root by default), sorted by name."""
        op = Operation(kind=OpKind.LIST, path=normalize_path(path))
        await self._ctx.mount.hooks.authorize(self._ctx, op)
        return await self._ctx.mount.backend.list(op.path)

    async def stat(self, path: str) -> Stat:
        """Return the metadata of a file or directory."""
        op = Operation(kind=OpKind.STAT, path=normalize_path(path))
        await self._ctx.mount.hooks.authorize(self._ctx, op)
        return await self._ctx.mount.backend.stat(op.path)

    async def mkdir(self, path: str) -> None:
        """Create a directory and its missing parents."""
        op = Operation(kind=OpKind.MKDIR, path=normalize_path(path))
        await self._ctx.mount.hooks.authorize(self._ctx, op)
        await self._ctx.mount.backend.mkdir(op.path)

    @asynccontextmanager
    async def _mutation(self, op: Operation) -> AsyncIterator[None]:
        """Authorize *op*, then hold every mutation lock around the block."""
        hooks = self._ctx.mount.hooks
        await hooks.authorize(self._ctx, op)
        async with AsyncExitStack() as stack:
            for lock in hooks.mutation_locks(self._ctx, op):
                await stack.enter_async_context(lock)
            yield

    async def _current(self, path: str) -> Blob | None:
        try:
            return await self._ctx.mount.backend.read(path)
        except NotFound:
            return None
