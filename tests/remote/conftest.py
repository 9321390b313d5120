"""Fixtures for the fs-remote tests: a bucket per server per session, a prefix per test."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from tests.remote.servers import SERVERS, Server

UrlFor = Callable[[Server], str]


@pytest.fixture(scope="session")
def buckets() -> dict[str, str]:
    """The session's bucket on each server, created on first use."""
    return {}


@pytest.fixture
def url_for(buckets: dict[str, str]) -> UrlFor:
    """``url_for(server)``: a fresh, empty root on *server* (skips if it is not running)."""

    def make(server: Server) -> str:
        server.require()
        if server.name not in buckets:
            buckets[server.name] = server.create_bucket()
        return server.url(buckets[server.name], uuid.uuid4().hex[:12])

    return make


@pytest.fixture(
    params=[
        name if name == "s3" else pytest.param(name, marks=pytest.mark.slow)
        for name in sorted(SERVERS)
    ]
)
def server(request: pytest.FixtureRequest) -> Server:
    """Each real server in turn (but S3 only in the quick loop: the others are marked slow)."""
    return SERVERS[str(request.param)]
