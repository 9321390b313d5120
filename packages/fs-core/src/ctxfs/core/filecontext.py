"""The file-context plugin: what each owner has seen, and who may change what.

Rules, checked under the mutation locks against the version the store holds:

- an edit, insert, delete or move of an existing file, and a move over one, needs an
  observation of its current version by the same owner (any window of it counts);
- a write over an existing file needs a *complete* observation of its current
  version (a read of the whole file, windows of it that add up to the whole
  file, the owner's own last write, or its edit of a version it had seen whole);
- creating a file needs no observation (the store write is create-only);
- no observation is ``NotObserved``; an observation of another version is
  ``Stale``.

After a mutation the owner's observation is the new version (complete after a
write, else as complete as what it had seen); other owners' are now stale. Locks:
an in-process lock per file, then the backend's own where it has one, within one
bounded wait that ends in ``Busy``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Final

import anyio

from ctxfs.core.errors import Busy, FsError, NotObserved, Stale
from ctxfs.core.hookspecs import hookimpl
from ctxfs.core.locks import KeyedLocks, held_by_another
from ctxfs.core.observations import (
    DEFAULT_MAX_OBSERVATIONS,
    LineRanges,
    MemoryObservations,
    Observation,
    ObservationStore,
)
from ctxfs.core.outcomes import Operation, OpKind

if TYPE_CHECKING:
    from ctxfs.core.backend import Backend
    from ctxfs.core.context import Context
    from ctxfs.core.versions import Version

__all__ = ["DEFAULT_LOCK_TIMEOUT", "FileContextPlugin", "LineRanges", "Observation"]

DEFAULT_LOCK_TIMEOUT: Final = 10.0
"""Seconds a mutation waits for its locks before failing ``Busy``."""
_MAX_RANGES: Final = 64
"""Separate line ranges kept per observation; beyond them, reading on adds nothing."""


class FileContextPlugin:
    """Records observations per (owner, file key: :attr:`Operation.key`) and enforces the rules.

    Observations live in *observations*; by default in this process, the least
    recently used forgotten beyond *max_observations* (the owner must then read again).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        max_observations: int = DEFAULT_MAX_OBSERVATIONS,
        observations: ObservationStore | None = None,
    ) -> None:
        self.backend = backend
        self.lock_timeout = lock_timeout
        self.observations = (
            observations
            if observations is not None
            else MemoryObservations(max_observations=max_observations)
        )
        self.locks = KeyedLocks()

    async def forget_owner(self, owner: str) -> None:
        """Forget everything *owner* saw: its next change of any file needs a read first."""
        await self.observations.forget_owner(owner)

    async def observation(self, owner: str, key: str) -> Observation | None:
        """Return what *owner* last saw of the file *key* (its identity), if anything."""
        return await self.observations.get(owner, key)

    @hookimpl
    async def ctxfs_observed(
        self, ctx: Context, path: str, version: Version, complete: bool
    ) -> None:
        """Record a read of *path* (the host passes the file's key)."""
        await self.observe(ctx.owner, path, version, complete=complete)

    async def observe(
        self,
        owner: str,
        key: str,
        version: Version,
        *,
        complete: bool,
        lines: LineRanges = (),
        total_lines: int | None = None,
        path: str = "",
    ) -> None:
        """Record that *owner* read the file *key*: all of it, or *lines* of *total_lines*.

        *path* is how the owner reached it (for :meth:`ContextFs.changed`). A window of
        a version seen whole stays complete; windows of one version that add up to
        every line make it complete.
        """
        if complete and path:  # the whole version, at path: whatever was seen before
            whole = Observation(version=version, complete=True, path=path)
            await self.observations.put(owner, key, whole)
            return

        def merged(seen: Observation | None) -> Observation:
            whole, ranges = complete, lines
            if seen is not None and seen.version == version:
                whole = whole or seen.complete
                ranges = seen.lines + ranges
            ranges = () if whole else _merged(ranges)
            if ranges and ranges[0] == (1, total_lines):
                whole, ranges = True, ()
            known = path or ("" if seen is None else seen.path)
            return Observation(version=version, complete=whole, lines=ranges, path=known)

        await self.observations.update(owner, key, merged)

    @hookimpl
    async def ctxfs_check_version(
        self, ctx: Context, op: Operation, current: Version | None
    ) -> FsError | None:
        """Apply the observation rules to a mutation of an existing file."""
        refusal, _ = await self.check(ctx.owner, op, current)
        return refusal

    async def check(
        self, owner: str, op: Operation, current: Version | None
    ) -> tuple[FsError | None, Observation | None]:
        """The rules' vote on *op* of the file at *current*, and what *owner* had seen of it.

        The store is asked for a created file too: a failing store refuses before any write.
        """
        if op.kind not in _GUARDED:
            return None, None
        seen = await self.observation(owner, op.key)
        if current is None:
            return None, seen
        if seen is None:
            return NotObserved(
                f"{op.path} has not been read in this context; read it before changing it",
                path=op.path,
            ), seen
        if seen.version != current:
            return Stale(
                f"{op.path} has changed since it was last read",
                path=op.path,
                details={"observed_version": seen.version, "current_version": current},
            ), seen
        if op.kind is OpKind.WRITE and not seen.complete:
            return NotObserved(
                f"only part of {op.path} has been read; read the whole file before replacing it",
                path=op.path,
                hint="Read the whole file (every window up to the end), then write it; "
                "or change part of it with edit.",
                details={"partial_observation": True},
            ), seen
        return None, seen

    async def restore(self, owner: str, key: str, seen: Observation | None) -> None:
        """Make *seen* (None: nothing) what *owner* has seen of the file *key* (a change undone)."""
        await self.observations.put(owner, key, seen)

    async def committed(
        self, owner: str, op: Operation, after: Version | None, *, seen: Observation | None
    ) -> None:
        """Make the owner's own mutation its observation: complete for a write, else as *seen*.

        *seen* is what the owner had seen of the file before (of the source, for a
        move's destination): an edit after a partial read leaves a partial observation.
        """
        if after is None:
            await self.observations.put(owner, op.key, None)
            return
        whole = op.kind is OpKind.WRITE or (seen is not None and seen.complete)
        observation = Observation(version=after, complete=whole, path=op.path)
        await self.observations.put(owner, op.key, observation)

    async def follow(self, owner: str, moves: Sequence[tuple[Operation, Operation]]) -> None:
        """Move *owner*'s observations from each leaving key to the arriving one (a directory move).

        Other owners' observations stay at the old keys (they must read the file again).
        """
        for old, new in moves:
            seen = await self.observations.get(owner, old.key)
            if seen is None:
                continue
            await self.restore(owner, new.key, replace(seen, path=new.path))
            await self.restore(owner, old.key, None)

    @hookimpl
    def ctxfs_mutation_lock(
        self, ctx: Context, op: Operation
    ) -> AbstractAsyncContextManager[object]:
        """Hold the file's in-process lock, then the backend's, within one deadline."""
        del ctx
        return self._hold(op)

    @asynccontextmanager
    async def _hold(self, op: Operation) -> AsyncIterator[None]:
        deadline = anyio.current_time() + self.lock_timeout
        try:
            async with self.locks.hold(op.key, timeout=self.lock_timeout):
                remaining = max(0.0, deadline - anyio.current_time())
                backend_lock = self.backend.lock(op.key, timeout=remaining)
                async with nullcontext() if backend_lock is None else backend_lock:
                    yield
        except Busy as busy:
            if busy.path != op.key:
                raise
            waited = busy.details.get("waited_seconds", self.lock_timeout)
            # the path as the caller spelled it, not the key (on fs-local, a host's path)
            raise held_by_another(op.path, waited=waited) from busy


_GUARDED = frozenset({OpKind.WRITE, OpKind.EDIT, OpKind.INSERT, OpKind.DELETE, OpKind.MOVE})


def _merged(ranges: LineRanges) -> LineRanges:
    """*ranges* sorted, with overlapping and adjacent ones joined; the first few only."""
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    return tuple(merged[:_MAX_RANGES])
