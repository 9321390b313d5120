"""Listings and the backend's searches, authorized and reported, with what policies hide left out.

A policy hides a path through ``ctxfs_hidden``; an entry is judged on its path
as spelled and on what it resolves to, so a link into a hidden area is hidden
too. None of these records an observation.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import anyio.lowlevel

from ctxfs.core.backend import (
    LISTING_WORK_INLINE_ENTRIES,
    FileKind,
    FileLines,
    FileMatches,
    Listing,
    ListingPage,
    Location,
    listing_work,
)
from ctxfs.core.backend.authorized import authorizing
from ctxfs.core.errors import FsError
from ctxfs.core.globs import relative_to
from ctxfs.core.outcomes import Operation, OpKind
from ctxfs.core.paths import join_path
from ctxfs.core.reports import reported

if TYPE_CHECKING:
    from ctxfs.core.backend import FileSearch, LineSearch
    from ctxfs.core.context import Context

__all__ = ["listed", "listed_page", "listed_tree", "searched_files", "searched_lines"]


async def listed(ctx: Context, path: str, *, details: bool) -> Listing:
    """The entries of directory *path* no policy hides."""
    async with reported(ctx, OpKind.LIST, path, file=False) as report:
        return await _entries(ctx, report.op, details=details)


async def listed_page(ctx: Context, path: str, *, first: int, count: int) -> ListingPage:
    """Entries *first* (1-based) to ``first + count - 1`` of :func:`listed`'s, in detail."""
    async with reported(ctx, OpKind.LIST, path, file=False) as report:
        entries = await _entries(ctx, report.op, details=False)
        page = await ctx.opened_fs.backend.details(entries[first - 1 : first - 1 + count])
    return ListingPage(entries=page, total=len(entries), unnamed=entries.unnamed)


async def _entries(ctx: Context, op: Operation, *, details: bool) -> Listing:
    """The entries of directory *op* (a ``LIST``, located) no policy hides, once authorized."""
    opened_fs = ctx.opened_fs
    await opened_fs.hooks.authorize(ctx, op)
    entries = await opened_fs.backend.list(op.path, details=details)
    if not opened_fs.hooks.hides:
        return entries
    directory = op.resolved  # where the entries are, through links
    leads: dict[str, list[str]] = {}
    for number, entry in enumerate(entries, 1):
        if number % LISTING_WORK_INLINE_ENTRIES == 0:
            await anyio.lowlevel.checkpoint()
        leads[entry.path] = [entry.path, join_path(directory, entry.name)]
        if entry.kind is FileKind.SYMLINK:
            with suppress(FsError):  # a link that leads nowhere it could be read
                leads[entry.path].append((await opened_fs.backend.locate(entry.path)).resolved)
    return await _unhidden(ctx, entries, leads, [p for paths in leads.values() for p in paths])


async def listed_tree(ctx: Context, path: str) -> Listing | None:
    """Every file below directory *path* no policy hides, itself or through a parent."""
    opened_fs = ctx.opened_fs
    async with reported(ctx, OpKind.LIST, path, file=False) as report:
        await opened_fs.hooks.authorize(ctx, report.op)
        entries = await opened_fs.backend.list_tree(report.op.path)
        if entries is None or not opened_fs.hooks.hides:
            return entries
        top = report.op.path

        def leading() -> tuple[dict[str, list[str]], list[str]]:
            leads = {entry.path: _with_parents(entry.path, top) for entry in entries}
            for key in entries.unnamed:
                leads[key] = _named_parents(key, top)
            return leads, sorted({p for paths in leads.values() for p in paths})

        leads, asked = await listing_work(len(entries), leading)
        return await _unhidden(ctx, entries, leads, asked)


