"""The local backend passes the shipped conformance suite with both resolvers, and on tmpfs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ctxfs.core.testing import BackendConformance
from ctxfs.local import LocalBackend
from tests.local.test_memory_filesystems import memory_directory


@pytest.fixture(params=["openat2", "walk", "openat2 on tmpfs"])
async def root(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LocalBackend]:
    """A root on disk with each resolver, and one on tmpfs (small changes on the event loop)."""
    resolver, _, where = str(request.param).partition(" on ")
    base = Path(tempfile.mkdtemp(dir=memory_directory())) if where else tmp_path
    (base / "root").mkdir()
    try:
        options = {"resolver": resolver, "state_dir": base / "state"}
        async with LocalBackend(base / "root", **options) as backend:  # type: ignore[arg-type]
            yield backend
    finally:
        if where:
            shutil.rmtree(base)


class TestLocalBackend(BackendConformance):
    @pytest.fixture
    def backend(self, root: LocalBackend) -> LocalBackend:
        return root
