"""One retry loop for every store: bounded retries within one deadline, each one said."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import pytest

from ctxfs.core import InvalidArgument, NotFound, Unavailable, open_fs
from ctxfs.remote import Retries

pytestmark = pytest.mark.anyio


class Flaky:
    """Fails ``Unavailable`` *failures* times, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: list[float] = []

    async def __call__(self) -> str:
        self.attempts.append(anyio.current_time())
        if len(self.attempts) <= self.failures:
            raise Unavailable(f"attempt {len(self.attempts)} timed out")
        return "answer"


async def test_transient_failures_are_retried_and_each_retry_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    flaky, recovered = Flaky(failures=2), []

    async def recover() -> None:
        recovered.append(len(flaky.attempts))

    with caplog.at_level(logging.WARNING, logger="ctxfs.remote"):
        answer = await Retries(retries=3, backoff=0.01).run("s3://b: a.txt", flaky, recover=recover)
    assert answer == "answer"
    assert len(flaky.attempts) == 3
    assert recovered == [1, 2]  # before each retry, after the pause
    assert [record.getMessage() for record in caplog.records] == [
        f"s3://b: a.txt: attempt {n} timed out; retry {n} of 3 in {record.args[-1]:.1f} s"  # type: ignore[index]
        for n, record in enumerate(caplog.records, 1)
    ]


async def test_no_retry_starts_after_the_deadline() -> None:
    flaky = Flaky(failures=100)
    started = anyio.current_time()
    with pytest.raises(Unavailable, match="timed out"):
        await Retries(retries=100, deadline=0.5, backoff=0.05).run("x", flaky)
    assert flaky.attempts[-1] - started <= 0.5
    assert 2 < len(flaky.attempts) < 100
    assert anyio.current_time() - started < 1.0


async def test_retries_are_bounded_in_number_and_other_failures_are_not_retried() -> None:
    flaky = Flaky(failures=100)
    with pytest.raises(Unavailable):
        await Retries(retries=2, backoff=0.001).run("x", flaky)
    assert len(flaky.attempts) == 3

    calls = []

    async def missing() -> None:
        calls.append(1)
        raise NotFound("no such object")

    with pytest.raises(NotFound):
        await Retries(backoff=0.001).run("x", missing)
    assert calls == [1]

    async def disk_full() -> None:
        calls.append(2)
        raise Unavailable("no space left on the device", retryable=False)

    with pytest.raises(Unavailable, match="no space"):
        await Retries(backoff=0.001).run("x", disk_full)
    assert calls == [1, 2]


@pytest.mark.parametrize("options", [{"retries": -1}, {"deadline": 0}])
def test_bad_settings_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument):
        Retries(**options)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_an_unreachable_s3_endpoint_fails_within_the_deadline_not_botocores_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = time.monotonic()
    with (
        caplog.at_level(logging.WARNING, logger="ctxfs.remote"),
        pytest.raises(Unavailable, match="Could not connect"),
    ):
        async with open_fs(
            "s3://bucket/root",
            load_entrypoints=False,
            endpoint_url="http://127.0.0.1:9",
            key="testing",
            secret="testing",
            deadline=3.0,
        ):
            pass  # pragma: no cover - the probe at open fails
    assert time.monotonic() - started < 6  # botocore's own retries took 33-35 s here
    assert "retry 1 of 3" in caplog.text
