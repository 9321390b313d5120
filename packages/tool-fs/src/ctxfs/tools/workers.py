"""Several worker processes behind one listening socket: ``ctxfs serve --workers N``.

:func:`serve_forked` forks workers that each serve (on a socket of their own bound with
``SO_REUSEPORT``, say) and supervises them until SIGTERM or SIGINT, which stops every worker (each
finishes what it is answering). A worker that dies on its own is started again; three running that
die within :data:`QUICK_DEATH_SECONDS` of their start stop everything (status 1). A supervisor that
dies, however it dies, takes its workers with it (``PR_SET_PDEATHSIG`` on Linux; elsewhere each
checks its parent every second).

What the workers share must live outside them (the observation store, fs-local's locks on disk);
what lasts one run only goes in a :class:`RunDirectory`.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import ClassVar, Final, NoReturn

__all__ = ["QUICK_DEATH_SECONDS", "RunDirectory", "serve_forked"]

log = logging.getLogger("ctxfs.workers")

QUICK_DEATH_SECONDS: Final = 2.0
"""A worker that ends sooner than this after its start died of how it was started."""
_QUICK_DEATHS: Final = 3
_STOP_SIGNALS: Final = {signal.SIGTERM, signal.SIGINT}
_PR_SET_PDEATHSIG: Final = 1
"""prctl's option: the signal this process gets when its parent dies (``<linux/prctl.h>``)."""


def serve_forked(count: int, work: Callable[[], int], *, shared: RunDirectory | None = None) -> int:
    """Run ``work()`` in *count* forked workers until SIGTERM or SIGINT; return a status.

    Each worker holds *shared* until it ends, however it is told to (the caller holds it in this
    process). A stop that comes while workers are being started, whichever thread catches it,
    stops those started and starts no more. Call it in the main thread (it handles signals),
    with no event loop running (it forks).
    """
    stopping = False
    started: dict[int, float] = {}

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        del frame
        stopping = True
        for pid in started:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(pid, signal.SIGTERM if signum == signal.SIGINT else signum)

    def start() -> None:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)  # (until the worker's own)
        try:
            if not stopping:
                started[_fork(work, shared, mask)] = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if stopping:  # (caught by another thread, stop() may have run as this one forked)
            stop(signal.SIGTERM, None)

    previous = {signum: signal.signal(signum, stop) for signum in _STOP_SIGNALS}
    quick = 0
    try:
        for _ in range(count):
            start()
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
                while started:
                    started.pop(os.wait()[0], None)
                return 1
            start()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def _fork(work: Callable[[], int], shared: RunDirectory | None, mask: set[int]) -> int:
    """Fork a worker that runs ``work()``; return its pid.

    Call it with SIGTERM and SIGINT blocked: the worker restores *mask* once it has its own.
    """
    supervisor = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        for signum in _STOP_SIGNALS:  # uvicorn's while it serves, then these again
            signal.signal(signum, lambda signum, _: _end(128 + signum, shared))
        if shared is not None:
            shared.hold()
        _die_with(supervisor)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        status = work()
    except BaseException:
        log.exception("worker %d failed", os.getpid())
    finally:
        _end(status, shared)


def _end(status: int, shared: RunDirectory | None) -> NoReturn:
    """End this worker with *status* after letting go of *shared* (from a signal handler too)."""
    try:
        if shared is not None:
            shared.leave()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def _die_with(supervisor: int) -> None:
    """Have SIGTERM sent to this process when *supervisor*, its parent, ends; or now if it has."""
    if sys.platform == "linux":
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        if prctl(ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGTERM)):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    else:
        threading.Thread(target=_watch, args=(supervisor,), daemon=True).start()
    if os.getppid() != supervisor:  # it died before it could be watched
        signal.raise_signal(signal.SIGTERM)


def _watch(supervisor: int) -> None:
    while os.getppid() == supervisor:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"status {os.waitstatus_to_exitcode(status)}"


@dataclass(frozen=True, kw_only=True)
class RunDirectory:
    """A directory the processes of one run share, removed by the last of them to leave it.

    Each process using it holds a shared POSIX lock on its ``.lock`` file; the kernel drops a
    process's lock when it ends, however it ends. A process that leaves removes the directory if no
    other holds it: after a normal stop the supervisor does, after the supervisor is killed the last
    of its workers does. A run killed whole (every process at once) leaves it behind, and
    :meth:`make` removes it at the next start.
    """

    PREFIX: ClassVar[str] = "ctxfs-run-"
    LOCK: ClassVar[str] = ".lock"

    path: Path
    lock: int
    """The descriptor of its lock file, open in this process (and inherited by workers)."""

    @classmethod
    def make(cls, parent: str | None = None) -> RunDirectory:
        """A new run directory in *parent* (default: the temporary directory), held by this process.

        First removes the run directories there that no process holds.
        """
        cls.reclaim(parent)  # first: closing another's lock file would drop a lock of ours
        path = Path(tempfile.mkdtemp(prefix=cls.PREFIX, dir=parent))
        making = path / f"{cls.LOCK}.new"
        lock = os.open(making, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.lockf(lock, fcntl.LOCK_SH)
        making.rename(path / cls.LOCK)  # reclaim() skips a directory until it is held
        return cls(path=path, lock=lock)

    @classmethod
    def reclaim(cls, parent: str | None = None) -> list[Path]:
        """Remove the run directories in *parent* that no process holds; return them."""
        removed = []
        for path in Path(parent or tempfile.gettempdir()).glob(f"{cls.PREFIX}*"):
            try:
                lock = os.open(path / cls.LOCK, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:  # another user's, or one being made
                continue
            try:
                fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held: its run goes on
                continue
            else:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
                log.info("removed %s, left by a run that was killed", path)
            finally:
                os.close(lock)
        return removed

    def hold(self) -> None:
        """Hold the directory in this process too (a forked worker); :meth:`leave` it at the end."""
        fcntl.lockf(self.lock, fcntl.LOCK_SH)

    def leave(self) -> bool:
        """Stop holding the directory; remove it if no other process holds it. Whether it did."""
        fcntl.lockf(self.lock, fcntl.LOCK_UN)
        try:  # of several leaving at once, whichever unlocks last gets it
            fcntl.lockf(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        shutil.rmtree(self.path, ignore_errors=True)
        return True
