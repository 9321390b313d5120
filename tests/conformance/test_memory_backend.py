"""The memory backend adopts the shipped conformance suite, as any third party would."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ctxfs.core import MemoryBackend
from ctxfs.core.testing import BackendConformance


class TestMemoryBackend(BackendConformance):
    @pytest.fixture
    async def backend(self) -> AsyncIterator[MemoryBackend]:
        async with MemoryBackend() as backend:
            yield backend


class TestSlowMemoryBackend(BackendConformance):
    """With latency on every call, the races interleave at every await."""

    race_workers = 4
    race_increments = 10

    @pytest.fixture
    def backend(self) -> MemoryBackend:
        backend = MemoryBackend()
        backend.faults.latency = 0.001
        return backend
