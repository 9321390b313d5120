"""The shipped conformance suite on every remote store: real servers, and fsspec's memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest
from tests.loops import anyio_backend  # noqa: F401 - fsspec's memory store on trio with the slow set
from tests.remote.conftest import UrlFor
from tests.remote.servers import AZURE, GCS, S3, SFTP, Server

from ctxfs.core import Backend, open_backend
from ctxfs.core.testing import BackendConformance


class RemoteConformance(BackendConformance):
    """Against a real server: asyncio only (trio is proven on the memory store and in smoke tests)."""

    server: ClassVar[Server]
    options: ClassVar[dict[str, Any]] = {}
    """Options of the backend besides the server's own."""
    race_workers = 4
    race_increments = 10

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    async def backend(self, url_for: UrlFor) -> AsyncIterator[Backend]:
        opened: Any = open_backend(url_for(self.server), **self.server.options, **self.options)
        async with opened:
            yield opened


class TestS3(RemoteConformance):
    server = S3
    # moto enforces every condition (test_probe_and_requests proves it): each open skips the
    # probe's requests, and the backend trusts the store as it would after the probe.
    options: ClassVar[dict[str, Any]] = {"probe": False}


@pytest.mark.slow  # the quick loop proves the kit on S3; .ci/run on every store
class TestGcs(RemoteConformance):
    server = GCS


@pytest.mark.slow  # the quick loop proves the kit on S3; .ci/run on every store
class TestAzure(RemoteConformance):
    server = AZURE


@pytest.mark.slow  # the quick loop proves the kit on S3; .ci/run on every store
class TestSftp(RemoteConformance):
    server = SFTP


class TestFsspecMemory(BackendConformance):
    @pytest.fixture
    async def backend(self) -> AsyncIterator[Backend]:
        import uuid  # noqa: PLC0415

        opened: Any = open_backend(f"fsspec+memory://ctxfs-{uuid.uuid4().hex}/root")
        async with opened:
            yield opened
