"""Fixtures of the harness tests: a store holding ``notes.txt``, and an agent's context on it."""

from __future__ import annotations

import pytest

from ctxfs.core import Context, Fs, MemoryBackend


@pytest.fixture
def fs() -> Fs:
    return Fs(MemoryBackend(), load_entrypoints=False)


@pytest.fixture
async def ctx(fs: Fs) -> Context:
    """``agent-1``'s context; ``notes.txt`` (``hello``) was written by another owner."""
    await fs.context(owner="setup").fs.write("notes.txt", "hello\n")
    return fs.context(owner="agent-1")
