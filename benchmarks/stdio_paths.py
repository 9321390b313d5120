"""Does ctxfs's own stdio path earn its keep? ``python -m benchmarks.stdio_paths``.

Two ``ctxfs`` servers over stdio on copies of the same ~10 KB file (tmpfs where
there is one), driven by one ``mcp`` client with the initialize handshake:

- **direct**: ``ctxfs serve``, whose own stdio transport answers ``tools/call``
  straight from the wire (:mod:`ctxfs.tools.directcalls`);
- **sdk**: the same tools (:func:`ctxfs.tools.mcpserver.create_server`) served
  by the SDK alone: its ``stdio_server`` and ``Server.run``.

Each round drives both servers, in alternating order, through what an agent
does: an edit after a read, a read right after that edit, and a read after a
read; each call is one timed round trip. The report gives each call's median
and how much the direct path cuts it. Issue 30 keeps the direct path only if it
cuts a whole read round trip by at least 25%.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any, Final

import anyio
from mcp import Client, MCPDeprecationWarning, StdioServerParameters

from benchmarks.text_semantics import text_of_size

SDK_PATH: Final = """
import sys

import anyio
from mcp.server.stdio import stdio_server

from ctxfs.core import open_fs
from ctxfs.tools.mcpserver import McpTools, create_server


async def main() -> None:
    async with open_fs(sys.argv[1]) as fs:
        server = create_server(McpTools(fs, per_session=False))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""
"""The SDK path: ctxfs's tools, the SDK's stdio transport and server loop."""

STEPS: Final = ("edit after a read", "read after an edit", "read after a read")


async def main(rounds: int = 300) -> None:
    """Time both paths, interleaved round by round; print the table."""
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="ctxfs-paths-", dir=shm if shm.is_dir() else None))
    data = text_of_size(10_000)
    marker = len(data) // 2
    data = data[:marker] + b"UNIQUE-MARKER-A\n" + data[marker:]
    commands = {
        "direct": ["-m", "ctxfs.tools.cli", "serve", "--root"],
        "sdk": ["-c", SDK_PATH],
    }
    try:
        async with AsyncExitStack() as stack:
            clients: dict[str, Client] = {}
            for name, command in commands.items():
                root = base / name
                root.mkdir()
                (root / "module.py").write_bytes(data)
                server = StdioServerParameters(
                    command=sys.executable, args=[*command, str(root)], env=dict(os.environ)
                )
                clients[name] = await stack.enter_async_context(Client(server, mode="legacy"))
            samples = {(name, step): [] for name in clients for step in ("ping", *STEPS)}
            toggles = dict.fromkeys(clients, False)
            for client in clients.values():  # warm up; edits need a read first
                for _ in range(20):
                    await _call(client, "read", {"file_path": "module.py"})
            for number in range(rounds):
                order = list(clients) if number % 2 == 0 else list(reversed(clients))
                for name in order:
                    client = clients[name]
                    old, new = ("UNIQUE-MARKER-A", "UNIQUE-MARKER-B")[:: -1 if toggles[name] else 1]
                    toggles[name] = not toggles[name]
                    edit = {"file_path": "module.py", "old_string": old, "new_string": new}
                    read = {"file_path": "module.py"}
                    timed = [
                        ("ping", client.send_ping),
                        (STEPS[0], partial(_call, client, "edit", edit)),
                        (STEPS[1], partial(_call, client, "read", read)),
                        (STEPS[2], partial(_call, client, "read", read)),
                    ]
                    for step, call in timed:
                        started = time.perf_counter()
                        await call()
                        samples[name, step].append(time.perf_counter() - started)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{rounds} rounds, both paths in each, alternating order; medians of single calls")
    print("| call | direct | sdk | cut by the direct path |")
    print("|---|---|---|---|")
    for step in ("ping", *STEPS):
        direct = statistics.median(samples["direct", step])
        sdk = statistics.median(samples["sdk", step])
        print(f"| {step} | {direct * 1e6:,.0f} µs | {sdk * 1e6:,.0f} µs | {1 - direct / sdk:.1%} |")


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")


if __name__ == "__main__":
    warnings.simplefilter("ignore", MCPDeprecationWarning)  # ping: only the handshake era has it
    anyio.run(main)