async def searched_files(ctx: Context, search: FileSearch) -> FileMatches | None:
    """The backend's answer to *search*, spelled below ``search.path`` as given, hidden left out."""
    opened_fs = ctx.opened_fs
    async with reported(ctx, OpKind.LIST, search.path, file=False) as report:
        await opened_fs.hooks.authorize(ctx, report.op)
        resolved = report.op.resolved
        with authorizing(
            opened_fs.backend, {resolved: Location(resolved=resolved, key=report.op.key)}
        ):
            found = await opened_fs.backend.search_files(replace(search, path=resolved))
        if found is None or (report.op.path == resolved and not opened_fs.hooks.hides):
            return found
        hides, spelled_at = opened_fs.hooks.hides, report.op.path

        def spellings() -> tuple[_Spelled, _Spelled, list[str]]:
            spelled = _spelled(found.counts, spelled_at, resolved)
            unsearched = _spelled(dict.fromkeys(found.unsearched, 0), spelled_at, resolved)
            every = [*spelled.items(), *unsearched.items()] if hides else []
            return spelled, unsearched, [p for path, (real, _) in every for p in (path, real)]

        size = len(found.counts) + len(found.unsearched)
        spelled, unsearched, every = await listing_work(size, spellings)
        hidden = await opened_fs.hooks.hidden(ctx, every) if every else set()

        def unhidden(spelled: _Spelled) -> dict[str, int]:
            return {
                path: count
                for path, (real, count) in spelled.items()
                if path not in hidden and real not in hidden
            }

        return replace(
            found,
            counts=await listing_work(len(spelled), partial(unhidden, spelled)),
            unsearched=frozenset(unhidden(unsearched)),
            searched=None if hides else found.searched,  # (with the files no one may see)
        )


_Spelled = dict[str, tuple[str, int]]
"""Paths as the caller spells them, each with the path found and its count."""


def _spelled(counts: dict[str, int], path: str, resolved: str) -> _Spelled:
    """Each path of *counts* (below *resolved*) spelled below *path*: its path found, its count."""
    if path == resolved:  # no link on the way: every path is spelled as found
        return {found_path: (found_path, count) for found_path, count in counts.items()}
    return {
        join_path(path, relative_to(found_path, resolved)): (found_path, count)
        for found_path, count in counts.items()
    }


async def searched_lines(ctx: Context, search: LineSearch) -> FileLines | None:
    """The backend's answer to *search* over the files a policy lets be read, spelled as given."""
    opened_fs = ctx.opened_fs
    spelled: dict[str, str] = {}
    judged: dict[str, Location] = {}  # each file where the policies judged it, as searched
    for path in search.paths:
        await anyio.lowlevel.checkpoint()  # many files: let a cancel land between them
        with suppress(FsError):  # refused, gone: left out, for reading to say why
            async with reported(ctx, OpKind.READ, path, file=True) as report:
                await opened_fs.hooks.authorize(ctx, report.op)
                searched = report.op.resolved or report.op.path
                spelled[searched] = path
                judged[searched] = Location(resolved=searched, key=report.op.key)
    with authorizing(opened_fs.backend, judged):
        found = await opened_fs.backend.search_lines(replace(search, paths=tuple(spelled)))
    if found is None:
        return None
    return replace(found, lines={spelled[p]: lines for p, lines in found.lines.items()})


async def _unhidden(
    ctx: Context, entries: Listing, leads: dict[str, list[str]], asked: list[str]
) -> Listing:
    """*entries* (and their unnamed keys) but those with a path in *leads* a policy hides.

    The policies are asked about *asked*.
    """
    hidden = await ctx.opened_fs.hooks.hidden(ctx, asked)

    def unhidden() -> Listing:
        kept = (e for e in entries if hidden.isdisjoint(leads[e.path]))
        named = tuple(key for key in entries.unnamed if hidden.isdisjoint(leads.get(key, ())))
        return Listing(kept, unnamed=named)

    return await listing_work(len(entries), unhidden)


def _named_parents(key: str, top: str) -> list[str]:
    """The directories below *top* a key no path names lies in, as far as paths name them."""
    segments = key.split("/")[:-1]
    for end, segment in enumerate(segments):
        if segment in ("", ".", ".."):
            segments = segments[:end]
            break
    parent = "/".join(segments)
    return _with_parents(parent, top) if parent and parent != top else []


def _with_parents(path: str, top: str) -> list[str]:
    """*path* and each directory between it and *top* (a directory above it)."""
    paths, parent = [path], path.rpartition("/")[0]
    while parent and parent != top:
        paths.append(parent)
        parent = parent.rpartition("/")[0]
    return paths
