"""``CheckOuts``: a person's lease on a file stops agents from changing it.

A lease is not a lock to wait on: the agent gets ``checked_out``, saying who holds
the file and until when.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from ctxfs.core.errors import CheckedOut, FsError
from ctxfs.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.outcomes import Operation

__all__ = ["CheckOuts", "Lease", "LeaseBook", "Leases"]


@dataclass(frozen=True, kw_only=True)
class Lease:
    """Who holds a file, and until when (None: until checked in)."""

    holder: str
    until: datetime | None = None


class Leases(Protocol):
    """The port: the lease on *path* in *workspace*, if any (sync or async)."""

    def lease(self, workspace: str | None, path: str) -> Lease | Awaitable[Lease | None] | None:
        """The current lease on *path*, or None."""
        ...  # pragma: no cover - a protocol


class LeaseBook:
    """An in-memory port: check files out and in; expired leases no longer count."""

    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._leases: dict[tuple[str | None, str], Lease] = {}
        self._guard = threading.Lock()
        self._clock = clock

    def check_out(
        self, path: str, holder: str, *, until: datetime | None = None, workspace: str | None = None
    ) -> Lease:
        """Give *holder* the lease on *path* (replacing any other)."""
        lease = Lease(holder=holder, until=until)
        with self._guard:
            self._leases[(workspace, path)] = lease
        return lease

    def check_in(self, path: str, *, workspace: str | None = None) -> None:
        """End the lease on *path*."""
        with self._guard:
            self._leases.pop((workspace, path), None)

    def lease(self, workspace: str | None, path: str) -> Lease | None:
        """The live lease on *path*, or None."""
        with self._guard:
            lease = self._leases.get((workspace, path))
        if lease is not None and lease.until is not None and lease.until <= self._clock():
            return None
        return lease


class CheckOuts:
    """Refuse changes to files someone else has checked out."""

    def __init__(self, leases: Leases) -> None:
        self.leases = leases

    @hookimpl
    async def ctxfs_authorize(self, ctx: Context, op: Operation) -> FsError | None:
        """A change to a file leased by anyone but this owner is ``checked_out``.

        The lease is looked up by the path as spelled and as it resolves (a link to a leased
        file, or through a linked directory, is the leased file).
        """
        if not op.kind.mutates:
            return None
        for path in dict.fromkeys(filter(None, (op.path, op.resolved))):
            answer = self.leases.lease(ctx.workspace, path)
            lease = await answer if inspect.isawaitable(answer) else answer
            if lease is not None and lease.holder != ctx.owner:
                break
        else:
            return None
        until = lease.until.isoformat() if lease.until else None
        return CheckedOut(
            f"{op.path} is checked out by {lease.holder}"
            + (f" until {until}" if until else " until they check it in"),
            path=op.path,
            details={"holder": lease.holder, "until": until},
        )
