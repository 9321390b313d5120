"""Plugin managers: one per ``Fs``, built-in plugins first, then entry points, then yours.

Set ``CTXFS_DISABLE_PLUGINS`` to a comma-separated list of plugin names (entry
point names, or the names given at registration) to keep them from loading: a
blocked entry point is never imported. The guard (the file-context plugin,
:data:`FILE_CONTEXT_PLUGIN`) is asked by :class:`PluginHost` itself, never through
pluggy: blocking or unregistering it, or wrapping its hooks, takes nothing from it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Final, TypeVar

import anyio.lowlevel
import pluggy

from ctxfs.core import hookspecs
from ctxfs.core.backend import LISTING_WORK_INLINE_ENTRIES
from ctxfs.core.errors import FsError

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.filecontext import FileContextPlugin, LineRanges, Observation
    from ctxfs.core.outcomes import Operation
    from ctxfs.core.versions import Version

__all__ = [
    "DISABLE_ENV",
    "ENTRY_POINT_GROUP",
    "FILE_CONTEXT_PLUGIN",
    "PluginHost",
    "create_plugin_manager",
]

ENTRY_POINT_GROUP: Final = "ctxfs.plugins"
DISABLE_ENV: Final = "CTXFS_DISABLE_PLUGINS"
FILE_CONTEXT_PLUGIN: Final = "ctxfs.file_context"
"""The registration name of the built-in file-context plugin, the guard."""

T = TypeVar("T")


def create_plugin_manager(
    *,
    builtin: Iterable[tuple[object, str]] = (),
    plugins: Iterable[object] = (),
    load_entrypoints: bool = True,
) -> pluggy.PluginManager:
    """Return a new plugin manager with every plugin registered and validated.

    In order: the hook specifications (and, through ``ctxfs_addhooks``, those other
    packages add); the *builtin* ``(plugin, name)`` pairs; the names in
    ``CTXFS_DISABLE_PLUGINS`` blocked; the ``ctxfs.plugins`` entry points (if
    *load_entrypoints*); *plugins*. Then every implementation is checked.

    Raises:
        pluggy.PluginValidationError: A plugin implements a hook no specification
            declares, or with arguments its specification does not have.

    """
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.hook.ctxfs_addhooks.call_historic(kwargs={"pluginmanager": manager})
    for plugin, name in builtin:
        manager.register(plugin, name=name)
    blocked = (name.strip() for name in os.environ.get(DISABLE_ENV, "").split(","))
    for name in filter(None, blocked):
        manager.set_blocked(name)
    if load_entrypoints:
        manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    for plugin in plugins:
        manager.register(plugin)
    manager.check_pending()
    return manager


async def resolve(results: Sequence[T | Awaitable[T]]) -> list[T]:
    """Await every awaitable among hook *results*, in order, and return the values."""
    return [await result if inspect.isawaitable(result) else result for result in results]


class PluginHost:
    """Typed calls into the hooks of one plugin manager, each hook's rule applied.

    The *guard* (the file-context plugin) is registered as a plugin, but the host
    asks it itself, first, and every other plugin through pluggy: no other plugin
    (a hook wrapper, say) can drop its vote or its lock.
    """

    def __init__(self, manager: pluggy.PluginManager, *, guard: FileContextPlugin) -> None:
        self.manager = manager
        self.guard = guard
        others = partial(manager.subset_hook_caller, remove_plugins=[guard])
        self._check_version = others("ctxfs_check_version")
        self._mutation_lock = others("ctxfs_mutation_lock")
        self._observed = others("ctxfs_observed")
        self._committed = others("ctxfs_committed")

    @property
    def asks_tool_exposure(self) -> bool:
        """Whether any plugin implements ``ctxfs_tool_exposure`` (else an offer is fixed)."""
        return bool(self.manager.hook.ctxfs_tool_exposure.get_hookimpls())

    async def tool_exposure(self, ctx: Context, tool: str, *, writes: bool) -> list[object]:
        """Every ``ctxfs_tool_exposure`` answer for *tool*, awaited, as given (None: no opinion)."""
        hook = self.manager.hook.ctxfs_tool_exposure
        return await resolve(hook(ctx=ctx, tool=tool, writes=writes))

    @property
    def hides(self) -> bool:
        """Whether a plugin may hide paths (if none, listings and counts are kept whole).

        One that implements ``ctxfs_hidden``, unless its ``hides`` attribute is False.
        """
        implementations = self.manager.hook.ctxfs_hidden.get_hookimpls()
        return any(getattr(found.plugin, "hides", True) for found in implementations)

    async def hidden(self, ctx: Context, paths: Sequence[str]) -> set[str]:
        """The paths among *paths* some ``ctxfs_hidden`` implementation leaves out."""
        hook = self.manager.hook.ctxfs_hidden
        if not paths or not hook.get_hookimpls():
            return set()
        named: set[str] = set()
        for start in range(0, len(paths), LISTING_WORK_INLINE_ENTRIES):  # the loop's turns
            if start:
                await anyio.lowlevel.checkpoint()
            batch = paths[start : start + LISTING_WORK_INLINE_ENTRIES]
            named.update(*(answer or () for answer in await resolve(hook(ctx=ctx, paths=batch))))
        return named

    async def authorize(self, ctx: Context, op: Operation) -> None:
        """Raise the first refusal any ``ctxfs_authorize`` implementation gives."""
        _raise_first_refusal(await resolve(self.manager.hook.ctxfs_authorize(ctx=ctx, op=op)))

    def mutation_locks(
        self, ctx: Context, op: Operation
    ) -> list[AbstractAsyncContextManager[object]]:
        """Return the locks to hold around *op*, in the order to enter them: the guard's first."""
        locks = self._mutation_lock(ctx=ctx, op=op)
        return [self.guard.ctxfs_mutation_lock(ctx, op), *(lock for lock in locks if lock)]

    async def check_version(
        self, ctx: Context, op: Operation, current: Version | None
    ) -> Observation | None:
        """Raise the first refusal any ``ctxfs_check_version`` implementation gives.

        The guard votes first; its observation (what the owner had seen) is returned,
        for an undone change to put back.
        """
        guard, seen = await self.guard.check(ctx.owner, op, current)
        votes = self._check_version(ctx=ctx, op=op, current=current)
        _raise_first_refusal([guard, *await resolve(votes)])
        return seen

    async def observed(
        self,
        ctx: Context,
        op: Operation,
        version: Version,
        complete: bool,
        *,
        lines: LineRanges = (),
        total_lines: int | None = None,
    ) -> None:
        """Tell every observer that the owner of *ctx* has read *op*'s file at *version*.

        The guard also learns which *lines* of *total_lines* a window showed uncut.
        """
        await self.guard.observe(
            ctx.owner,
            op.key,
            version,
            complete=complete,
            lines=lines,
            total_lines=total_lines,
            path=op.path,
        )
        await resolve(self._observed(ctx=ctx, path=op.path, version=version, complete=complete))

    async def finished(
        self,
        ctx: Context,
        op: Operation,
        error: FsError | None,
        before: Version | None,
        after: Version | None,
    ) -> None:
        """Tell every listener how *op* ended."""
        hook = self.manager.hook.ctxfs_finished
        await resolve(hook(ctx=ctx, op=op, error=error, before=before, after=after))

    async def committed(
        self,
        ctx: Context,
        op: Operation,
        before: Version | None,
        after: Version | None,
        *,
        seen: Observation | None,
    ) -> None:
        """Tell every observer that *op* has been stored (*seen*: what the owner had seen)."""
        await self.guard.committed(ctx.owner, op, after, seen=seen)
        await resolve(self._committed(ctx=ctx, op=op, before=before, after=after))

    async def moved(self, ctx: Context, moves: Sequence[tuple[Operation, Operation]]) -> None:
        """Tell every observer that a directory move carried each ``(leaving, arriving)`` pair.

        Called under the locks, once moved. The guard carries the owner's observations
        to the arriving keys; the others learn of each operation through
        ``ctxfs_committed``, without versions (no content changed).
        """
        await self.guard.follow(ctx.owner, moves)
        for pair in moves:
            for op in pair:
                await resolve(self._committed(ctx=ctx, op=op, before=None, after=None))


def _raise_first_refusal(votes: Iterable[object]) -> None:
    for vote in votes:
        if isinstance(vote, FsError):
            raise vote
        if vote is not None:
            raise TypeError(f"a ctxfs vote must be None or an FsError, got {vote!r}")
