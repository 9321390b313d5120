"""Plugin managers: one per ``Fs``, essential plugins first, then entry points, then yours.

Set ``CTXFS_DISABLE_PLUGINS`` to a comma-separated list of plugin names (entry
point names, or the names given at registration) to keep them from loading:
a blocked entry point is never imported.

An *essential* plugin (the file-context plugin, :data:`FILE_CONTEXT_PLUGIN`, is
one: it is the guard that refuses unobserved and stale changes) is registered
first and cannot be removed, as pytest's core plugins cannot: naming it in
``CTXFS_DISABLE_PLUGINS`` (in any spelling), ``set_blocked`` or ``unregister``
raises :class:`~ctxfs.core.errors.InvalidArgument` instead.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

import pluggy

from ctxfs.core import hookspecs
from ctxfs.core.errors import FsError, InvalidArgument

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
    "PluginManager",
    "create_plugin_manager",
]

ENTRY_POINT_GROUP: Final = "ctxfs.plugins"
DISABLE_ENV: Final = "CTXFS_DISABLE_PLUGINS"
FILE_CONTEXT_PLUGIN: Final = "ctxfs.file_context"
"""The registration name of the built-in file-context plugin, an essential one."""
_ESSENTIAL_SPELLINGS: Final = {
    FILE_CONTEXT_PLUGIN: frozenset(
        {"ctxfsfilecontext", "filecontext", "filecontextplugin", "ctxfscorefilecontext"}
    )
}
"""Every way of naming an essential plugin, letters and digits only, case-folded."""


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, with essential plugins that nothing can block or unregister."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self._essential: dict[str, object] = {}

    def register_essential(self, plugin: object, name: str) -> None:
        """Register *plugin* as *name*, for good."""
        self.register(plugin, name=name)
        self._essential[name] = plugin

    def set_blocked(self, name: str) -> None:
        """Block *name*, as pluggy does; an essential plugin's name is refused."""
        _refuse_essential(name, source="set_blocked", essential=self._essential)
        super().set_blocked(name)

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any | None:
        """Unregister a plugin, as pluggy does; an essential plugin is refused."""
        if name is not None:
            _refuse_essential(name, source="unregister", essential=self._essential)
        for essential_name, essential in self._essential.items():
            if plugin is essential:
                _refuse_essential(essential_name, source="unregister", essential=self._essential)
        return super().unregister(plugin, name)


T = TypeVar("T")


def create_plugin_manager(
    *,
    essential: Iterable[tuple[object, str]] = (),
    plugins: Iterable[object] = (),
    load_entrypoints: bool = True,
) -> PluginManager:
    """Return a new plugin manager with every plugin registered and validated.

    Order: the hook specifications (and, through ``ctxfs_addhooks``, those other
    packages add as their plugins register); the *essential* plugins as
    ``(plugin, name)`` pairs; the names listed in ``CTXFS_DISABLE_PLUGINS`` are
    blocked; entry points of group ``ctxfs.plugins`` are loaded (unless
    *load_entrypoints* is false); then *plugins*. Finally every implementation
    is checked against a specification.

    Raises:
        InvalidArgument: ``CTXFS_DISABLE_PLUGINS`` names an essential plugin.
        pluggy.PluginValidationError: A plugin implements a hook no specification
            declares, or with arguments its specification does not have.

    """
    blocked = blocked_plugin_names()
    for name in blocked:
        _refuse_essential(name, source=DISABLE_ENV)
    manager = PluginManager()
    manager.add_hookspecs(hookspecs)
    manager.hook.ctxfs_addhooks.call_historic(kwargs={"pluginmanager": manager})
    for plugin, name in essential:
        manager.register_essential(plugin, name)
    for name in blocked:
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


