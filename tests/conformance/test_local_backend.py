"""The local backend passes the shipped conformance suite with both resolvers, and on tmpfs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ctxfs.core.testing import BackendConformance
from ctxfs.local import LocalBackend
from tests.loops import anyio_backend  # noqa: F401 - fs-local on trio with the slow set


@pytest.fixture(params=["openat2", "walk", "openat2 on tmpfs"])
async def root(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LocalBackend]:
    """A root on disk with each resolver, and one on tmpfs (small changes on the event loop)."""
    resolver, _, where = str(request.param).partition(" on ")
    base: Path = request.getfixturevalue("memory_path") if where else tmp_path
    (base / "root").mkdir()
    options = {"resolver": resolver, "state_dir": base / "state"}
    async with LocalBackend(base / "root", **options) as backend:  # type: ignore[arg-type]
        yield backend


class TestLocalBackend(BackendConformance):
    @pytest.fixture
    def backend(self, root: LocalBackend) -> LocalBackend:
        return root
