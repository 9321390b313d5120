"""One retry loop for every remote store: a bounded number of retries within one deadline.

A store call failing ``Unavailable`` and retryable (a timeout, a lost connection,
a 5xx) is tried again after an exponential pause with jitter, at most
:attr:`Retries.retries` times and none starting after :attr:`Retries.deadline`
seconds. An attempt under way is never cut short; the clients' own retries are
off (but aiohttp's one resend of an idempotent request on a dropped kept-alive
connection) and their connect timeouts no longer than the deadline. Each retry is logged
(logger ``ctxfs.remote``, level WARNING).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

import anyio

from ctxfs.core import InvalidArgument, Unavailable

__all__ = ["DEFAULT_DEADLINE", "DEFAULT_RETRIES", "RETRY_OPTIONS", "Retries"]

T = TypeVar("T")

DEFAULT_RETRIES: Final = 3
"""Retries of a transient failure before it is raised ``Unavailable``."""
DEFAULT_DEADLINE: Final = 10.0
"""Seconds, from a call's first attempt, after which no retry starts."""
RETRY_OPTIONS: Final = ("retries", "deadline")
"""The keyword options of ``open_fs`` that configure :class:`Retries`."""

log = logging.getLogger("ctxfs.remote")


@dataclass(frozen=True, kw_only=True)
class Retries:
    """How a store call is retried: at most *retries* times, none starting after *deadline*."""

    retries: int = DEFAULT_RETRIES
    deadline: float = DEFAULT_DEADLINE
    backoff: float = 0.1
    """Seconds before the first retry; doubled each time, with jitter."""

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise InvalidArgument(f"retries must not be negative, got {self.retries}")
        if self.deadline <= 0:
            raise InvalidArgument(f"deadline must be positive, got {self.deadline}")

    async def run(
        self,
        what: str,
        attempt: Callable[[], Awaitable[T]],
        *,
        recover: Callable[[], Awaitable[None]] | None = None,
    ) -> T:
        """Await ``attempt()`` until it does not fail ``Unavailable``, within the bounds.

        *what* names the call in the log. *recover* runs before each retry (to
        drop a broken connection, say).

        Raises:
            Unavailable: The last attempt's failure, once the bounds are reached.

        """
        started = anyio.current_time()
        tried = 0
        while True:
            try:
                return await attempt()
            except Unavailable as failure:
                pause = self.backoff * 2**tried * (0.5 + random.random())
                elapsed = anyio.current_time() - started
                if (
                    not failure.retryable
                    or tried >= self.retries
                    or elapsed + pause > self.deadline
                ):
                    raise
                tried += 1
                log.warning(
                    "%s: %s; retry %d of %d in %.1f s", what, failure, tried, self.retries, pause
                )
            await anyio.sleep(pause)
            if recover is not None:
                await recover()
