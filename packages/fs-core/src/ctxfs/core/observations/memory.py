"""The in-process observation store (the default)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ctxfs.core.observations.base import (
    DEFAULT_MAX_OBSERVATIONS,
    Change,
    Observation,
    ObservationStore,
)

__all__ = ["MemoryObservations"]


class MemoryObservations(ObservationStore):
    """Observations in this process only.

    Beyond *max_observations*, the least recently used are forgotten.
    """

    def __init__(self, *, max_observations: int = DEFAULT_MAX_OBSERVATIONS) -> None:
        self.max_observations = max_observations
        self._lock = threading.Lock()  # one store may serve several event loops' threads
        self._entries: OrderedDict[tuple[str, str], Observation] = OrderedDict()

    async def get(self, owner: str, key: str) -> Observation | None:
        """See :meth:`ObservationStore.get`."""
        with self._lock:
            return self._entries.get((owner, key))

    async def update(self, owner: str, key: str, change: Change) -> None:
        """See :meth:`ObservationStore.update`; the entry becomes the most recently used."""
        with self._lock:
            entry = (owner, key)
            observation = change(self._entries.get(entry))
            if observation is None:
                self._entries.pop(entry, None)
                return
            self._entries[entry] = observation
            self._entries.move_to_end(entry)
            while len(self._entries) > self.max_observations:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"MemoryObservations(max_observations={self.max_observations})"
