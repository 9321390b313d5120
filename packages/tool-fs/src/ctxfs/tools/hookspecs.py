"""Deprecated: ``ctxfs.core.hookspecs`` declares every hook, ``ctxfs_tool_exposure`` too.

A plugin that registered this module, or called :func:`declare`, needs to do
neither: every ``Fs`` knows the hook.
"""

import warnings

import pluggy

from ctxfs.core import hookimpl, hookspec

__all__ = ["declare", "hookimpl", "hookspec"]

warnings.warn(
    "ctxfs.tools.hookspecs is deprecated: ctxfs.core.hookspecs declares every hook",
    DeprecationWarning,
    stacklevel=2,
)


def declare(manager: pluggy.PluginManager) -> None:
    """Nothing to do: ``ctxfs_tool_exposure`` is declared on every plugin manager."""
    del manager
