"""Tool tests run on the memory backend and on fs-local alike."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from ctxfs.core import ABSENT, Backend, Context, Fs, MemoryBackend
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset
from tests.tools.served import CRLF

Seed = Callable[[str, bytes], Awaitable[None]]


@pytest.fixture(params=["memory", "local"])
async def fs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Fs]:
    backend: Backend
    if request.param == "memory":
        backend = MemoryBackend()
    else:
        (tmp_path / "root").mkdir()
        backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    async with Fs(backend, load_entrypoints=False, lock_timeout=0.5) as opened:
        yield opened


@pytest.fixture
def ctx(fs: Fs) -> Context:
    return fs.context(owner="agent")


@pytest.fixture
def seed(fs: Fs) -> Seed:
    """Put bytes in the store behind the agent's back (as a person or another tool would)."""

    async def put(path: str, data: bytes) -> None:
        await fs.backend.write(path, data, expect=ABSENT)

    return put


@pytest.fixture
def tools() -> FsToolset:
    return FsToolset()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A directory ``ws`` holding ``notes.md`` (two CRLF lines), for the servers' tests."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_bytes(CRLF)
    return root
