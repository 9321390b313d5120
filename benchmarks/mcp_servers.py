"""``ctxfs serve`` against the reference MCP filesystem server, through one MCP client.

The reference is npm's ``@modelcontextprotocol/server-filesystem``, installed on
first use into a cache directory (``CTXFS_BENCH_NODE``, default under the
system temporary directory). Both servers run as subprocesses over stdio on
copies of the same ~10 KB file, and the same ``mcp`` client drives both with the
initialize handshake (the only protocol the reference speaks): a read is our
``read`` against its ``read_text_file``, an edit our ``edit`` against its
``edit_file``, each one full round trip. A ``ping`` through both, with no tool
behind it, shows what the two SDKs' servers cost before any tool work.

The roots are on tmpfs where there is one (``/dev/shm``), so durability costs
both servers the same. :func:`above_floor` then measures what ctxfs controls:
each operation's round trip minus its own server's ``ping``, the six timings
interleaved round by round, so a drift of the machine touches all alike.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Final

from mcp import Client, StdioServerParameters

from benchmarks.harness import Case, Timed
from benchmarks.text_semantics import text_of_size, toggle

GROUP = "MCP round trips over stdio, ~10 KB file: `ctxfs serve` against the reference server"
REFERENCE: Final = "@modelcontextprotocol/server-filesystem"
NODE_HOME: Final = Path(
    os.environ.get("CTXFS_BENCH_NODE", Path(tempfile.gettempdir()) / "ctxfs-bench-node")
)


def reference_server() -> Path:
    """The reference server's entry script, installed with npm on first use."""
    script = NODE_HOME / "node_modules" / REFERENCE / "dist" / "index.js"
    if not script.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(f"npm is needed to install {REFERENCE} for the MCP comparison")
        print(f"installing {REFERENCE} into {NODE_HOME}", file=sys.stderr)
        subprocess.run(
            [npm, "install", "--prefix", str(NODE_HOME), "--no-audit", "--no-fund",
             "--loglevel=error", REFERENCE],
            check=True,
        )  # fmt: skip
    return script


def reference_version() -> str:
    """The installed version of the reference server."""
    import json  # noqa: PLC0415

    package = NODE_HOME / "node_modules" / REFERENCE / "package.json"
    return str(json.loads(package.read_text())["version"])


async def _checked(client: Client, tool: str, arguments: dict[str, Any]) -> object:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed in the benchmark: {result.content}")
    return result


FloorSection = Callable[[], Awaitable[list[str]]]


