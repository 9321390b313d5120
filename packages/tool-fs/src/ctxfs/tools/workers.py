"""Several worker processes behind one listening socket: ``ctxfs serve --workers N``.

:func:`serve_forked` forks workers that each serve (on a socket of their own bound with
``SO_REUSEPORT``, say) and supervises them until SIGTERM or SIGINT, which stops every worker (each
finishes what it is answering). A worker still running :data:`KILL_SECONDS` after the stop, or
when a second stop comes, is killed. A worker that dies on its own is started again; three running
that die within :data:`QUICK_DEATH_SECONDS` of their start stop everything (status 1). A supervisor
that dies, however it dies, takes its workers with it: each is told to stop (``PR_SET_PDEATHSIG``
on Linux; elsewhere each checks its parent every second), and ends itself if it still runs
*kill_seconds* later.

What the workers share must live outside them (the observation store, fs-local's locks on disk);
what lasts one run only goes in a :class:`RunDirectory`.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import math
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import ClassVar, Final, NoReturn

__all__ = ["KILL_SECONDS", "QUICK_DEATH_SECONDS", "RunDirectory", "serve_forked"]

log = logging.getLogger("ctxfs.workers")

KILL_SECONDS: Final = 15.0
"""How long workers told to stop may take to end before they are killed."""
QUICK_DEATH_SECONDS: Final = 2.0
"""A worker that ends sooner than this after its start died of how it was started."""
_QUICK_DEATHS: Final = 3
_STOP_SIGNALS: Final = {signal.SIGTERM, signal.SIGINT}
_PR_SET_PDEATHSIG: Final = 1
"""prctl's option: the signal this process gets when its parent dies (``<linux/prctl.h>``)."""


def serve_forked(
    count: int,
    work: Callable[[], int],
    *,
    shared: RunDirectory | None = None,
    kill_seconds: float = KILL_SECONDS,
) -> int:
    """Run ``work()`` in *count* forked workers until SIGTERM or SIGINT; return a status.

    Each worker holds *shared* until it ends, however it is told to (the caller holds it in this
    process). A stop that comes while workers are being started, whichever thread catches it,
    stops those started and starts no more. Workers still running *kill_seconds* after the stop,
    or when a second stop comes, get SIGKILL. Call it in the main thread (it handles SIGTERM,
    SIGINT and SIGCHLD, sets the signal wakeup fd and reaps any child that ends), with no event
    loop running (it forks). It first waits a second at most for the other non-daemon threads to
    end: a thread running at a fork may hold a lock that no worker gets back.
    """
    _join_others(seconds=1)
    return _Supervisor(work, shared, kill_seconds).run(count)


