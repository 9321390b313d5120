"""``ctxfs serve --transport http`` under load, and its memory after a long run.

The server runs as a subprocess on a workspace on tmpfs where there is one
(``/dev/shm``: the disk's fsync is not what is measured), with a token per
client. The clients are lean: raw HTTP/1.1 over one keep-alive connection
each, JSON-RPC bodies made once, in this process, so that the server, not the
load, is what saturates. Each client opens its session (``initialize``), then
reads its own 10 KB file and edits it, in turn, as fast as it can; every
answer is checked to be no error. For 1, 8 and 32 clients at once: calls per
second, the median and 99th percentile latency of a call, the fewest and most
calls any one client made (no client starves), and the CPU the server's
processes used, in cores.

The long run drives 100,000 reads across 1,000 files and 500 owners (one
principal, the owners named in ``_meta``; reads are what observations grow by), then
opens 500 sessions and drops them unclosed, and reports the server's resident
memory against the bounds the observation store and the session manager keep.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc

from benchmarks.harness import free_port, listening
from benchmarks.text_semantics import text_of_size
from ctxfs.core.observations import DEFAULT_MAX_OBSERVATIONS, DEFAULT_MAX_PER_OWNER

CLIENTS: Final = (1, 8, 32)
SECONDS: Final = 8.0
WARMUP_SECONDS: Final = 1.5
PROTOCOL: Final = "2026-07-28"
"""The current protocol: stateless, each request carrying its envelope (any worker answers)."""
MARKERS: Final = (b"UNIQUE-MARKER-A", b"UNIQUE-MARKER-B")
LONG_RUN_CALLS: Final = 100_000
LONG_RUN_FILES: Final = 1_000
LONG_RUN_OWNERS: Final = 500
DROPPED_SESSIONS: Final = 500


def token(number: int) -> str:
    """The token of client *number* (principal ``clientNNNN``)."""
    return f"client{number:04d}-token-0123456789abcdef"


@dataclass
class Server:
    """A running ``ctxfs serve --transport http`` and where it listens."""

    process: subprocess.Popen[bytes]
    port: int

    def processes(self) -> list[int]:
        """The server's process and its workers'."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return [self.process.pid, *map(int, children.read_text().split())]
        except OSError:
            return [self.process.pid]

    def cpu_seconds(self) -> float:
        """CPU time the server's processes have used so far."""
        total = 0.0
        for pid in self.processes():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def resident_bytes(self) -> int:
        """Resident memory of the server's processes (``VmRSS``)."""
        total = 0
        for pid in self.processes():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            kilobytes = next(
                line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")
            )
            total += int(kilobytes) * 1024
        return total


@contextmanager
def served(root: Path, tokens: Path, *options: str) -> Iterator[Server]:
    """``ctxfs serve --transport http`` on *root* until the block ends."""
    port = free_port()
    command = [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--transport", "http",
               "--port", str(port), "--root", str(root), "--token-file", str(tokens),
               *options]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"ctxfs serve did not start: {process.communicate()[1]!r}")
        time.sleep(0.05)
    try:
        yield Server(process=process, port=port)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()


class Wire:
    """One keep-alive HTTP/1.1 connection POSTing JSON-RPC to ``/mcp`` (the lean client)."""

    def __init__(self, stream: anyio.abc.ByteStream, port: int, token_text: str) -> None:
        self.stream = stream
        self.head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token_text}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
        )
        self.buffer = b""

    @classmethod
    async def open(cls, port: int, token_text: str) -> Wire:
        """A connection (the current protocol has no session to open)."""
        return cls(await anyio.connect_tcp("127.0.0.1", port), port, token_text)

    async def post(self, body: bytes, headers: str) -> tuple[int, dict[bytes, bytes], bytes]:
        """POST *body* with *headers* (lines); the status, the headers and body of the answer."""
        head = f"{self.head}{headers}Content-Length: {len(body)}\r\n\r\n".encode()
        await self.stream.send(head + body)
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += await self.stream.receive()
        raw, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = raw.split(b"\r\n")
        answer_headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            answer_headers[name.strip().lower()] = value.strip()
        size = int(answer_headers.get(b"content-length", b"0"))
        while len(self.buffer) < size:
            self.buffer += await self.stream.receive()
        content, self.buffer = self.buffer[:size], self.buffer[size:]
        return int(lines[0].split()[1]), answer_headers, content

    async def call(self, tool: str, body: bytes) -> bytes:
        """POST a call of *tool*; its answer, which must be no error."""
        headers = (
            f"MCP-Protocol-Version: {PROTOCOL}\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n"
        )
        status, _, content = await self.post(body, headers)
        if status != 200 or b'"isError":false' not in content:
            raise RuntimeError(f"a call failed under load ({status}): {content[:300]!r}")
        return content


