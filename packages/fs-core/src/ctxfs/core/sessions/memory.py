"""The in-process session store (the default)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush
from itertools import count

from ctxfs.core.sessions.base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_BYTES_PER_OWNER,
    DEFAULT_MAX_IDLE_DAYS,
    DEFAULT_MAX_STEPS,
    SWEEP_CONTENTS,
    Checkpoint,
    FileChange,
    SessionStore,
    Step,
    step_names,
)
from ctxfs.core.versions import Version

__all__ = ["MemorySessions"]


@dataclass
class _Owner:
    owner: str
    kept: dict[Version, tuple[int, int]] = field(default_factory=dict)
    """The versions kept for the owner: their sizes and last uses."""
    order: list[tuple[bool, int, Version]] = field(default_factory=list)
    """A heap of (named, last use, version), the next to give up first; a stale entry is
    skipped (its version gone, used again, or named or unnamed since)."""
    names: dict[Version, int] = field(default_factory=dict)
    """How many of the owner's kept steps name each version (:func:`step_names`)."""
    kept_bytes: int = 0
    steps: list[Step] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    numbered: int = 0
    """The last step number given."""
    given_up: int = 0
    """The highest step number given up by the bound."""
    marked: int = 0
    """The last checkpoint number given."""
    releasing: bool = False
    """Whether its history was given up for idleness and its contents are going."""

    def use(self, version: Version, size: int, tick: int) -> None:
        """Note *version*, of *size* bytes, as kept and used at *tick*."""
        self.kept[version] = (size, tick)
        self._order(version)

    def reorder(self) -> None:
        """Rebuild :attr:`order` from what is kept (after :attr:`names` changed wholesale)."""
        self.order = [(v in self.names, used, v) for v, (_, used) in self.kept.items()]
        heapify(self.order)

    def name(self, steps: Iterable[Step], by: int) -> None:
        """Count the versions *steps* name *by* more (1: recorded; -1: dropped, given up)."""
        for step in steps:
            for version in step_names(self.owner, step.changes):
                named = self.names.get(version, 0) + by
                if named > 0:
                    self.names[version] = named
                else:
                    del self.names[version]
                if (named > 0) != (named - by > 0):
                    self._order(version)

    def next_to_go(self) -> Version:
        """The version to give up first (some is kept)."""
        while True:
            named, used, version = self.order[0]
            if version in self.kept and (named, used) == (
                version in self.names,
                self.kept[version][1],
            ):
                return version
            heappop(self.order)

    def _order(self, version: Version) -> None:
        kept = self.kept.get(version)
        if kept is not None:
            heappush(self.order, (version in self.names, kept[1], version))
            if len(self.order) > 2 * len(self.kept) + 64:  # (mostly stale entries)
                self.reorder()


