"""Tool tests run on the memory backend and on fs-local alike."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from ctxfs.core import ABSENT, Backend, Context, Fs, MemoryBackend
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset
from tests.tools.served import CRLF

Seed = Callable[[str, bytes], Awaitable[None]]


@pytest.fixture(params=["memory", "local", "ripgrep"])
async def fs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Fs]:
    """The memory backend; fs-local searching by its own walk; fs-local searching with ripgrep."""
    backend: Backend
    if request.param == "memory":
        backend = MemoryBackend()
    else:
        if request.param == "ripgrep" and find_ripgrep() is None:
            message = "ripgrep confined by Landlock is not available (no rg binary or no Landlock)"
            if os.environ.get("CTXFS_REQUIRE_SERVERS") == "1":
                pytest.fail(message)
            pytest.skip(message)
        (tmp_path / "root").mkdir()
        backend = LocalBackend(
            tmp_path / "root", state_dir=tmp_path / "state", ripgrep=request.param == "ripgrep"
        )
    async with Fs(backend, load_entrypoints=False, lock_timeout=0.5) as opened:
        yield opened


@pytest.fixture
def engine(fs: Fs) -> str:
    """``ripgrep`` when searches run on fs-local's ripgrep, else ``walk`` (ctxfs's own)."""
    backend = fs.backend
    return "ripgrep" if isinstance(backend, LocalBackend) and backend.ripgrep else "walk"


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
