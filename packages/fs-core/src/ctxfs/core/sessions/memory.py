"""The in-process session store (the default)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice

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
)
from ctxfs.core.versions import Version

__all__ = ["MemorySessions"]


@dataclass
class _Owner:
    kept: OrderedDict[Version, int] = field(default_factory=OrderedDict)
    """The versions kept for the owner and their sizes, least recently used first."""
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
            return self._keep(owner, version, data)

    def _keep(self, owner: str, version: Version, data: bytes) -> bool:
        if not self.fits(data):
            return False
        mine = self._owners.setdefault(owner, _Owner())
        if version not in self._blobs:
            self._blobs[version] = data
            self._holders[version] = set()
            self._bytes += len(data)
        self._blobs.move_to_end(version)
        if owner not in self._holders[version]:
            self._holders[version].add(owner)
            mine.kept_bytes += len(data)
        mine.kept[version] = len(data)
        mine.kept.move_to_end(version)
        while mine.kept_bytes > self.max_bytes_per_owner:
            self._let_go(owner, next(iter(mine.kept)))
        while self._bytes > self.max_bytes:
            oldest = next(iter(self._blobs))
            for holder in list(self._holders[oldest]):
                self._let_go(holder, oldest)
        return True

    def _let_go(self, owner: str, version: Version) -> None:
        mine = self._owners[owner]
        mine.kept_bytes -= mine.kept.pop(version)
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
            mine.kept.move_to_end(version)
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
            for version, data in contents:
                self._keep(owner, version, data)
            mine = self._owners.setdefault(owner, _Owner())
            mine.numbered += 1
            step = Step(number=mine.numbered, changes=tuple(changes), at=at)
            mine.steps.append(step)
            excess = max(0, len(mine.steps) - self.max_steps)
            if excess:
                mine.given_up = mine.steps[excess - 1].number
                del mine.steps[:excess]
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
                mine.steps = [step for step in mine.steps if step.number not in dropped]

    async def mark(self, owner: str, label: str | None, *, at: float) -> Checkpoint:
        """See :meth:`SessionStore.mark`."""
        await self.active(owner)
        with self._lock:
            mine = self._owners.setdefault(owner, _Owner())
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
            self._owners.setdefault(owner, _Owner()).releasing = False
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
                mine.steps, mine.checkpoints = [], []
                mine.given_up, mine.releasing, self._releasing = mine.numbered, True, owner
            mine = self._owners[owner]
            for version in list(islice(mine.kept, SWEEP_CONTENTS)):
                self._let_go(owner, version)
            if not mine.kept:
                mine.releasing, self._releasing = False, None
                if not mine.numbered and not mine.marked:
                    del self._owners[owner]  # (nothing to go on from)
            return True
