"""The event loops a package's tests run on, as an ``anyio_backend`` fixture to import.

The core runs on both loops in the quick loop (``tests/conftest.py``). fs-local, fs-remote
and the tools hold no code of either loop's own: they run on asyncio in the quick loop, and
on trio too with the slow set.
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", pytest.param("trio", marks=pytest.mark.slow)])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """asyncio, and trio with the slow set."""
    return str(request.param)