async def dropped_session(port: int, path: str) -> None:
    """Open a session of the handshake era, read *path* in it, and go without closing it."""
    wire = await Wire.open(port, token(0))
    legacy = "MCP-Protocol-Version: 2025-11-25\r\n"
    opening = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "ctxfs-bench", "version": "1"}}}  # fmt: skip
    _, headers, _ = await wire.post(json.dumps(opening).encode(), "")
    session = f"{legacy}mcp-session-id: {headers[b'mcp-session-id'].decode()}\r\n"
    initialized = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
    await wire.post(initialized, session)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read", "arguments": {"file_path": path}}}  # fmt: skip
    status, _, content = await wire.post(json.dumps(call).encode(), session)
    if status != 200 or b'"isError":false' not in content:
        raise RuntimeError(f"a read in a session failed ({status}): {content[:300]!r}")
    await wire.stream.aclose()


def edit_call(path: str, old: bytes, new: bytes) -> bytes:
    """The body of an ``edit`` of *path* from *old* to *new*."""
    arguments = {"file_path": path, "old_string": old.decode(), "new_string": new.decode()}
    return tool_call("edit", arguments)


def tool_call(name: str, arguments: dict[str, Any], owner: str | None = None) -> bytes:
    """The body of a ``tools/call`` (by *owner* within the principal, if given)."""
    envelope: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "ctxfs-bench", "version": "1"},
    }
    if owner is not None:
        envelope["io.ctxfs/owner"] = owner
    params: dict[str, Any] = {"name": name, "arguments": arguments, "_meta": envelope}
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    ).encode()


@dataclass
class Load:
    """What one round of clients did."""

    clients: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    cpu_cores: float = 0.0

    @property
    def per_second(self) -> float:
        """Calls per second, all clients together."""
        return sum(self.calls) / self.seconds

    def percentile(self, share: float) -> float:
        """The latency *share* of the calls took at most (0.99: the 99th percentile)."""
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


async def load(server: Server, clients: int, files: list[str]) -> Load:
    """*clients* clients, each reading and editing its own file, for :data:`SECONDS`."""
    result = Load(clients=clients, seconds=SECONDS, calls=[0] * clients)
    started = time.perf_counter()
    measuring = started + WARMUP_SECONDS
    stop = measuring + SECONDS
    cpu: list[float] = []

    async def client(number: int) -> None:
        wire = await Wire.open(server.port, token(number))
        path = files[number]
        read = tool_call("read", {"file_path": path, "fresh": True})  # the text, every time
        state = 1 if MARKERS[1] in await wire.call("read", read) else 0
        edits = [edit_call(path, MARKERS[side], MARKERS[1 - side]) for side in (0, 1)]
        for turn in itertools.count():
            if (now := time.perf_counter()) >= stop:
                break
            editing = turn % 2 == 1
            await wire.call("edit" if editing else "read", edits[state] if editing else read)
            state = 1 - state if editing else state
            if now >= measuring:
                result.latencies.append(time.perf_counter() - now)
                result.calls[number] += 1
        await wire.stream.aclose()

    async def sample_cpu() -> None:
        await anyio.sleep_until(measuring)
        cpu.append(server.cpu_seconds())
        await anyio.sleep_until(stop)
        cpu.append(server.cpu_seconds())

    async with anyio.create_task_group() as group:
        group.start_soon(sample_cpu)
        for number in range(clients):
            group.start_soon(client, number)
    result.cpu_cores = (cpu[1] - cpu[0]) / SECONDS
    return result


def workspace(base: Path, files: int) -> tuple[Path, list[str]]:
    """*files* files of 10 KB under *base*/root, and their paths."""
    root = base / "root"
    root.mkdir()
    data = text_of_size(10_000)
    at = len(data) // 2
    names = [f"src/f{n:04d}.py" for n in range(files)]
    (root / "src").mkdir()
    for name in names:
        (root / name).write_bytes(data[:at] + MARKERS[0] + b"\n" + data[at:])
    return root, names


def tokens_file(base: Path, count: int) -> Path:
    """A token file for clients 0 to *count* - 1."""
    path = base / "tokens"
    path.write_text("".join(f"client{n:04d} {token(n)}\n" for n in range(count)))
    path.chmod(0o600)
    return path


