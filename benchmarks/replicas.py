"""Replicas: ``ctxfs serve`` processes on one bucket and one Redis, behind a round-robin router.

Each replica is ``ctxfs serve --transport http --url s3://BUCKET/PREFIX
--observations redis://…`` on moto (127.0.0.1:5555) and the Redis test server
(127.0.0.1:6390), with the same token file. Agents are real ``mcp`` clients on
the current protocol, one token each; every HTTP request they send goes to the
next replica in turn (:class:`RoundRobin`, what a load balancer does), so an
agent's read and its edit usually reach different replicas. Each guarded
increment is a ``read`` and an ``edit`` of ``counter.txt``; an edit refused
``stale`` is read again and retried. Lost updates (final count against
increments made) must be 0. The baseline is the same run on one replica.
"""

from __future__ import annotations

import itertools
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.harness import free_port, listening

REPLICAS: Final = 3
AGENTS: Final = 8
INCREMENTS: Final = 100
MOTO: Final = "http://127.0.0.1:5555"
REDIS: Final = "redis://127.0.0.1:6390/0"
S3_ENV: Final = {
    "AWS_ENDPOINT_URL": MOTO,
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


class RoundRobin(httpx2.AsyncBaseTransport):
    """An HTTP transport that sends each request to the next of *ports* on 127.0.0.1."""

    def __init__(self, ports: list[int]) -> None:
        self._next = itertools.cycle(ports)
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send *request* to the next replica."""
        port = next(self._next)
        request.url = request.url.copy_with(host="127.0.0.1", port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._inner.aclose()


@asynccontextmanager
async def agent(ports: list[int], token: str) -> AsyncIterator[Client]:
    """An ``mcp`` client whose requests go round-robin to the replicas on *ports*."""
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=300),  # the MCP transports' defaults
        transport=RoundRobin(ports),
    )
    transport = streamable_http_client("http://127.0.0.1/mcp", http_client=http)
    async with http, Client(transport) as client:
        yield client


@dataclass
class Cluster:
    """Running replicas: their ports and the token of each agent (principal ``agent-N``)."""

    ports: list[int]
    tokens: dict[str, str]
    url: str
    processes: list[subprocess.Popen[str]] = field(default_factory=list)


def create_bucket() -> str:
    """A new bucket on moto."""
    import s3fs  # noqa: PLC0415 - the s3 extra

    name = f"ctxfs-replicas-{uuid.uuid4().hex[:12]}"
    s3fs.S3FileSystem(
        skip_instance_cache=True, endpoint_url=MOTO, key="testing", secret="testing"
    ).call_s3("create_bucket", Bucket=name)
    return name


@contextmanager
def cluster(workdir: Path, *, replicas: int, agents: int, redis: str = REDIS) -> Iterator[Cluster]:
    """Start *replicas* servers on a fresh bucket and Redis key prefix; stop them afterwards."""
    tokens = {f"agent-{n}": secrets.token_urlsafe(24) for n in range(agents)}
    token_file = workdir / f"tokens-{uuid.uuid4().hex[:8]}"
    token_file.write_text("".join(f"{who} {token}\n" for who, token in tokens.items()))
    token_file.chmod(0o600)
    url = f"s3://{create_bucket()}/shared"
    observations = f"{redis}?prefix=ctxfs-bench-{uuid.uuid4().hex[:8]}:"
    ports = [free_port() for _ in range(replicas)]
    running = Cluster(ports=ports, tokens=tokens, url=url)
    try:
        for port in ports:
            command = [
                sys.executable, "-m", "ctxfs.tools.cli", "serve", "--transport", "http",
                "--port", str(port), "--url", url, "--observations", observations,
                "--token-file", str(token_file),
            ]  # fmt: skip
            replica = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, **S3_ENV},
            )
            running.processes.append(replica)
        for port, process in zip(ports, running.processes, strict=True):
            _wait_for(port, process)
        yield running
    finally:
        for process in running.processes:
            process.terminate()
        for process in running.processes:
            process.communicate(timeout=30)


async def increments(ports: list[int], token: str, count: int, latencies: list[float]) -> int:
    """Make *count* guarded increments of ``counter.txt``; return the stale edits retried."""
    stale = 0
    async with agent(ports, token) as client:
        for _ in range(count):
            while True:
                started = time.perf_counter()
                # a program, not a model: it needs the text every time (fresh)
                read = await client.call_tool("read", {"file_path": "counter.txt", "fresh": True})
                latencies.append(time.perf_counter() - started)
                text = _structured(read)["content"]
                started = time.perf_counter()
                edit = await client.call_tool(
                    "edit",
                    {"file_path": "counter.txt", "old_string": text,
                     "new_string": f"{int(text) + 1}\n"},
                )  # fmt: skip
                latencies.append(time.perf_counter() - started)
                if not edit.is_error:
                    break
                code = _structured(edit)["error"]["code"]
                if code != "stale":
                    raise RuntimeError(f"an increment failed {code}: {_structured(edit)}")
                stale += 1
    return stale


async def run(workdir: Path, *, replicas: int, agents: int, count: int) -> dict[str, float]:
    """Run *agents* × *count* increments on *replicas*; return the measurements."""
    with cluster(workdir, replicas=replicas, agents=agents) as running:
        tokens = list(running.tokens.values())
        async with agent(running.ports, tokens[0]) as setup:
            created = await setup.call_tool("write", {"file_path": "counter.txt", "content": "0\n"})
            assert not created.is_error, created
        latencies: list[float] = []
        stale: list[int] = []

        async def one(token: str) -> None:
            stale.append(await increments(running.ports, token, count, latencies))

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for token in tokens:
                group.start_soon(one, token)
        elapsed = time.perf_counter() - started
        async with agent(running.ports, tokens[0]) as check:
            final = int(
                _structured(
                    await check.call_tool("read", {"file_path": "counter.txt", "fresh": True})
                )["content"]
            )
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "increments": agents * count,
        "seconds": elapsed,
        "stale": sum(stale),
        "lost": agents * count - final,
        "p50": cuts[49],
        "p99": cuts[98],
    }


def section(workdir: Path) -> list[str]:
    """The replicas table: three replicas against one, same agents and increments."""
    rows = [
        f"## Replicas: {AGENTS} agents × {INCREMENTS} guarded increments through a "
        "round-robin router (S3 on moto, observations in Redis)",
        "",
        "Each agent is an `mcp` client with a token of its own; each of its HTTP requests "
        "goes to the next replica, so a read and the edit after it reach different "
        "replicas. An edit refused `stale` is read again and retried. Lost updates must be "
        "0. Latency is per tool call (read or edit).",
        "",
        "| replicas | increments | wall time | increments/s | stale edits retried "
        "| p50 call | p99 call | lost updates |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for replicas in (1, REPLICAS):
        measured = anyio.run(
            partial(run, workdir, replicas=replicas, agents=AGENTS, count=INCREMENTS)
        )
        rate = measured["increments"] / measured["seconds"]
        lost = int(measured["lost"])
        rows.append(
            f"| {replicas} | {int(measured['increments'])} | {measured['seconds']:.1f} s "
            f"| {rate:.1f} | {int(measured['stale'])} | {measured['p50'] * 1000:.1f} ms "
            f"| {measured['p99'] * 1000:.1f} ms | {lost}{'' if lost == 0 else ' **(lost!)**'} |"
        )
        print(f"replicas {replicas}: {rate:.1f} increments/s, lost {lost}", file=sys.stderr)
    return [*rows, ""]


def redis_available() -> bool:
    """Whether the Redis test server listens on 127.0.0.1:6390."""
    return listening(6390)


def _structured(result: Any) -> dict[str, Any]:
    structured = result.structured_content
    assert isinstance(structured, dict), result
    return structured


def _wait_for(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"a replica did not start: {process.communicate()[1]}") from None
            time.sleep(0.05)
        else:
            return
