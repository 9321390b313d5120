"""The in-process observation store (the default)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ctxfs.core.observations.base import (
    DEFAULT_MAX_OBSERVATIONS,
    DEFAULT_MAX_PER_OWNER,
    Change,
    Observation,
    ObservationStore,
)

__all__ = ["MemoryObservations"]


class MemoryObservations(ObservationStore):
    """Observations in this process only, bounded in all and per owner.

    Beyond *max_per_owner*, an owner's least recently used are forgotten; beyond
    *max_observations*, the least recently active owner's.

    Raises:
        ValueError: A bound is not a positive number.

    """

    def __init__(
        self,
        *,
        max_observations: int = DEFAULT_MAX_OBSERVATIONS,
        max_per_owner: int = DEFAULT_MAX_PER_OWNER,
    ) -> None:
        if max_observations < 1 or max_per_owner < 1:
            raise ValueError("the bounds of an observation store must be positive")
        self.max_observations = max_observations
        self.max_per_owner = max_per_owner
        self._lock = threading.Lock()  # one store may serve several event loops' threads
        # least recently used first, at both levels
        self._owners: OrderedDict[str, OrderedDict[str, Observation]] = OrderedDict()
        self._count = 0

    async def get(self, owner: str, key: str) -> Observation | None:
        """See :meth:`ObservationStore.get`."""
        with self._lock:
            seen = self._owners.get(owner)
            return None if seen is None else seen.get(key)

    async def owned(self, owner: str) -> dict[str, Observation]:
        """See :meth:`ObservationStore.owned`; nothing becomes more recent."""
        with self._lock:
            seen = self._owners.get(owner)
            return {} if seen is None else dict(seen)

    async def update(self, owner: str, key: str, change: Change) -> None:
        """See :meth:`ObservationStore.update`; the entry and its owner become the most recent."""
        with self._lock:
            seen = self._owners.get(owner)
            observation = change(None if seen is None else seen.get(key))
            if observation is None:
                if seen is not None and seen.pop(key, None) is not None:
                    self._count -= 1
                    if not seen:
                        del self._owners[owner]
                return
            if seen is None:
                seen = self._owners[owner] = OrderedDict()
            else:
                self._owners.move_to_end(owner)
            if key not in seen:
                self._count += 1
            seen[key] = observation
            seen.move_to_end(key)
            if len(seen) > self.max_per_owner:
                seen.popitem(last=False)
                self._count -= 1
            while self._count > self.max_observations:
                idle_owner, idle = next(iter(self._owners.items()))
                idle.popitem(last=False)
                self._count -= 1
                if not idle:
                    del self._owners[idle_owner]

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`ObservationStore.forget_owner`."""
        with self._lock:
            seen = self._owners.pop(owner, None)
            self._count -= 0 if seen is None else len(seen)

    def __len__(self) -> int:
        with self._lock:
            return self._count

    @property
    def owners(self) -> int:
        """How many owners the store holds observations of."""
        with self._lock:
            return len(self._owners)

    def __repr__(self) -> str:
        return (
            f"MemoryObservations(max_observations={self.max_observations}, "
            f"max_per_owner={self.max_per_owner})"
        )
