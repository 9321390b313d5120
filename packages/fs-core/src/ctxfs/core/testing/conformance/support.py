"""What the conformance suite's themed classes share: the base class, constants, helpers."""

from __future__ import annotations

from typing import ClassVar

import pytest

from ctxfs.core.backend import Backend
from ctxfs.core.context import Context
from ctxfs.core.errors import NotFound
from ctxfs.core.fs import Fs

__all__ = [
    "MIB",
    "PATH_ATTACKS",
    "RESERVED",
    "ConformanceBase",
    "contexts",
    "exists",
    "open_and_leave_stream",
    "open_and_leave_update",
]

MIB = 1 << 20
PATH_ATTACKS = ("../x", "/x", "a//b", "a/./b", "./a", "a/", "a\\b", "a\x00b", "s3://x/y", "C:x")
RESERVED = (".ctxfs-x", "d/.ctxfs-lock.a.txt", ".ctxfs-tmp.1", "d/.ctxfs-/x")


class ConformanceBase:
    """The fixture and the settings every themed class of the suite uses."""

    pytestmark: ClassVar = [pytest.mark.anyio]

    race_workers: ClassVar[int] = 8
    """Concurrent workers in the counter races."""
    race_increments: ClassVar[int] = 25
    """Guarded increments per worker in the counter races."""

    @pytest.fixture
    def backend(self) -> Backend:
        """Override: return (or yield) a fresh, empty backend for one test."""
        pytest.fail("a BackendConformance subclass must define the 'backend' fixture")


def contexts(backend: Backend, *owners: str) -> list[Context]:
    """Contexts of *owners* on one ``Fs`` over *backend*, without entry-point plugins."""
    fs = Fs(backend, load_entrypoints=False)
    return [fs.context(owner=owner) for owner in owners]


async def exists(backend: Backend, path: str) -> bool:
    """Whether file *path* can be read."""
    try:
        await backend.read(path)
    except NotFound:
        return False
    return True


async def open_and_leave_update(
    backend: Backend, path: str, *, max_size: int | None = None
) -> None:
    """Open and leave an update of *path* (to see what opening it raises)."""
    async with backend.open_update(path, max_size=max_size):
        pass


async def open_and_leave_stream(backend: Backend, path: str, *, chunk_size: int = 4096) -> None:
    """Open and leave a streamed read of *path* (to see what opening it raises)."""
    async with backend.open_read(path, chunk_size=chunk_size):
        pass
