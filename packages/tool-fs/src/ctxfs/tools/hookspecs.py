"""The hook ctxfs-tools adds to project ``ctxfs``: which tools a step offers.

This module is also a plugin (entry point ``ctxfs.plugins``: ``ctxfs-tools``)
whose ``ctxfs_addhooks`` declares the hook on every ``Fs``; ``FsToolset``
declares it too, for managers built without entry points.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING

import pluggy

from ctxfs.core.hookspecs import hookimpl, hookspec

if TYPE_CHECKING:
    from ctxfs.core import Context

__all__ = ["declare", "hookimpl", "hookspec"]


@hookspec
def ctxfs_tool_exposure(ctx: Context, tool: str) -> str | Awaitable[str | None] | None:
    """Say how *tool* is offered to the model of *ctx* in this step.

    Called for every tool each time definitions are built. Return
    ``"direct"`` (offered as a tool), ``"deferred"`` (found through
    ``search_tools`` and run through ``call_tool``), ``"hidden"`` (neither
    offered nor callable), or None for no opinion. Every implementation runs
    and every awaitable is awaited; the most restrictive answer wins
    (hidden over deferred over direct), so a plugin can hide but never reveal.

    Args:
        ctx: The execution context the definitions are for.
        tool: The tool's name (``read``, ``write``, ...).

    """


@hookimpl
def ctxfs_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Declare this module's hooks on a new plugin manager."""
    declare(pluginmanager)


def declare(manager: pluggy.PluginManager) -> None:
    """Add the hooks of ctxfs-tools to *manager* unless they are there already."""
    if not hasattr(manager.hook, "ctxfs_tool_exposure"):
        manager.add_hookspecs(sys.modules[__name__])