@asynccontextmanager
async def cases(workdir: Path) -> AsyncIterator[tuple[list[Case], FloorSection]]:
    """Both servers on their copy of the file, the cases timing them, and the floor section."""
    script = reference_server()
    data = text_of_size(10_000)
    at = len(data) // 2
    data = data[:at] + b"UNIQUE-MARKER-A\n" + data[at:]
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="ctxfs-mcp-", dir=shm)) if shm.is_dir() else workdir
    ours_root, theirs_root = base / "mcp-ctxfs", base / "mcp-reference"
    for root in (ours_root, theirs_root):
        root.mkdir()
        (root / "module.py").write_bytes(data)
    theirs_file = str((theirs_root / "module.py").resolve())
    ctxfs = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ctxfs.tools.cli", "serve", "--root", str(ours_root)],
        env=dict(os.environ),
    )
    reference = StdioServerParameters(command="node", args=[str(script), str(theirs_root)])
    async with AsyncExitStack() as stack:
        if base != workdir:  # (last out: after both servers stopped)
            stack.callback(shutil.rmtree, base, True)
        ours = await stack.enter_async_context(Client(ctxfs, mode="legacy"))
        theirs = await stack.enter_async_context(Client(reference, mode="legacy"))
        await _checked(ours, "read", {"file_path": "module.py"})  # edits need a read first

        async def ours_edit(old: str, new: str) -> object:
            arguments = {"file_path": "module.py", "old_string": old, "new_string": new}
            return await _checked(ours, "edit", arguments)

        async def theirs_edit(old: str, new: str) -> object:
            arguments = {"path": theirs_file, "edits": [{"oldText": old, "newText": new}]}
            return await _checked(theirs, "edit_file", arguments)

        ours_toggled, theirs_toggled = toggle(ours_edit), toggle(theirs_edit)  # one state each

        def ours_read() -> Awaitable[object]:
            return _checked(ours, "read", {"file_path": "module.py", "fresh": True})

        def theirs_read() -> Awaitable[object]:
            return _checked(theirs, "read_text_file", {"path": theirs_file})

        async def floor_section() -> list[str]:
            return await above_floor(
                ping=(ours.send_ping, theirs.send_ping),
                operations={
                    "read": (ours_read, theirs_read),
                    "edit": (ours_toggled, theirs_toggled),
                },
                where="tmpfs" if base != workdir else "disk (no tmpfs here)",
            )

        note = f"reference: {REFERENCE} {reference_version()} on node; same mcp client, stdio"
        yield (
            [
                Case(
                    group=GROUP,
                    name="protocol floor (`ping`, no tool runs)",
                    ours=ours.send_ping,
                    baseline=theirs.send_ping,
                    target=None,
                    rounds=25,
                    calls=10,
                    note=f"{note}. The same request through each SDK's server with no tool behind "
                    "it: the share of every round trip that ctxfs's tool work does not decide",
                ),
                Case(
                    group=GROUP,
                    name="read (`read` / `read_text_file`)",
                    ours=ours_read,
                    baseline=theirs_read,
                    target=None,
                    rounds=25,
                    calls=10,
                    note="whole round trips, each SDK's floor included (information); what "
                    "ctxfs controls, and its target, is the work above the floor (the section "
                    "*MCP work above the protocol floor*)",
                ),
                Case(
                    group=GROUP,
                    name="edit (`edit` / `edit_file`)",
                    ours=ours_toggled,
                    baseline=theirs_toggled,
                    target=None,
                    rounds=25,
                    calls=10,
                    note="ctxfs fsyncs the new file and its directory before it answers (durable); "
                    "the reference writes a temporary file and renames it without fsync; whole "
                    "round trips (information), the target being the work above the floor",
                ),
            ],
            floor_section,
        )


async def above_floor(
    *,
    ping: tuple[Timed, Timed],
    operations: dict[str, tuple[Timed, Timed]],
    where: str,
    rounds: int = 40,
    calls: int = 10,
) -> list[str]:
    """Each operation's round trip above its own server's ``ping``, ctxfs against the reference.

    Every round times, in turn, both pings and both sides of every operation
    (*calls* calls each). A round's work above the floor is its operation time
    minus its own ping time, so a drift of the machine between rounds cancels;
    the medians of those over the rounds are compared. The ratio is ctxfs's
    work above its floor over the reference's above its floor.
    """
    timed = {"ping": ping, **operations}
    samples: dict[tuple[str, int], list[float]] = {
        (name, side): [] for name in timed for side in (0, 1)
    }
    for _ in range(rounds):
        for name, sides in timed.items():
            for side, call in enumerate(sides):
                started = time.perf_counter()
                for _ in range(calls):
                    await call()
                samples[name, side].append((time.perf_counter() - started) / calls)
    median = {key: statistics.median(values) for key, values in samples.items()}
    above = {
        (name, side): statistics.median(
            op - floor for op, floor in zip(samples[name, side], samples["ping", side], strict=True)
        )
        for name in operations
        for side in (0, 1)
    }
    rows = [
        "## MCP work above the protocol floor (issue 20's measure)",
        "",
        f"Both servers on {where}, the same client, stdio; every round times both pings and "
        f"both sides of each operation in turn ({rounds} rounds of {calls} calls). Above the "
        "floor: the median over the rounds of the operation's round trip minus its own "
        "server's `ping` in the same round.",
        "",
        "| operation | ctxfs: round trip, above floor | reference: round trip, above floor "
        "| ratio above floor | target | met |",
        "|---|---|---|---|---|---|",
        f"| ping (the floor) | {_us(median['ping', 0])} | {_us(median['ping', 1])} | — | — | — |",
    ]
    for name in operations:
        ours, theirs = above[name, 0], above[name, 1]
        ratio = ours / theirs
        rows.append(
            f"| {name} | {_us(median[name, 0])}, {_us(ours)} | {_us(median[name, 1])}, "
            f"{_us(theirs)} | {ratio:.2f}× | ≤ 1× | {'yes' if ratio <= 1 else '**missed**'} |"
        )
    return [*rows, ""]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"
