"""The calls of ``ctx.fs`` that look around and observe nothing: listings, searches, stat.

:class:`~ctxfs.core.ContextFs` inherits them. Each is authorized like a read
(a file) or a listing (a directory), and none records an observation: a
change still needs a read of the file.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING

from ctxfs.core.backend import (
    FileLines,
    FileMatches,
    FileSearch,
    LineSearch,
    Listing,
    ListingPage,
    Stat,
)
from ctxfs.core.listings import listed, listed_page, listed_tree, searched_files, searched_lines
from ctxfs.core.outcomes import OpKind
from ctxfs.core.reads import numbered_lines
from ctxfs.core.reports import reported
from ctxfs.core.versions import ABSENT, Absent

if TYPE_CHECKING:
    from ctxfs.core.context import Context

__all__ = ["Browsing"]


class Browsing:
    """Listings, searches and stat of one context (the base of ``ContextFs``)."""

    __slots__ = ()
    _ctx: Context

    async def lines(
        self, path: str, *, max_line_chars: int | Absent | None = ABSENT
    ) -> AsyncGenerator[tuple[int, str]]:
        """Yield ``(number, line)`` for each line of a text file, streaming it.

        A search primitive: authorized like a read, it records no observation.
        Lines longer than *max_line_chars* (default: the read cap) are cut; with
        None, whole lines are yielded. Close the iterator
        (``contextlib.aclosing``) if you stop early.

        Raises:
            NotFound, IsADirectory, BinaryFile, EncodingError: The file is missing,
                a directory, or not text in an encoding ctxfs can round-trip.
            FsError: Any refusal of a policy.

        """
        async with aclosing(numbered_lines(self._ctx, path, max_line_chars)) as numbered:
            async for item in numbered:
                yield item

    async def list(self, path: str = "") -> Listing:
        """List a directory (the root by default), sorted by name.

        Entries a policy hides (``ctxfs_hidden``: a denied name, or a link to
        one) are left out; so are those no path can name (counted in
        :attr:`Listing.unnamed`).
        """
        return await listed(self._ctx, path, details=True)

    async def list_page(self, path: str = "", *, first: int, count: int) -> ListingPage:
        """Entries *first* (1-based) to ``first + count - 1`` of :meth:`list`'s, and its total.

        Only the page's entries are looked at in detail.
        """
        return await listed_page(self._ctx, path, first=first, count=count)

    async def list_tree(self, path: str = "") -> Listing | None:
        """Every file below a directory, sorted by path, where the store lists a tree at once.

        None where it does not (walk it with :meth:`list`): nothing is then
        authorized or reported. What a policy hides is left out: a file, or one
        below a hidden directory.
        """
        if not self._ctx.opened_fs.backend.capabilities.tree_listing:
            return None
        return await listed_tree(self._ctx, path)

    async def search_files(self, search: FileSearch) -> FileMatches | None:
        """The files below ``search.path`` holding a match, by the backend's own engine.

        A search primitive, authorized as a listing of the directory. None when
        the backend has no engine for it (search through :meth:`list` and
        :meth:`lines` then). Paths come spelled below ``search.path`` as given;
        files a policy hides are left out.
        """
        if not self._ctx.opened_fs.backend.capabilities.file_search:
            return None
        return await searched_files(self._ctx, search)

    async def search_lines(self, search: LineSearch) -> FileLines | None:
        """The matching lines of ``search.paths``, by the backend's own engine.

        A search primitive: each file is authorized like a read (a file refused
        or gone is left out). None when the backend has no engine for it; a file
        the answer leaves out is to be read with :meth:`lines`. Paths come back
        spelled as given.
        """
        if not self._ctx.opened_fs.backend.capabilities.line_search:
            return None
        return await searched_lines(self._ctx, search)

    async def stat(self, path: str) -> Stat:
        """Return the metadata of a file or directory."""
        async with reported(self._ctx, OpKind.STAT, path, file=False) as report:
            await self._ctx.opened_fs.hooks.authorize(self._ctx, report.op)
            return await self._ctx.opened_fs.backend.stat(report.op.path)
