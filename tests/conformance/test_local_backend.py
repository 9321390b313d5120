"""The local backend passes the shipped conformance suite with both resolvers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ctxfs.core.testing import BackendConformance
from ctxfs.local import LocalBackend


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class TestLocalBackend(BackendConformance):
    @pytest.fixture
    async def backend(self, tmp_path: Path, resolver: str) -> AsyncIterator[LocalBackend]:
        (tmp_path / "root").mkdir()
        options = {"resolver": resolver, "state_dir": tmp_path / "state"}
        async with LocalBackend(tmp_path / "root", **options) as backend:  # type: ignore[arg-type]
            yield backend
