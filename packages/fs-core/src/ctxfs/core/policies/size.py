"""``MaxFileSize``: no write, edit or insert of a file larger than a limit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxfs.core.errors import FsError, NotFound, TooLarge
from ctxfs.core.hookspecs import hookimpl
from ctxfs.core.outcomes import OpKind

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.outcomes import Operation

__all__ = ["MaxFileSize"]


class MaxFileSize:
    """Refuse writes of more than *max_bytes*, and edits of files already larger."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    @hookimpl
    async def ctxfs_authorize(self, ctx: Context, op: Operation) -> FsError | None:
        """Check the new size of a write, or the current size of the file an edit changes."""
        if op.kind is OpKind.WRITE:
            size = op.size or 0
        elif op.kind in (OpKind.EDIT, OpKind.INSERT):
            try:
                size = (await ctx.opened_fs.backend.stat(op.path)).size or 0
            except NotFound:
                return None  # the operation itself will say so
        else:
            return None
        if size <= self.max_bytes:
            return None
        return TooLarge(
            f"{op.path} would be {size} bytes; files here are limited to {self.max_bytes}",
            path=op.path,
            hint="Split the content into smaller files, or change less at once.",
            details={"size": size, "max_size": self.max_bytes},
        )