def _refuse_essential(name: str, *, source: str, essential: Iterable[str] = ()) -> None:
    """Raise ``InvalidArgument`` if *name* names an essential plugin.

    Any spelling of a built-in essential plugin counts (``FileContext``,
    ``file_context``); the *essential* plugins of a manager count by their names.
    """
    spelling = "".join(char for char in name.casefold() if char.isalnum())
    found = next(
        (p for p, spellings in _ESSENTIAL_SPELLINGS.items() if spelling in spellings), None
    )
    if found is None and name in essential:
        found = name
    if found is not None:
        raise InvalidArgument(
            f"the plugin {found!r} is essential and cannot be disabled ({source} named "
            f"{name!r}): it is the guard that refuses changes to files an owner has not read, "
            "or has read at another version",
            hint=f"Remove {name!r} from {source}; to refuse more, add a policy plugin.",
            details={"plugin": found, "source": source, "name": name},
        )


async def resolve(results: Sequence[T | Awaitable[T]]) -> list[T]:
    """Await every awaitable among hook *results*, in order, and return the values."""
    return [await result if inspect.isawaitable(result) else result for result in results]


class PluginHost:
    """Typed calls into the hooks of one plugin manager.

    The host awaits what implementations return and applies the rule of each
    hook ("any refusal wins"), so callers never touch ``manager.hook`` directly.

    The *guard* (the file-context plugin) is registered as a plugin, but the host
    asks it itself, first, and every other plugin through pluggy: no other
    plugin (a hook wrapper, say) can drop its vote or its lock, and taking it
    out of the plugin manager takes nothing away from the host.
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
        """Whether any plugin implements ``ctxfs_tool_exposure``.

        If none does, a toolset's offer is its configuration's alone: it can be
        worked out once.
        """
        return bool(self.manager.hook.ctxfs_tool_exposure.get_hookimpls())

    async def tool_exposure(self, ctx: Context, tool: str, *, writes: bool) -> list[object]:
        """Every ``ctxfs_tool_exposure`` answer for *tool*, awaited (None: no opinion).

        The answers are returned as given; the toolset validates them.
        """
        hook = self.manager.hook.ctxfs_tool_exposure
        return await resolve(hook(ctx=ctx, tool=tool, writes=writes))

    @property
    def hides(self) -> bool:
        """Whether any plugin implements ``ctxfs_hidden`` (if none, listings are kept whole)."""
        return bool(self.manager.hook.ctxfs_hidden.get_hookimpls())

    async def hidden(self, ctx: Context, paths: Sequence[str]) -> set[str]:
        """The paths among *paths* some ``ctxfs_hidden`` implementation leaves out."""
        hook = self.manager.hook.ctxfs_hidden
        if not paths or not hook.get_hookimpls():
            return set()
        named: set[str] = set()
        for answer in await resolve(hook(ctx=ctx, paths=paths)):
            named.update(answer or ())
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

        The guard votes first. Returns what the owner had seen of the file (the
        guard's observation), for an undone change to put back.
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
            ctx.owner, op.key, version, complete=complete, lines=lines, total_lines=total_lines
        )
        hook = self._observed
        await resolve(hook(ctx=ctx, path=op.path, version=version, complete=complete))

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
        await self.guard.ctxfs_committed(ctx, op, before, after)
        await resolve(self._committed(ctx=ctx, op=op, before=before, after=after))

    async def moved(self, ctx: Context, moves: Sequence[tuple[Operation, Operation]]) -> None:
        """Tell every observer that a directory move carried each ``(leaving, arriving)`` pair.

        Called under the locks, once the directory has moved. The guard carries
        the owner's observations from each leaving key to the arriving one; other
        observers learn of every operation through ``ctxfs_committed``, with no
        versions (the files were not read: their content did not change).
        """
        await self.guard.follow(ctx.owner, [(old.key, new.key) for old, new in moves])
        for pair in moves:
            for op in pair:
                await resolve(self._committed(ctx=ctx, op=op, before=None, after=None))


def _raise_first_refusal(votes: Iterable[object]) -> None:
    for vote in votes:
        if isinstance(vote, FsError):
            raise vote
        if vote is not None:
            raise TypeError(f"a ctxfs vote must be None or an FsError, got {vote!r}")
