"""Testing kit for ctxfs users and backend authors.

- :class:`BackendConformance`: the backend contract as a test class to subclass.
- The pytest plugin (registered under ``pytest11``) provides the fixtures
  ``memory_backend``, ``memory_fs`` and ``memory_ctx``.
- :class:`~ctxfs.core.memory.MemoryBackend` is the test double, with fault injection;
  :class:`FaultyObservations` injects failures into an observation store.
"""

import pytest

pytest.register_assert_rewrite("ctxfs.core.testing.conformance")

from ctxfs.core.memory import Faults, MemoryBackend  # noqa: E402 - after the rewrite hook
from ctxfs.core.testing.conformance import BackendConformance  # noqa: E402
from ctxfs.core.testing.observations import FaultyObservations  # noqa: E402

__all__ = ["BackendConformance", "Faults", "FaultyObservations", "MemoryBackend"]
