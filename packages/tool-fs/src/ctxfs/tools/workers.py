"""Several worker processes behind one listening socket: ``ctxfs serve --workers N``.

One Python process serves on one core. :func:`serve_forked` forks *count*
workers that each serve (on a socket of their own bound with ``SO_REUSEPORT``,
say: the kernel then spreads new connections over them), and supervises them
until it is told to stop:

- SIGTERM or SIGINT stops every worker (each finishes what it is answering)
  and returns 0 once all have ended;
- a worker that dies on its own is started again; one that dies within
  :data:`QUICK_DEATH_SECONDS` of its start three times running means the
  workers cannot run (a bad option, a store that cannot open): everything stops,
  and the status is 1.

What the workers share must live outside them (the observation store, the
locks fs-local takes on disk): the caller arranges that.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

__all__ = ["QUICK_DEATH_SECONDS", "serve_forked"]

log = logging.getLogger("ctxfs.workers")

QUICK_DEATH_SECONDS: Final = 2.0
"""A worker that ends sooner than this after its start died of how it was started."""
_QUICK_DEATHS: Final = 3


def serve_forked(count: int, work: Callable[[], int]) -> int:
    """Run ``work()`` in *count* forked workers until SIGTERM or SIGINT; return a status.

    Call it before any thread or event loop starts in this process (it forks).
    """
    stopping = False
    started: dict[int, float] = {}

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        del frame
        stopping = True
        for pid in started:
            _signal(pid, signal.SIGTERM if signum == signal.SIGINT else signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    quick = 0
    try:
        for _ in range(count):
            started[_fork(work, previous)] = time.monotonic()
        while started:
            pid, status = os.wait()
            began = started.pop(pid, None)
            if began is None or stopping:
                continue
            lived = time.monotonic() - began
            log.warning(
                "worker %d ended (%s) after %.1f s; starting another", pid, _how(status), lived
            )
            quick = quick + 1 if lived < QUICK_DEATH_SECONDS else 0
            if quick >= _QUICK_DEATHS:
                log.error("the workers die as they start; stopping")
                stop(signal.SIGTERM, None)
                _reap(started)
                return 1
            started[_fork(work, previous)] = time.monotonic()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def _fork(work: Callable[[], int], handlers: dict[signal.Signals, Any]) -> int:
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:  # the worker: the parent's signal handlers are not its own
        for signum, handler in handlers.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        status = work()
    except BaseException:
        log.exception("worker %d failed", os.getpid())
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _reap(started: dict[int, float]) -> None:
    while started:
        pid, _ = os.wait()
        started.pop(pid, None)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(pid, signum)


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"status {os.waitstatus_to_exitcode(status)}"
