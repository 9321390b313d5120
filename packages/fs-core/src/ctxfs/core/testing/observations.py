"""An observation store that fails when a test says so: the store side of fault injection."""

from __future__ import annotations

from typing import Literal

from ctxfs.core.errors import Unavailable
from ctxfs.core.observations import MemoryObservations, Observation, ObservationStore
from ctxfs.core.observations.base import Change

__all__ = ["FaultyObservations"]

Method = Literal["get", "owned", "update", "forget_owner"]


class FaultyObservations(ObservationStore):
    """Another store (in memory by default), with failures to inject.

    While :attr:`down` is set, every call raises ``Unavailable``; a failure queued
    with :meth:`fail_next` is raised by one call of its method. A failed call changes
    nothing. :attr:`calls` counts the calls made, failed or not.
    """

    def __init__(self, store: ObservationStore | None = None) -> None:
        self.store = store if store is not None else MemoryObservations()
        self.down = False
        """Whether the store is unreachable: every call fails."""
        self.calls: dict[Method, int] = {"get": 0, "owned": 0, "update": 0, "forget_owner": 0}
        self._failures: list[tuple[Method, int, Exception]] = []

    def fail_next(self, method: Method, error: Exception | None = None, *, after: int = 0) -> None:
        """Make *method*'s call after *after* successful ones raise *error* (``Unavailable``)."""
        failure = error or Unavailable("the observation store failed")
        self._failures.append((method, after, failure))

    async def get(self, owner: str, key: str) -> Observation | None:
        """See :meth:`ObservationStore.get`."""
        self._fault("get")
        return await self.store.get(owner, key)

    async def owned(self, owner: str) -> dict[str, Observation]:
        """See :meth:`ObservationStore.owned`."""
        self._fault("owned")
        return await self.store.owned(owner)

    async def update(self, owner: str, key: str, change: Change) -> None:
        """See :meth:`ObservationStore.update`."""
        self._fault("update")
        await self.store.update(owner, key, change)

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`ObservationStore.forget_owner`."""
        self._fault("forget_owner")
        await self.store.forget_owner(owner)

    async def aclose(self) -> None:
        """See :meth:`ObservationStore.aclose`."""
        await self.store.aclose()

    def _fault(self, method: Method) -> None:
        self.calls[method] += 1
        if self.down:
            raise Unavailable("the observation store cannot be reached")
        for index, (wanted, after, error) in enumerate(self._failures):
            if wanted != method:
                continue
            if after:
                self._failures[index] = (wanted, after - 1, error)
                return
            del self._failures[index]
            raise error