class MemorySessions(SessionStore):
    """Contents and histories in this process only, bounded as :class:`SessionStore` says.

    A content kept for several owners is stored once.

    Raises:
        ValueError: A bound is not a positive number.

    """

    def __init__(
        self,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_bytes_per_owner: int = DEFAULT_MAX_BYTES_PER_OWNER,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_idle_days: int = DEFAULT_MAX_IDLE_DAYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            max_bytes=max_bytes,
            max_bytes_per_owner=max_bytes_per_owner,
            max_steps=max_steps,
            max_idle_days=max_idle_days,
            clock=clock,
        )
        self._lock = threading.Lock()  # one store may serve several event loops' threads
        self._owners: dict[str, _Owner] = {}
        self._blobs: OrderedDict[Version, bytes] = OrderedDict()  # least recently used first
        self._holders: dict[Version, set[str]] = {}
        self._bytes = 0
        self._clock = count()  # (the order of uses)
        self._by_activity: OrderedDict[str, float] = OrderedDict()  # least recent first
        self._releasing: str | None = None

    @property
    def kept_bytes(self) -> int:
        """The bytes of contents kept, in all."""
        return self._bytes

    async def keep(self, owner: str, version: Version, data: bytes) -> bool:
        """See :meth:`SessionStore.keep`."""
        await self.active(owner)
        with self._lock:
            if not self.fits(data):
                return False
            self._keep(owner, version, data)
            self._bound(owner)
            return version in self._owners[owner].kept

    def _keep(self, owner: str, version: Version, data: bytes) -> None:
        """Keep *data* for *owner* as its most recent, the bounds not yet held."""
        mine = self._owner(owner)
        if version not in self._blobs:
            self._blobs[version] = data
            self._holders[version] = set()
            self._bytes += len(data)
        self._blobs.move_to_end(version)
        if owner not in self._holders[version]:
            self._holders[version].add(owner)
            mine.kept_bytes += len(data)
        mine.use(version, len(data), next(self._clock))

    def _bound(self, owner: str) -> None:
        """Give up contents until *owner*'s bound and the store's hold."""
        mine = self._owners[owner]
        while mine.kept_bytes > self.max_bytes_per_owner:
            self._let_go(owner, mine.next_to_go())
        while self._bytes > self.max_bytes:
            oldest = next(iter(self._blobs))
            for holder in list(self._holders[oldest]):
                self._let_go(holder, oldest)

    def _owner(self, owner: str) -> _Owner:
        mine = self._owners.get(owner)
        if mine is None:
            mine = self._owners[owner] = _Owner(owner)
        return mine

    def _let_go(self, owner: str, version: Version) -> None:
        mine = self._owners[owner]
        mine.kept_bytes -= mine.kept.pop(version)[0]
        holders = self._holders[version]
        holders.discard(owner)
        if not holders:
            del self._holders[version]
            self._bytes -= len(self._blobs.pop(version))

    async def content(self, owner: str, version: Version) -> bytes | None:
        """See :meth:`SessionStore.content`."""
        await self.active(owner)
        with self._lock:
            mine = self._owners.get(owner)
            if mine is None or version not in mine.kept:
                return None
            mine.use(version, mine.kept[version][0], next(self._clock))
            self._blobs.move_to_end(version)
            return self._blobs[version]

    async def record(
        self,
        owner: str,
        changes: Sequence[FileChange],
        *,
        at: float,
        contents: Sequence[tuple[Version, bytes]] = (),
    ) -> Step:
        """See :meth:`SessionStore.record`."""
        await self.active(owner)
        with self._lock:
            mine = self._owner(owner)
            mine.numbered += 1
            step = Step(number=mine.numbered, changes=tuple(changes), at=at)
            mine.steps.append(step)
            mine.name([step], 1)
            for version, data in contents:
                if self.fits(data):
                    self._keep(owner, version, data)
            excess = max(0, len(mine.steps) - self.max_steps)
            if excess:
                mine.given_up = mine.steps[excess - 1].number
                mine.name(mine.steps[:excess], -1)
                del mine.steps[:excess]
            self._bound(owner)
            return step

    async def steps(self, owner: str, *, after: int = 0) -> list[Step]:
        """See :meth:`SessionStore.steps`."""
        await self.active(owner)
        with self._lock:
            mine = self._owners.get(owner)
            return [] if mine is None else [s for s in mine.steps if s.number > after]

    async def given_up(self, owner: str) -> int:
        """See :meth:`SessionStore.given_up`."""
        await self.active(owner)
        with self._lock:
            mine = self._owners.get(owner)
            return 0 if mine is None else mine.given_up

    async def drop_steps(self, owner: str, numbers: Sequence[int]) -> None:
        """See :meth:`SessionStore.drop_steps`."""
        await self.active(owner)
        dropped = set(numbers)
        with self._lock:
            mine = self._owners.get(owner)
            if mine is not None:
                mine.name([step for step in mine.steps if step.number in dropped], -1)
                mine.steps = [step for step in mine.steps if step.number not in dropped]

    async def mark(self, owner: str, label: str | None, *, at: float) -> Checkpoint:
        """See :meth:`SessionStore.mark`."""
        await self.active(owner)
        with self._lock:
            mine = self._owner(owner)
            mine.marked += 1
            checkpoint = Checkpoint(
                id=Checkpoint.id_of(mine.marked), label=label, step=mine.numbered, at=at
            )
            mine.checkpoints.append(checkpoint)
            del mine.checkpoints[: max(0, len(mine.checkpoints) - self.max_steps)]
            return checkpoint

    async def checkpoints(self, owner: str) -> list[Checkpoint]:
        """See :meth:`SessionStore.checkpoints`."""
        await self.active(owner)
        with self._lock:
            mine = self._owners.get(owner)
            return [] if mine is None else list(mine.checkpoints)

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`SessionStore.forget_owner`."""
        self._noted.pop(owner, None)
        with self._lock:
            self._by_activity.pop(owner, None)
            if self._releasing == owner:
                self._releasing = None
            mine = self._owners.get(owner)
            if mine is None:
                return
            for version in list(mine.kept):
                self._let_go(owner, version)
            del self._owners[owner]

    async def note_active(self, owner: str, at: float) -> None:
        """See :meth:`SessionStore.note_active`."""
        with self._lock:
            self._owner(owner).releasing = False
            self._by_activity[owner] = at
            self._by_activity.move_to_end(owner)

    async def forget_idle(self, before: float) -> bool:
        """See :meth:`SessionStore.forget_idle`."""
        with self._lock:
            owner = self._releasing
            if owner is None or not self._owners[owner].releasing:
                owner = next(iter(self._by_activity), None)
                if owner is None or self._by_activity[owner] >= before:
                    return False
                del self._by_activity[owner]
                mine = self._owners[owner]
                mine.steps, mine.checkpoints, mine.names = [], [], {}
                mine.reorder()
                mine.given_up, mine.releasing, self._releasing = mine.numbered, True, owner
            mine = self._owners[owner]
            for _ in range(min(SWEEP_CONTENTS, len(mine.kept))):  # the least recently used
                self._let_go(owner, mine.next_to_go())
            if not mine.kept:
                mine.releasing, self._releasing = False, None
                if not mine.numbered and not mine.marked:
                    del self._owners[owner]  # (nothing to go on from)
            return True