class _Supervisor:
    """One :func:`serve_forked`: its workers (pid: when it started) and how far it has stopped.

    It sleeps in ``poll()`` on the pipe where each caught signal leaves a byte (the signal wakeup
    fd), not in ``wait()``: a signal caught just before a blocking call, or by another thread,
    would run its handler only once the call returned. A handler notes a stop and passes it on;
    the loop reaps, starts and kills.
    """

    def __init__(
        self, work: Callable[[], int], shared: RunDirectory | None, kill_seconds: float
    ) -> None:
        self.work, self.shared, self.kill_seconds = work, shared, kill_seconds
        self.started: dict[int, float] = {}
        self.stopping = False
        self.kill_at: float | None = None
        self.asked = 0
        self.wakeup_read, self.wakeup_write = os.pipe()
        self.wakeups = select.poll()
        self.wakeups.register(self.wakeup_read, select.POLLIN)

    def run(self, count: int) -> int:
        """Start *count* workers and supervise them until every one has ended; the status."""
        restoring = contextlib.ExitStack()  # (in the reverse order)
        try:
            for end in (self.wakeup_read, self.wakeup_write):
                restoring.callback(os.close, end)
                os.set_blocking(end, False)
            previous = signal.set_wakeup_fd(self.wakeup_write, warn_on_full_buffer=False)
            restoring.callback(signal.set_wakeup_fd, previous)
            handlers = dict.fromkeys(_STOP_SIGNALS, self.asked_to_stop) | {signal.SIGCHLD: _woken}
            for signum, handler in handlers.items():
                restoring.callback(signal.signal, signum, signal.signal(signum, handler))
            for _ in range(count):
                self.start()
            return self.supervise()
        except BaseException:
            self.tell(signal.SIGTERM)  # (a failed fork, say: the workers go too)
            raise
        finally:
            restoring.close()

    def supervise(self) -> int:
        """Restart the workers that end on their own and kill those overdue; return the status."""
        status, quick = 0, 0
        while self.started:
            self.wakeups.poll(self.until_kill())
            with contextlib.suppress(BlockingIOError):
                os.read(self.wakeup_read, 4096)
            for pid, ended in _reaped():
                began = self.started.pop(pid, None)
                if began is None or self.stopping:
                    continue
                lived = time.monotonic() - began
                log.warning(
                    "worker %d ended (%s) after %.1f s; starting another", pid, _how(ended), lived
                )
                quick = quick + 1 if lived < QUICK_DEATH_SECONDS else 0
                if quick < _QUICK_DEATHS:
                    self.start()
                else:
                    log.error("the workers die as they start; stopping")
                    status = 1
                    self.stop()
            if self.started and self.until_kill() == 0:
                self.kill()
        return status

    def start(self) -> None:
        """Fork a worker, unless stopping; one forked as a stop came is told to stop."""
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)  # (until the worker's own)
        try:
            if not self.stopping:
                pipe = (self.wakeup_read, self.wakeup_write)
                forked = _fork(self.work, self.shared, mask, self.kill_seconds, closing=pipe)
                self.started[forked] = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if self.stopping:  # (caught by another thread, a stop may have come as it forked)
            self.tell(signal.SIGTERM)

    def asked_to_stop(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM's and SIGINT's handler: the first stops the workers, the next kills them."""
        del signum, frame
        self.asked += 1
        if self.asked == 1:
            self.stop()
        else:
            self.kill_at = time.monotonic()

    def stop(self) -> None:
        """Tell every worker to stop, and set when those still running are killed (once)."""
        if not self.stopping:
            self.stopping = True
            self.kill_at = time.monotonic() + self.kill_seconds
        self.tell(signal.SIGTERM)

    def until_kill(self) -> int | None:
        """Milliseconds until overdue workers are killed; None if none will be."""
        if self.kill_at is None:
            return None
        return max(0, math.ceil((self.kill_at - time.monotonic()) * 1000))

    def kill(self) -> None:
        """Kill the workers still running (their time is up, or a second stop came)."""
        self.tell(signal.SIGKILL)
        self.kill_at = None
        log.error("killed workers %s: still running after the stop", [*self.started])

    def tell(self, signum: int) -> None:
        for pid in self.started:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(pid, signum)


def _woken(signum: int, frame: FrameType | None) -> None:
    """SIGCHLD's handler: nothing, but its byte on the wakeup pipe wakes the supervisor."""
    del signum, frame


def _reaped() -> Iterator[tuple[int, int]]:
    """The children that have ended (pid, wait status), each once, without waiting."""
    while True:
        try:
            pid, ended = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # none left
            return
        if not pid:
            return
        yield pid, ended


def _join_others(*, seconds: float) -> None:
    """Wait up to *seconds* in all for the other non-daemon threads to end; warn of the rest."""
    deadline = time.monotonic() + seconds
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning("forking workers while thread %r still runs", thread.name)


def _fork(
    work: Callable[[], int],
    shared: RunDirectory | None,
    mask: set[int],
    kill_seconds: float,
    *,
    closing: Iterable[int] = (),
) -> int:
    """Fork a worker that runs ``work()``; return its pid.

    Call it with SIGTERM and SIGINT blocked: the worker restores *mask* once it has its own. The
    worker takes none of the supervisor's signal handling, and closes *closing*. If the
    supervisor dies, the worker gets SIGTERM, and ends *kill_seconds* later if still running.
    """
    supervisor = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        signal.set_wakeup_fd(-1)
        for descriptor in closing:
            os.close(descriptor)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for signum in _STOP_SIGNALS:  # uvicorn's while it serves, then these again
            signal.signal(signum, lambda signum, _: _end(128 + signum, shared))
        if shared is not None:
            shared.hold()
        _die_with(supervisor, kill_seconds, shared)
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


def _die_with(supervisor: int, kill_seconds: float, shared: RunDirectory | None) -> None:
    """Stop this worker when *supervisor*, its parent, ends (now if it has); end it if it runs on.

    The stop is SIGTERM; the end comes *kill_seconds* after it.
    """
    if sys.platform == "linux":
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        if prctl(ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGTERM)):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    watch = threading.Thread(target=_watch, args=(supervisor, kill_seconds, shared), daemon=True)
    watch.start()
    if os.getppid() != supervisor:  # it died before it could be watched
        signal.raise_signal(signal.SIGTERM)


def _watch(supervisor: int, kill_seconds: float, shared: RunDirectory | None) -> None:
    while os.getppid() == supervisor:
        time.sleep(1)
    if sys.platform != "linux":  # (on Linux, the kernel has sent it)
        os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(kill_seconds)
    log.error("worker %d: still running %s s after its supervisor died", os.getpid(), kill_seconds)
    _end(128 + signal.SIGKILL, shared)


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
