"""pytest fixtures for code that takes a ``ctx.fs``; loaded automatically with ctxfs-core."""

from __future__ import annotations

import pytest

from ctxfs.core.context import Context
from ctxfs.core.fs import Fs
from ctxfs.core.memory import MemoryBackend


@pytest.fixture
def memory_backend() -> MemoryBackend:
    """A fresh, empty in-memory backend."""
    return MemoryBackend()


@pytest.fixture
def memory_fs(memory_backend: MemoryBackend) -> Fs:
    """An ``Fs`` over ``memory_backend``, with only the built-in plugins."""
    return Fs(memory_backend, load_entrypoints=False)


@pytest.fixture
def memory_ctx(memory_fs: Fs) -> Context:
    """A context of owner ``"agent-1"`` on ``memory_fs``."""
    return memory_fs.context(owner="agent-1")
