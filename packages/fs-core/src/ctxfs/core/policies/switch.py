"""``IntegrationSwitch``: what a switched-off capability governs can be read, not changed.

While a capability is off, changes to the paths it governs are refused
``not_enabled``, and the writing tools are hidden.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from ctxfs.core.errors import FsError, NotEnabled
from ctxfs.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.outcomes import Operation

__all__ = ["IntegrationSwitch", "Integrations", "StaticIntegrations"]


class Integrations(Protocol):
    """The port: whether capability *key* is on in *workspace* (sync or async)."""

    def enabled(self, workspace: str | None, key: str) -> bool | Awaitable[bool]:
        """Whether *key* is on in *workspace*."""
        ...  # pragma: no cover - a protocol


class StaticIntegrations:
    """An in-memory port: capabilities on unless listed off, per workspace or everywhere."""

    def __init__(self, off: Mapping[str | None, Iterable[str]] | None = None) -> None:
        self.off: dict[str | None, set[str]] = {
            workspace: set(keys) for workspace, keys in (off or {}).items()
        }

    def enabled(self, workspace: str | None, key: str) -> bool:
        """On unless switched off for *workspace* or for every workspace (``None``)."""
        return key not in self.off.get(workspace, set()) and key not in self.off.get(None, set())

    def switch(self, key: str, *, on: bool, workspace: str | None = None) -> None:
        """Turn *key* on or off (for one workspace, or for all with ``None``)."""
        keys = self.off.setdefault(workspace, set())
        if on:
            keys.discard(key)
        else:
            keys.add(key)


class IntegrationSwitch:
    """Gate changes (and the writing tools) behind capabilities that can be switched off.

    Args:
        integrations: The port.
        key_of: The capability governing a path, or None.
        keys: Every capability *key_of* can return; while any is off, the
            writing tools are hidden.
        writing_tools: The names of the tools to hide while a capability is off;
            by default, every tool that declares it writes.

    """

    def __init__(
        self,
        integrations: Integrations,
        *,
        key_of: Callable[[str], str | None],
        keys: Iterable[str],
        writing_tools: Iterable[str] | None = None,
    ) -> None:
        self.integrations = integrations
        self.key_of = key_of
        self.keys = tuple(keys)
        self.writing_tools = None if writing_tools is None else frozenset(writing_tools)

    async def _enabled(self, workspace: str | None, key: str) -> bool:
        answer = self.integrations.enabled(workspace, key)
        return bool(await answer) if inspect.isawaitable(answer) else bool(answer)

    @hookimpl
    async def ctxfs_authorize(self, ctx: Context, op: Operation) -> FsError | None:
        """Refuse a change to what a switched-off capability governs."""
        if not op.kind.mutates:
            return None
        for key in dict.fromkeys((self.key_of(op.path), self.key_of(op.resolved))):
            if key is not None and not await self._enabled(ctx.workspace, key):  # (both paths)
                return NotEnabled(
                    f"{op.path} belongs to {key!r}, which is switched off in this workspace",
                    path=op.path,
                    hint=f"{key!r} is off here: its files can be read but not changed; "
                    "do not retry.",
                    details={"capability": key},
                )
        return None

    @hookimpl
    async def ctxfs_tool_exposure(self, ctx: Context, tool: str, writes: bool) -> str | None:
        """Hide the writing tools while any governed capability is off."""
        hides = writes if self.writing_tools is None else tool in self.writing_tools
        if not hides:
            return None
        for key in self.keys:
            if not await self._enabled(ctx.workspace, key):
                return "hidden"
        return None
