"""Tool tests run on the memory backend and on fs-local alike."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from ctxfs.core import ABSENT, Backend, Context, Fs, MemoryBackend
from ctxfs.local import LocalBackend
from ctxfs.local.landlock import landlock_abi
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset
from tests.loops import anyio_backend  # noqa: F401 - the tools on trio with the slow set
from tests.tools.served import CRLF

FILE_TOOLS = [
    "read",
    "write",
    "edit",
    "multi_edit",
    "apply_patch",
    "notebook_edit",
    "delete",
    "move",
    "create_directory",
    "list_dir",
    "glob",
    "grep",
]
"""The file tools a toolset offers directly by default, in order."""
DEFERRED_TOOLS = ["undo", "changes"]
"""The tools a toolset defers by default: found through search_tools, run through call_tool."""
DEFAULT_TOOLS = [*FILE_TOOLS, "search_tools", "call_tool"]
"""The tools a toolset offers by default, in order: the file tools, then the discovery pair."""

Seed = Callable[[str, bytes], Awaitable[None]]


@pytest.fixture(params=["memory", "local", "ripgrep"])
async def fs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Fs]:
    """The memory backend; fs-local searching by its own walk; fs-local searching with ripgrep."""
    backend: Backend
    if request.param == "memory":
        backend = MemoryBackend()
    else:
        if request.param == "ripgrep" and find_ripgrep() is None:
            skip_without_ripgrep()
        (tmp_path / "root").mkdir()
        backend = LocalBackend(
            tmp_path / "root", state_dir=tmp_path / "state", ripgrep=request.param == "ripgrep"
        )
    async with Fs(backend, load_entrypoints=False, lock_timeout=0.5) as opened:
        yield opened


def skip_without_ripgrep() -> None:
    """Skip: this kernel has no Landlock (the ripgrep engine then never runs); fail: no binary."""
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock: fs-local searches with its own walk here")
    pytest.fail("the rg binary of the ripgrep wheel (a dependency of ctxfs-local) is missing")


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
