"""A client that starts a server for each call reads, then edits: the read is kept for the edit.

langchain-mcp-adapters' ``MultiServerMCPClient.get_tools()`` (its default) opens a
new stdio session, a new ``ctxfs serve`` process, for every tool call. It runs
here in an environment of its own (it brings its own ``mcp`` SDK), made with uv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ADAPTERS = "langchain-mcp-adapters==0.3.2"
"""Pinned: the test proves ctxfs against a known client, not the adapters' latest release."""

_AGENT = textwrap.dedent(
    """
    import asyncio, json, sys
    from langchain_mcp_adapters.client import MultiServerMCPClient

    async def main(python, root):
        serve = [python, "-m", "ctxfs.tools.cli", "serve", "--root", root]
        client = MultiServerMCPClient(
            {"fs": {"command": serve[0], "args": serve[1:], "transport": "stdio"}}
        )
        tools = {tool.name: tool for tool in await client.get_tools()}
        read = await tools["read"].ainvoke({"file_path": "a.txt"})
        edit = {"file_path": "a.txt", "old_string": "beta", "new_string": "gamma"}
        edited = await tools["edit"].ainvoke(edit)
        print(json.dumps({"read": str(read), "edit": str(edited)}))

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


@pytest.fixture(scope="session")
def adapters_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of an environment holding langchain-mcp-adapters (and nothing of ctxfs)."""
    uv = shutil.which("uv")
    if uv is None:
        message = "uv makes the adapters' environment: pip install uv"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    venv = tmp_path_factory.mktemp("adapters") / "venv"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [uv, "pip", "install", "-q", "--python", str(python), ADAPTERS]
    subprocess.run(install, check=True, timeout=600)
    return python


def test_a_client_that_starts_a_server_per_call_reads_then_edits(
    adapters_python: Path, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\nbeta\n")
    agent = tmp_path / "agent.py"
    agent.write_text(_AGENT)
    done = subprocess.run(
        [str(adapters_python), str(agent), sys.executable, str(root)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    said = json.loads(done.stdout.splitlines()[-1])
    assert "2 beta" in said["read"]
    assert "Edited a.txt: 1 replacement, line 2." in said["edit"], said["edit"]
    assert (root / "a.txt").read_text() == "alpha\ngamma\n"