async def section(workdir: Path) -> list[str]:
    """The load and long-run sections of the report."""
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="ctxfs-http-", dir=shm if shm.is_dir() else workdir))
    try:
        root, files = workspace(base, max(CLIENTS))
        tokens = tokens_file(base, max(CLIENTS))
        rows = [
            "## HTTP under load: `ctxfs serve --transport http`, reads and edits of 10 KB files",
            "",
            "Each client has a token of its own and one keep-alive connection (lean raw "
            "HTTP/1.1 clients in one process, so that the server saturates first) and speaks "
            "the current protocol (2026-07-28: stateless requests); it reads "
            "its own file and edits it, in turn, for "
            f"{SECONDS:g} s after {WARMUP_SECONDS:g} s of warming up. Latency is per call; "
            "*calls per client* is the fewest and the most any one client made; *server CPU* "
            "is the cores the server's processes used. With more than one worker the server "
            "is stateless and the workers share observations in SQLite.",
            "",
            "| workers | clients | calls/s | vs 1 client | p50 | p99 | calls per client "
            "| server CPU |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for workers in (1, 2):
            with served(root, tokens, "--workers", str(workers)) as server:
                single = None
                for clients in CLIENTS:
                    done = await load(server, clients, files)
                    single = single or done.per_second
                    rows.append(
                        f"| {workers} | {clients} | {done.per_second:,.0f} | "
                        f"{done.per_second / single:.2f}× | {done.percentile(0.5) * 1e3:.2f} ms | "
                        f"{done.percentile(0.99) * 1e3:.2f} ms | {min(done.calls):,}–"
                        f"{max(done.calls):,} | {done.cpu_cores:.2f} |"
                    )
        rows.append("")
        rows += await long_run(base)
        return rows
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def long_run(base: Path) -> list[str]:
    """Memory after :data:`LONG_RUN_CALLS` calls, and after sessions dropped unclosed."""
    many = base / "many"
    many.mkdir()
    root, files = workspace(many, LONG_RUN_FILES)
    tokens = tokens_file(many, 1)
    rng = random.Random(20)
    with served(root, tokens) as server:
        wires = [await Wire.open(server.port, token(0)) for _ in range(8)]
        await wires[0].call("read", tool_call("read", {"file_path": files[0]}))
        started = server.resident_bytes()
        began = time.perf_counter()
        sent = 0

        async def drive(wire: Wire, share: int) -> None:
            nonlocal sent
            for _ in range(share):
                owner = f"agent-{rng.randrange(LONG_RUN_OWNERS)}"
                path = files[rng.randrange(LONG_RUN_FILES)]
                arguments = {"file_path": path, "fresh": True}
                await wire.call("read", tool_call("read", arguments, owner))
                sent += 1

        async with anyio.create_task_group() as group:
            for wire in wires:
                group.start_soon(drive, wire, LONG_RUN_CALLS // len(wires))
        seconds = time.perf_counter() - began
        after_calls = server.resident_bytes()
        for _ in range(DROPPED_SESSIONS):  # opened, used once, never closed
            await dropped_session(server.port, files[0])
        after_sessions = server.resident_bytes()
    mib = 1 << 20
    store = DEFAULT_MAX_OBSERVATIONS
    per_session = max(0, after_sessions - after_calls) / DROPPED_SESSIONS
    return [
        "## A day-long server: memory after 100,000 calls",
        "",
        f"One worker, the default stores. {sent:,} reads in {seconds:.0f} s by "
        f"{LONG_RUN_OWNERS} owners across {LONG_RUN_FILES:,} files of 10 KB: up to "
        f"{LONG_RUN_OWNERS * LONG_RUN_FILES:,} (owner, file) pairs, of which the observation "
        f"store keeps at most {store:,} ({DEFAULT_MAX_PER_OWNER:,} per owner; the owners "
        "least recently active give way first). Then "
        f"{DROPPED_SESSIONS} sessions opened, used once and dropped without closing: each "
        "holds its state until `--session-idle` (1,800 s) ends it, at most `--max-sessions` "
        "(1,000) at a time, and its observations go with it.",
        "",
        "| resident memory | MiB |",
        "|---|---|",
        f"| after the first call | {started / mib:.0f} |",
        f"| after {sent:,} calls | {after_calls / mib:.0f} |",
        f"| after {DROPPED_SESSIONS} dropped sessions more | {after_sessions / mib:.0f} |",
        "",
        f"Bounds: observations at most {store:,} × about 300 bytes (30 MB); session state at "
        f"most 1,000 × about {per_session / 1024:.0f} KB "
        "(measured here); encodings known for 1,024 versions; the search memo and the "
        "toolset's offer are bounded by their own limits.",
        "",
    ]
