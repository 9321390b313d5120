"""The backend conformance suite: subclass it, provide one fixture, and run pytest.

::

    import pytest
    from ctxfs.core.testing import BackendConformance

    class TestMyBackend(BackendConformance):
        @pytest.fixture
        async def backend(self):
            async with MyBackend(...) as backend:   # fresh and empty for every test
                yield backend

Tests run under anyio (``anyio_backend`` picks the event loop; override that
fixture in the subclass if the backend supports only asyncio). A capability a
backend lacks is not skipped: the suite asserts the refusal the contract
documents instead. Tune the race with ``race_workers`` and ``race_increments``.
"""

from ctxfs.core.testing.conformance.cas import CasConformance
from ctxfs.core.testing.conformance.contents import ContentConformance
from ctxfs.core.testing.conformance.errors import ErrorConformance
from ctxfs.core.testing.conformance.listings import ListingConformance
from ctxfs.core.testing.conformance.moves import MoveConformance
from ctxfs.core.testing.conformance.patches import PatchConformance
from ctxfs.core.testing.conformance.reads import ReadConformance
from ctxfs.core.testing.conformance.updates import UpdateConformance

__all__ = ["BackendConformance"]


class BackendConformance(
    CasConformance,
    ReadConformance,
    ListingConformance,
    ErrorConformance,
    UpdateConformance,
    ContentConformance,
    MoveConformance,
    PatchConformance,
):
    """The contract of :class:`~ctxfs.core.backend.Backend`, as tests (each theme a class)."""
