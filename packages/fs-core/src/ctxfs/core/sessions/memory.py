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


class _Turns:
    """Versions in the order they are given up: the unnamed first, each by least recent use.

    A heap of (named, last use, version); an entry no longer true is skipped when met,
    and the heap is rebuilt when such entries are most of it.
    """

    def __init__(self, named: Callable[[Version], bool]) -> None:
        self.used: dict[Version, int] = {}
        self._named = named
        self._heap: list[tuple[bool, int, Version]] = []

    def use(self, version: Version, tick: int) -> None:
        """Note *version* as used at *tick*."""
        self.used[version] = tick
        self.turn(version)

    def turn(self, version: Version) -> None:
        """Give *version* its place again (whether it is named changed)."""
        used = self.used.get(version)
        if used is not None:
            heappush(self._heap, (self._named(version), used, version))
            if len(self._heap) > 2 * len(self.used) + 64:
                self.rebuild()

    def drop(self, version: Version) -> None:
        """Take *version* out of the order (its entries are skipped when met)."""
        del self.used[version]

    def rebuild(self) -> None:
        """Place every version again (after many changed whether they are named)."""
        self._heap = [(self._named(v), used, v) for v, used in self.used.items()]
        heapify(self._heap)

    def first(self) -> Version:
        """The version to give up first (some is in the order)."""
        while True:
            named, used, version = self._heap[0]
            if self.used.get(version) == used and named == self._named(version):
                return version
            heappop(self._heap)


@dataclass
class _Owner:
    owner: str
    sizes: dict[Version, int] = field(default_factory=dict)
    """The versions kept for the owner, and their sizes."""
    names: dict[Version, int] = field(default_factory=dict)
    """How many of the owner's kept steps name each version (:func:`step_names`)."""
    turns: _Turns = field(init=False)
    """The order in which the owner gives up its versions (those :attr:`names` holds last)."""
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

    def __post_init__(self) -> None:
        self.turns = _Turns(self.names.__contains__)

    def name(self, steps: Iterable[Step], by: int) -> list[Version]:
        """Count the versions *steps* name *by* more (1: recorded; -1: dropped, given up).

        Returns the versions named or unnamed by it.
        """
        turned = []
        for step in steps:
            for version in step_names(self.owner, step.changes):
                if _count(self.names, version, by):
                    self.turns.turn(version)
                    turned.append(version)
        return turned


def _count(counts: dict[Version, int], version: Version, by: int) -> bool:
    """Count *version* *by* more in *counts* (gone at 0); whether it came in or went."""
    now = counts.get(version, 0) + by
    if now > 0:
        counts[version] = now
    else:
        del counts[version]
    return (now > 0) != (now - by > 0)


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
        self._blobs: dict[Version, bytes] = {}
        self._holders: dict[Version, set[str]] = {}
        self._namers: dict[Version, int] = {}  # the holders naming each blob
        self._turns = _Turns(self._namers.__contains__)  # blobs named by a holder last
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
            return version in self._owners[owner].sizes

    def _keep(self, owner: str, version: Version, data: bytes) -> None:
        """Keep *data* for *owner* as its most recent, the bounds not yet held."""
        mine = self._owner(owner)
        if version not in self._blobs:
            self._blobs[version] = data
            self._holders[version] = set()
            self._bytes += len(data)
        if owner not in self._holders[version]:
            self._holders[version].add(owner)
            mine.kept_bytes += len(data)
            mine.sizes[version] = len(data)
            if version in mine.names:
                self._namer(version, 1)
        self._use(mine, version)

    def _use(self, mine: _Owner, version: Version) -> None:
        tick = next(self._clock)
        mine.turns.use(version, tick)
        self._turns.use(version, tick)

    def _namer(self, version: Version, by: int) -> None:
        """Count *by* more holders of *version* naming it."""
        if _count(self._namers, version, by):
            self._turns.turn(version)

    def _name(self, mine: _Owner, steps: Iterable[Step], by: int) -> None:
        for version in mine.name(steps, by):
            if version in mine.sizes:
                self._namer(version, by)

    def _bound(self, owner: str) -> None:
        """Give up contents until *owner*'s bound and the store's hold."""
        mine = self._owners[owner]
        while mine.kept_bytes > self.max_bytes_per_owner:
            self._let_go(owner, mine.turns.first())
        while self._bytes > self.max_bytes:
            oldest = self._turns.first()
            for holder in list(self._holders[oldest]):
                self._let_go(holder, oldest)

    def _owner(self, owner: str) -> _Owner:
        mine = self._owners.get(owner)
        if mine is None:
            mine = self._owners[owner] = _Owner(owner)
        return mine

    def _let_go(self, owner: str, version: Version) -> None:
        mine = self._owners[owner]
        mine.kept_bytes -= mine.sizes.pop(version)
        mine.turns.drop(version)
        if version in mine.names:
            self._namer(version, -1)
        holders = self._holders[version]
        holders.discard(owner)
        if not holders:
            del self._holders[version]
            self._turns.drop(version)
            self._bytes -= len(self._blobs.pop(version))

    async def content(self, owner: str, version: Version) -> bytes | None:
        """See :meth:`SessionStore.content`."""
        await self.active(owner)
        with self._lock:
            mine = self._owners.get(owner)
            if mine is None or version not in mine.sizes:
                return None
            self._use(mine, version)
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
            self._name(mine, [step], 1)
            for version, data in contents:
                if self.fits(data):
                    self._keep(owner, version, data)
            excess = max(0, len(mine.steps) - self.max_steps)
            if excess:
                mine.given_up = mine.steps[excess - 1].number
                self._name(mine, mine.steps[:excess], -1)
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
                self._name(mine, [step for step in mine.steps if step.number in dropped], -1)
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
            for version in list(mine.sizes):
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
                for version in mine.names.keys() & mine.sizes.keys():
                    self._namer(version, -1)
                mine.steps, mine.checkpoints = [], []
                mine.names.clear()
                mine.turns.rebuild()
                mine.given_up, mine.releasing, self._releasing = mine.numbered, True, owner
            mine = self._owners[owner]
            for _ in range(min(SWEEP_CONTENTS, len(mine.sizes))):  # the least recently used
                self._let_go(owner, mine.turns.first())
            if not mine.sizes:
                mine.releasing, self._releasing = False, None
                if not mine.numbered and not mine.marked:
                    del self._owners[owner]  # (nothing to go on from)
            return True
