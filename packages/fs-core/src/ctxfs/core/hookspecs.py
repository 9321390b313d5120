"""The hooks of project ``ctxfs``: where plugins see and steer every ``ctx.fs`` call.

Any implementation may return an awaitable (``async def`` does): the host awaits
every returned value before it decides anything (no hook is ``firstresult``, and
no decision depends on pluggy's call order).

One mutation (write, edit, delete) runs the hooks in this order::

    ctxfs_authorize            every policy votes; a refusal ends the call, nothing locked
    ctxfs_mutation_lock        locks entered in call order, released in reverse
      (the backend reads the current version)
      ctxfs_check_version      every checker votes on the current version
      (the backend writes with the store's compare-and-swap)
      ctxfs_committed          observers learn the new version, still under the locks
    ctxfs_finished             every operation, success or failure, reports how it ended

A read runs ``ctxfs_authorize``, the backend, ``ctxfs_observed``, then
``ctxfs_finished``. A toolset (ctxfs-tools) asks ``ctxfs_tool_exposure`` for every
tool, once per step, before it offers any. Third-party plugins are found through
the entry point group ``ctxfs.plugins``; an implementation of an undeclared hook
fails when the plugin manager is set up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Final

import pluggy

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.errors import FsError
    from ctxfs.core.outcomes import Operation
    from ctxfs.core.versions import Version

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT: Final = "ctxfs"
"""The pluggy project name; every hook is named ``ctxfs_*``."""

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marker for hook specifications (used here, and by packages adding hooks)."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marker for hook implementations: decorate plugin functions with it."""


@hookspec(historic=True)
def ctxfs_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Add hook specifications from another package (``pluginmanager.add_hookspecs``).

    Historic: called for every plugin as it registers, whatever order plugins load
    in. Must be synchronous.

    Args:
        pluginmanager: The plugin manager of the ``Fs`` being set up.

    """


@hookspec
def ctxfs_authorize(ctx: Context, op: Operation) -> FsError | Awaitable[FsError | None] | None:
    """Vote on an operation before anything is locked, read or written.

    Every implementation runs; if any refused, the call fails with that refusal and
    nothing else happens. Return None to allow; to refuse, return (or raise, which
    skips the remaining implementations) an :class:`~ctxfs.core.errors.FsError`,
    usually ``Denied``, ``NotEnabled``, ``CheckedOut`` or ``TooLarge``.

    Args:
        ctx: The execution context (owner, workspace) asking.
        op: The operation, with its canonical root-relative path.

    """


@hookspec
def ctxfs_mutation_lock(ctx: Context, op: Operation) -> AbstractAsyncContextManager[object] | None:
    """Return a lock to hold around the read-compare-write of a mutation, or None.

    Called after authorization, synchronously (the lock itself is asynchronous).
    The host enters the locks in call order, leaves them in reverse, and runs
    ``ctxfs_check_version``, the store write and ``ctxfs_committed`` inside them.
    A lock not acquired within its bounded wait raises ``Busy`` (retryable) or
    ``CheckedOut``.

    Args:
        ctx: The execution context asking.
        op: The mutation about to run.

    """


@hookspec
def ctxfs_check_version(
    ctx: Context, op: Operation, current: Version | None
) -> FsError | Awaitable[FsError | None] | None:
    """Vote on a mutation given the version the store holds now, under the locks.

    Every implementation runs; any refusal fails the call with nothing written.
    The file-context plugin refuses here with ``NotObserved`` (the owner never saw
    this file, or for a whole-file write saw only part of it) or ``Stale`` (the
    owner saw another version).

    Args:
        ctx: The execution context asking.
        op: The mutation about to run.
        current: The file's version now, or None when it does not exist.

    """


@hookspec
def ctxfs_observed(
    ctx: Context, path: str, version: Version, complete: bool
) -> Awaitable[None] | None:
    """Learn that the owner of *ctx* has just seen *path* at *version* (every successful read).

    Args:
        ctx: The execution context that read.
        path: Canonical root-relative path.
        version: The version of the whole file the read came from.
        complete: Whether the owner saw the whole file, not just a window of it.

    """


@hookspec
def ctxfs_committed(
    ctx: Context, op: Operation, before: Version | None, after: Version | None
) -> Awaitable[None] | None:
    """Learn that a mutation has been stored; called under the mutation locks.

    The file-context plugin records the owner's new observation first. If any
    implementation raises (the observation store failed, say) or the call is
    cancelled meanwhile, the mutation is undone under the locks and the call fails
    with what was raised: a mutation is committed with its observation or not at all.

    A directory move reports a ``MOVE`` pair (leaving and arriving) for the
    directory and every entry below it, with *before* and *after* None (no
    content changed).

    Args:
        ctx: The execution context whose mutation it was.
        op: The mutation.
        before: The version replaced, or None for a created file.
        after: The version now stored, or None after a delete.

    """


@hookspec
def ctxfs_finished(
    ctx: Context,
    op: Operation,
    error: FsError | None,
    before: Version | None,
    after: Version | None,
) -> Awaitable[None] | None:
    """Learn how an operation ended: called once for every ``ctx.fs`` operation.

    Runs last, after the locks are released, for successes and failures alike
    (policy refusals, invalid paths and store errors included); an exception that
    is not an ``FsError`` is reported as ``BackendError``, then propagates.

    Args:
        ctx: The execution context whose operation it was.
        op: The operation (its path as given when it could not be checked).
        error: The failure, or None on success.
        before: The version the operation found (read, replaced or deleted), if any.
        after: The version it read or stored, if any.

    """


@hookspec
def ctxfs_hidden(
    ctx: Context, paths: Sequence[str]
) -> Collection[str] | Awaitable[Collection[str] | None] | None:
    """Name the paths, among *paths*, to leave out of what *ctx* sees listed (None: none).

    Called for every listing (and so every walk of the search tools) with the
    entries' paths and, for symbolic links, what they resolve to; a long listing's,
    2,000 at a time. An entry is left out if any implementation names its path or
    its link's resolution. Where a plugin may hide paths, counts that would include
    them (the files a search engine read) are not told; a plugin whose ``hides``
    attribute is False hides nothing now, and keeps them.

    Args:
        ctx: The execution context listing.
        paths: Canonical root-relative paths.

    """


@hookspec
def ctxfs_tool_exposure(
    ctx: Context, tool: str, writes: bool
) -> str | Awaitable[str | None] | None:
    """Say how *tool* is offered to the model of *ctx* in this step.

    Called once per step for every tool a toolset offers by exposure
    (``search_tools``, ``call_tool`` and provider tools follow the tools they serve).
    Return ``"direct"``, ``"deferred"`` (found through ``search_tools``, run through
    ``call_tool``), ``"hidden"``, or None for no opinion, in any case. The most
    restrictive answer wins: a plugin can hide but never reveal. An implementation
    that raises, or answers anything else, hides the tool for the step (logged; a
    call of it fails with the error).

    Args:
        ctx: The execution context the tools are offered to.
        tool: The tool's name (``read``, ``write``, ...).
        writes: Whether the tool changes files (``write``, ``edit``, ...), as the
            tool declares it: a policy hides what writes without knowing names.

    """
