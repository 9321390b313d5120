"""Three ``ctxfs serve`` replicas on one bucket (moto) with observations in Redis act as one server.

The replicas are the benchmark's (``benchmarks.replicas``): real processes, real ``mcp``
clients with a token each, every HTTP request routed to the next replica in turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from benchmarks.replicas import agent, cluster, increments

from tests.remote.servers import S3

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

AGENTS = 4
COUNT = 10


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's client runs its transports on asyncio


def code_of(result: Any) -> str | None:
    error = (result.structured_content or {}).get("error")
    return None if error is None else str(error["code"])


async def test_three_replicas_behave_as_one_server(tmp_path: Path, redis_url: str) -> None:
    S3.require()
    redis = redis_url.split("?", maxsplit=1)[0]
    with cluster(tmp_path, replicas=3, agents=AGENTS, redis=redis) as running:
        a, b, c = ([port] for port in running.ports)
        one, two, *others = running.tokens.values()
        async with agent(a, one) as setup:
            assert (
                code_of(
                    await setup.call_tool("write", {"file_path": "counter.txt", "content": "0\n"})
                )
                is None
            )

        # read through A, edit through B
        async with agent(a, one) as through_a, agent(b, one) as through_b:
            await through_a.call_tool("read", {"file_path": "counter.txt"})
            edit = {"file_path": "counter.txt", "old_string": "0", "new_string": "1"}
            assert code_of(await through_b.call_tool("edit", edit)) is None

        # a stale edit is refused whichever replica it reaches; a never-read one too
        async with agent(a, one) as first, agent(b, two) as second, agent(c, others[1]) as third:
            for reader in (first, second, third):
                await reader.call_tool("read", {"file_path": "counter.txt"})
            edit = {"file_path": "counter.txt", "old_string": "1", "new_string": "2"}
            assert code_of(await second.call_tool("edit", edit)) is None
            for stale_one in (first, third):
                assert code_of(await stale_one.call_tool("edit", edit)) == "stale"
        async with agent(c, others[0]) as stranger:
            assert code_of(await stranger.call_tool("edit", edit)) == "not_observed"

        # agents through the round-robin router lose no increment
        stale: list[int] = []
        latencies: list[float] = []

        async def work(token: str) -> None:
            stale.append(await increments(running.ports, token, COUNT, latencies))

        async with anyio.create_task_group() as group:
            for token in running.tokens.values():
                group.start_soon(work, token)
        async with agent(running.ports, one) as check:
            final = await check.call_tool("read", {"file_path": "counter.txt", "fresh": True})
        assert final.structured_content is not None
        assert final.structured_content["content"] == f"{2 + AGENTS * COUNT}\n"
        assert sum(stale) > 0, "the agents never actually raced"
