"""``examples/`` works as its README says: the scripts run, the MCP configurations start a server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLACEHOLDER = "/path/to/project"
"""The project directory as the MCP configurations spell it, for the reader to replace."""
CONFIGS = {  # file -> the key its client reads servers from
    "claude_desktop_config.json": "mcpServers",
    "cursor.json": "mcpServers",
    "vscode.json": "servers",
}


def run_example(name: str, directory: Path) -> str:
    """Run ``examples/NAME`` as its README says, with warnings as errors; what it printed."""
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / name)],
        cwd=directory, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_pydantic_ai_example_reads_then_edits_the_file(tmp_path: Path) -> None:
    assert run_example("with_pydantic_ai.py", tmp_path).splitlines() == [
        'read -> 1 print("Helo, world")',
        "(end of file; lines 1-1 of 1)",
        "edit -> Edited hello.py: 1 replacement, line 1.",
        "@@ -1,1 +1,1 @@",
        '-print("Helo, world")',
        '+print("Hello, world")',
        "Fixed it.",
        'print("Hello, world")',
    ]


def test_every_example_is_listed_in_the_readme() -> None:
    listed = (EXAMPLES / "README.md").read_text()
    scripts = sorted(path.name for path in EXAMPLES.glob("with_*.py"))
    assert "with_pydantic_ai.py" in scripts
    assert [name for name in scripts if f"({name})" not in listed] == []
    configs = sorted(path.name for path in (EXAMPLES / "mcp").iterdir())
    assert configs == sorted(CONFIGS)
    assert [name for name in configs if f"(mcp/{name})" not in listed] == []


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the MCP client's stdio is asyncio's
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.anyio
async def test_the_mcp_configuration_starts_a_server_the_client_can_use(
    config: str, tmp_path: Path
) -> None:
    servers = json.loads((EXAMPLES / "mcp" / config).read_text())[CONFIGS[config]]
    (entry,) = servers.values()
    assert entry.get("type", "stdio") == "stdio"
    if config == "vscode.json":
        assert entry["type"] == "stdio"  # VS Code's "servers" must say it
    assert entry["command"] == "ctxfs"
    assert PLACEHOLDER in entry["args"]
    (tmp_path / "notes.md").write_text("alpha\n")
    server = StdioServerParameters(
        command=str(Path(sys.executable).with_name("ctxfs")),  # this environment's console script
        args=[str(tmp_path) if arg == PLACEHOLDER else arg for arg in entry["args"]],
        env={**os.environ, **entry.get("env", {})},
    )
    async with Client(stdio_client(server), mode="legacy") as client:  # the clients' handshake
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("read", {"file_path": "notes.md"})
    assert {"read", "edit", "write", "grep"} <= names
    assert not result.is_error
    assert isinstance(result.content[0], TextContent)
    assert result.content[0].text.startswith("1 alpha\n")
