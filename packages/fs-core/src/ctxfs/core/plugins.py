"""Plugin managers: one per ``Fs``, built-ins first, then entry points, then yours.

Set ``CTXFS_DISABLE_PLUGINS`` to a comma-separated list of plugin names (entry
point names, or the names given at registration) to keep them from loading:
a blocked entry point is never imported.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Final, TypeVar

import pluggy

from ctxfs.core import hookspecs
from ctxfs.core.errors import FsError

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.outcomes import Operation
    from ctxfs.core.versions import Version

__all__ = ["DISABLE_ENV", "ENTRY_POINT_GROUP", "PluginHost", "create_plugin_manager"]

ENTRY_POINT_GROUP: Final = "ctxfs.plugins"
DISABLE_ENV: Final = "CTXFS_DISABLE_PLUGINS"

T = TypeVar("T")


def create_plugin_manager(
    *,
    builtins: Iterable[tuple[object, str]] = (),
    plugins: Iterable[object] = (),
    load_entrypoints: bool = True,
) -> pluggy.PluginManager:
    """Return a new plugin manager with every plugin registered and validated.

    Order: the hook specifications (and, through ``ctxfs_addhooks``, those other
    packages add as their plugins register); *builtins* as ``(plugin, name)`` pairs; the
    names listed in ``CTXFS_DISABLE_PLUGINS`` are blocked; entry points of group
    ``ctxfs.plugins`` are loaded (unless *load_entrypoints* is false); then
    *plugins*. Finally every implementation is checked against a specification.

    Raises:
        pluggy.PluginValidationError: A plugin implements a hook no specification
            declares, or with arguments its specification does not have.

    """
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.hook.ctxfs_addhooks.call_historic(kwargs={"pluginmanager": manager})
    for plugin, name in builtins:
        manager.register(plugin, name=name)
    for name in blocked_plugin_names():
        manager.set_blocked(name)
    if load_entrypoints:
        manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    for plugin in plugins:
        manager.register(plugin)
    manager.check_pending()
    return manager


def blocked_plugin_names() -> list[str]:
    """Return the plugin names listed in ``CTXFS_DISABLE_PLUGINS``."""
    return [name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",") if name.strip()]


async def resolve(results: Sequence[T | Awaitable[T]]) -> list[T]:
    """Await every awaitable among hook *results*, in order, and return the values."""
    return [await result if inspect.isawaitable(result) else result for result in results]


class PluginHost:
    """Typed calls into the hooks of one plugin manager.

    The host awaits what implementations return and applies the rule of each
    hook ("any refusal wins"), so callers never touch ``manager.hook`` directly.
    """

    def __init__(self, manager: pluggy.PluginManager) -> None:
        self.manager = manager

    async def authorize(self, ctx: Context, op: Operation) -> None:
        """Raise the first refusal any ``ctxfs_authorize`` implementation gives."""
        _raise_first_refusal(await resolve(self.manager.hook.ctxfs_authorize(ctx=ctx, op=op)))

    def mutation_locks(
        self, ctx: Context, op: Operation
    ) -> list[AbstractAsyncContextManager[object]]:
        """Return the locks to hold around *op*, in the order to enter them."""
        locks = self.manager.hook.ctxfs_mutation_lock(ctx=ctx, op=op)
        return [lock for lock in locks if lock is not None]

    async def check_version(self, ctx: Context, op: Operation, current: Version | None) -> None:
        """Raise the first refusal any ``ctxfs_check_version`` implementation gives."""
        votes = self.manager.hook.ctxfs_check_version(ctx=ctx, op=op, current=current)
        _raise_first_refusal(await resolve(votes))

    async def observed(self, ctx: Context, path: str, version: Version, complete: bool) -> None:
        """Tell every observer that the owner of *ctx* has seen *path* at *version*."""
        hook = self.manager.hook.ctxfs_observed
        await resolve(hook(ctx=ctx, path=path, version=version, complete=complete))

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
        self, ctx: Context, op: Operation, before: Version | None, after: Version | None
    ) -> None:
        """Tell every observer that *op* has been stored."""
        hook = self.manager.hook.ctxfs_committed
        await resolve(hook(ctx=ctx, op=op, before=before, after=after))


def _raise_first_refusal(votes: Iterable[object]) -> None:
    for vote in votes:
        if isinstance(vote, FsError):
            raise vote
        if vote is not None:
            raise TypeError(f"a ctxfs vote must be None or an FsError, got {vote!r}")
