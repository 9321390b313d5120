"""Cold start: what a client waits for before its first answer. ``python -m benchmarks.cold_start``.

Three servers over stdio, each started afresh for every sample and driven by
the same ``mcp`` client with the initialize handshake (the only protocol the
reference speaks): spawn, handshake, list the tools, read one small text file,
timed until the read's answer arrives.

- **ctxfs**: ``ctxfs serve --root ROOT``, as a client's configuration starts it;
- **bare SDK server**: the same SDK's ``MCPServer`` with one ``read`` tool, a
  script of a dozen lines (:data:`BARE_SERVER`): the floor any server built on
  the Python SDK stands on;
- **reference**: ``@modelcontextprotocol/server-filesystem`` on node.

Then the commands that need no MCP SDK, as whole processes: ``ctxfs --version``
and ``ctxfs call read`` on a text file, next to the interpreter alone and the
SDK's import alone. Every round runs every subject once, in an order that
rotates round by round, so a drift of the machine touches all alike; the
tables give medians. ctxfs runs with its defaults (observations kept in SQLite,
in a state directory of the run). A first round, untimed, lets Python cache
every module's bytecode, as an installed package has it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks.mcp_servers import REFERENCE, reference_server, reference_version

ROUNDS: Final = 9
TEXT: Final = "a small text file\n" * 20
"""The file every server reads."""
START_TARGET: Final = 0.15
"""Most seconds ctxfs's cold start may take above the bare SDK server's."""
COMMAND_TARGET: Final = 0.25
"""Most seconds ``ctxfs --version`` and ``ctxfs call`` may take."""
BARE_SERVER: Final = '''
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

root = Path(sys.argv[1])
server = MCPServer("bare")


@server.tool()
def read(file_path: str) -> str:
    """Read a text file of the root."""
    return (root / file_path).read_text()


server.run()
'''
"""The bare SDK server: one read tool on the SDK's high-level server, over stdio."""


async def section(workdir: Path) -> list[str]:
    """The cold start tables."""
    root = workdir / "cold-start"
    root.mkdir()
    (root / "notes.txt").write_text(TEXT)
    bare = workdir / "bare_server.py"
    bare.write_text(BARE_SERVER)
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["CTXFS_STATE_DIR"] = str(workdir / "cold-start-state")
    ctxfs = str(Path(sys.executable).with_name("ctxfs"))
    servers = {
        "ctxfs": (StdioServerParameters(command=ctxfs, args=["serve", "--root", str(root)],
                                        env=env),
                  "read", {"file_path": "notes.txt"}),
        "bare SDK server": (StdioServerParameters(command=sys.executable,
                                                  args=[str(bare), str(root)], env=env),
                            "read", {"file_path": "notes.txt"}),
        "reference": (StdioServerParameters(command="node",
                                            args=[str(reference_server()), str(root)], env=env),
                      "read_text_file", {"path": str(root / "notes.txt")}),
    }  # fmt: skip
    commands: dict[str, tuple[list[str], float | None]] = {
        "`ctxfs --version`": ([ctxfs, "--version"], COMMAND_TARGET),
        "`ctxfs call --root ROOT read '{\"file_path\": ...}'`": (
            [ctxfs, "call", "--root", str(root), "read", '{"file_path": "notes.txt"}'],
            COMMAND_TARGET,
        ),
        "`python -c pass` (the interpreter alone)": ([sys.executable, "-c", "pass"], None),
        "`import mcp.server.mcpserver` (the SDK's import alone, to `os._exit`)": (
            [sys.executable, "-c", "import os, mcp.server.mcpserver; os._exit(0)"], None
        ),
    }  # fmt: skip
    timed: dict[str, Callable[[], Awaitable[float]]] = {
        **{name: _first_read(*server) for name, server in servers.items()},
        **{name: _command(argv, env) for name, (argv, _) in commands.items()},
    }
    samples = await _interleaved(timed, ROUNDS)
    start = {name: statistics.median(samples[name]) for name in servers}
    above = start["ctxfs"] - start["bare SDK server"]
    rows = [
        "## Cold start: spawn, handshake, list tools, one read",
        "",
        "A fresh server process for every sample, over stdio, driven by the same `mcp` client "
        "(initialize handshake); timed from the spawn to the answer of the first read (a "
        f"{len(TEXT)}-byte text file). The bare SDK server is the SDK's own `MCPServer` with "
        f"one read tool; the reference is {REFERENCE} {reference_version()} on node. Medians "
        f"of {ROUNDS} rounds, every subject once a round in rotating order.",
        "",
        "| ctxfs | bare SDK server | reference | ctxfs above the bare SDK server | target | met |",
        "|---|---|---|---|---|---|",
        f"| {_s(start['ctxfs'])} | {_s(start['bare SDK server'])} | {_s(start['reference'])} "
        f"| {above:+.2f} s | ≤ {START_TARGET:g} s | {_met(above <= START_TARGET)} |",
        "",
        "Commands that need no MCP SDK, as whole processes (same rounds):",
        "",
        "| command | median | target | met |",
        "|---|---|---|---|",
    ]
    for name, (_, target) in commands.items():
        median = statistics.median(samples[name])
        goal, met = ("—", "—") if target is None else (f"≤ {target:g} s", _met(median <= target))
        rows.append(f"| {name} | {_s(median)} | {goal} | {met} |")
    return [*rows, ""]


def _first_read(
    server: StdioServerParameters, tool: str, arguments: dict[str, str]
) -> Callable[[], Awaitable[float]]:
    """Seconds from spawning *server* to the answer of its first *tool* call."""

    async def timed() -> float:
        with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 - /dev/null never blocks
            started = time.perf_counter()
            async with Client(stdio_client(server, errlog=quiet), mode="legacy") as client:
                await client.list_tools()
                result = await client.call_tool(tool, arguments)
                elapsed = time.perf_counter() - started
        if result.is_error:
            raise RuntimeError(f"{tool} failed in the benchmark: {result.content}")
        return elapsed

    return timed


def _command(argv: list[str], env: dict[str, str]) -> Callable[[], Awaitable[float]]:
    """Seconds *argv* takes to run to its end."""

    async def timed() -> float:
        started = time.perf_counter()
        await anyio.run_process(argv, env=env)
        return time.perf_counter() - started

    return timed


async def _interleaved(
    timed: dict[str, Callable[[], Awaitable[float]]], rounds: int
) -> dict[str, list[float]]:
    """*rounds* samples of each, every one once a round, the order rotating round by round.

    A first round, untimed, warms the caches: nothing timed runs for the first time.
    """
    names = list(timed)
    for name in names:
        await timed[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(await timed[name]())
    return samples


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def _met(met: bool) -> str:
    return "yes" if met else "**missed**"


async def _main() -> None:
    with tempfile.TemporaryDirectory(prefix="ctxfs-cold-") as name:
        print("\n".join(await section(Path(name))))


if __name__ == "__main__":
    anyio.run(_main)
