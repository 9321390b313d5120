"""The session memory through the tools and the MCP server on S3, with SQLite and Redis stores.

The model's whole loop on a shared store: a stale edit shows the diff and the corrected edit
needs no read, an unchanged re-read is one line, ``changes`` and ``undo`` run through
``call_tool``, and a new ``Fs`` on the same bucket and stores (another process, a restart)
still undoes.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxfs.core import ErrorCode, Fs, open_fs
from ctxfs.tools import FsToolset
from ctxfs.tools.mcpserver import McpTools, create_server
from ctxfs.tools.results import ToolResult
from tests.remote.servers import S3

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the S3 backend and the Redis client run on asyncio


@pytest.fixture(scope="module")
def bucket() -> str:
    S3.require()
    return S3.create_bucket()


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.slow)])
def opener(request: pytest.FixtureRequest, bucket: str, tmp_path: Path) -> Any:
    """Opens an ``Fs`` on one prefix of the bucket with shared stores, again and again."""
    if request.param == "sqlite":
        stores = {
            "sessions": f"sqlite:///{tmp_path}/sessions.db",
            "observations": f"sqlite:///{tmp_path}/observations.db",
        }
    else:
        url = str(request.getfixturevalue("redis_url"))
        stores = {"sessions": url, "observations": url}
    url = S3.url(bucket, uuid.uuid4().hex[:12])
    return lambda: open_fs(url, load_entrypoints=False, **S3.options, **stores)


async def call(fs: Fs, owner: str, name: str, arguments: dict[str, Any]) -> ToolResult:
    tools = FsToolset()
    if name in ("undo", "changes"):
        arguments = {"name": name, "arguments": arguments}
        name = "call_tool"
    return await tools.execute(fs.context(owner=owner), name, arguments)


async def test_the_models_loop_on_a_shared_store_survives_a_restart(opener: Any) -> None:
    async with opener() as fs:
        await call(fs, "setup", "write", {"file_path": "app.py", "content": "a = 1\nb = 2\n"})
        first = await call(fs, "agent", "read", {"file_path": "app.py"})
        assert first.text.startswith("1 a = 1\n")
        again = await call(fs, "agent", "read", {"file_path": "app.py"})
        assert again.structured["unchanged"] is True
        await call(fs, "other", "read", {"file_path": "app.py"})
        outside = {"file_path": "app.py", "old_string": "a = 1", "new_string": "a = 10"}
        assert not (await call(fs, "other", "edit", outside)).is_error
        mine = {"file_path": "app.py", "old_string": "b = 2", "new_string": "b = 20"}
        stale = await call(fs, "agent", "edit", mine)
        assert stale.error_code is ErrorCode.STALE
        assert "-a = 1\n+a = 10" in stale.text
        assert not (await call(fs, "agent", "edit", mine)).is_error  # no read in between
        changes = await call(fs, "agent", "changes", {})
        assert not changes.is_error, changes.text
    async with opener() as fs:  # another process, or a restart: the same bucket and stores
        undone = await call(fs, "agent", "undo", {})
        assert not undone.is_error, undone.text
        assert (await fs.backend.read("app.py")).data == b"a = 10\nb = 2\n"


async def test_the_mcp_server_serves_the_loop_on_a_shared_store(opener: Any) -> None:
    async with opener() as fs:
        await call(fs, "setup", "write", {"file_path": "notes.md", "content": "one\n"})
        async with Client(create_server(McpTools(fs)), raise_exceptions=True) as client:
            first = await client.call_tool("read", {"file_path": "notes.md"})
            again = await client.call_tool("read", {"file_path": "notes.md"})
            assert first.structured_content is not None
            assert again.structured_content is not None
            assert first.structured_content["content"] == "one\n"
            assert again.structured_content["unchanged"] is True
            edit = {"file_path": "notes.md", "old_string": "one", "new_string": "two"}
            assert not (await client.call_tool("edit", edit)).is_error
            undo = await client.call_tool("call_tool", {"name": "undo", "arguments": "{}"})
            assert not undo.is_error, undo.content
        assert (await fs.backend.read("notes.md")).data == b"one\n"
