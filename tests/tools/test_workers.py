"""The supervisor of ``serve --workers``: a stop, however it comes, ends its workers soon."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from subprocess import PIPE

import pytest

from tests.tools.served import eventually, running, where_they_wait

STOPPED_AS_IT_FORKS = textwrap.dedent(
    """
    import os, signal, threading, time
    from ctxfs.tools import workers

    # Another thread, stop signals not blocked: the kernel hands it the SIGTERM.
    catcher = threading.Thread(target=time.sleep, args=(60,), daemon=True)
    catcher.start()
    fork, forked, caught = workers._fork, [], []
    handle = workers._Supervisor.asked_to_stop

    def noted(*args):
        caught.append(True)
        handle(*args)

    def stopped_as_it_forks(*args, **kwargs):
        pid = fork(*args, **kwargs)
        forked.append(pid)
        if len(forked) == 1:  # the stop comes before the supervisor has noted the first worker
            signal.pthread_kill(catcher.ident, signal.SIGTERM)
            while not caught:  # (its handler runs here, in this thread)
                time.sleep(0.001)
        return pid

    def serve():
        time.sleep(30)  # as a worker serves, until told to stop
        return 0

    workers._fork, workers._Supervisor.asked_to_stop = stopped_as_it_forks, noted
    status = workers.serve_forked(2, serve, kill_seconds=60)  # (after the test's timeout)
    print(status, len(forked))
    """
)


def supervised(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """*script* run with *args* in a Python process of its own (it supervises workers)."""
    command = [sys.executable, "-c", script, *args]
    with subprocess.Popen(
        command, stdout=PIPE, stderr=PIPE, text=True, start_new_session=True
    ) as process:
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            waiting = where_they_wait(process.pid)
            os.killpg(process.pid, signal.SIGKILL)  # its workers too
            pytest.fail(f"it did not end: {process.communicate()[1]}\n{waiting}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def test_a_stop_caught_while_a_worker_is_forked_ends_it_and_starts_no_more() -> None:
    done = supervised(STOPPED_AS_IT_FORKS)
    assert (done.returncode, done.stdout) == (0, "0 1\n"), done.stderr
    assert "killed" not in done.stderr


CAUGHT_WHILE_IT_WAITS = textwrap.dedent(
    """
    import os, signal, threading, time
    from ctxfs.tools import workers

    said, tell = os.pipe()
    waiting = f"/proc/self/task/{threading.main_thread().native_id}/stat"

    def serve():
        os.write(tell, b"serv")
        time.sleep(60)  # as a worker serves, until told to stop
        return 0

    def catcher():  # catches the stop itself once the supervisor sleeps, waiting for its workers
        assert [os.read(said, 4), os.read(said, 4)] == [b"serv"] * 2
        while open(waiting).read().rsplit(")", 1)[1].split()[0] != "S":
            time.sleep(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        time.sleep(60)

    threading.Thread(target=catcher, daemon=True).start()
    print(workers.serve_forked(2, serve))
    """
)


STOPPED = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from ctxfs.tools import workers

    how, stops, kill_seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    said, tell = os.pipe()
    kill = os.kill

    def slowly(pid, signum):  # a SIGKILL that takes half a second to land
        if signum != signal.SIGKILL:
            return kill(pid, signum)
        threading.Timer(0.5, kill, (pid, signum)).start()

    if how == "slow to die":
        os.kill = slowly

    def serve():
        if how != "heeded":  # a worker that notes each stop and goes on
            signal.signal(signal.SIGTERM, lambda *_: os.write(tell, b"stop"))
        os.write(tell, b"serv")
        while True:
            time.sleep(1)

    def stopper():  # stops the main thread once both serve, then again once both were told
        for each in ["serv", *["stop"] * (stops - 1)]:
            assert [os.read(said, 4), os.read(said, 4)] == [each.encode()] * 2
            signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)

    threading.Thread(target=stopper, daemon=True).start()
    status = workers.serve_forked(2, serve, kill_seconds=kill_seconds)
    print(status)
    """
)


def stopped(how: str, stops: int, kill_seconds: float) -> subprocess.CompletedProcess[str]:
    """Two workers, *how* they take a stop, stopped *stops* times, killed *kill_seconds* after."""
    return supervised(STOPPED, how, str(stops), str(kill_seconds))


def test_a_stop_caught_by_another_thread_as_the_supervisor_sleeps_wakes_it() -> None:
    done = supervised(CAUGHT_WHILE_IT_WAITS)  # (a blocked wait() would sleep on: no EINTR)
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr


def test_workers_that_heed_a_stop_end_before_their_time_is_up() -> None:
    done = stopped("heeded", 1, 5)
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr
    assert "killed" not in done.stderr


def test_workers_that_ignore_a_stop_are_killed_once_its_time_is_up() -> None:
    done = stopped("ignored", 1, 0.5)
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr
    assert done.stderr.count("killed workers") == 1, done.stderr


def test_workers_slow_to_die_are_killed_once_and_waited_for() -> None:
    done = stopped("slow to die", 1, 0.5)
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr
    assert done.stderr.count("killed workers") == 1, done.stderr  # (no busy loop meanwhile)


def test_a_second_stop_kills_workers_at_once() -> None:
    done = stopped("ignored", 2, 60)  # a kill on time would come after the test's timeout
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr
    assert "killed workers" in done.stderr


FORKED_ALONE = textwrap.dedent(
    """
    import os, signal, threading, time
    from ctxfs.tools import workers

    ended = threading.Event()
    threading.Thread(target=lambda: (time.sleep(0.3), ended.set())).start()  # as a loop's worker
    said, tell = os.pipe()

    def serve():
        os.write(tell, b"1" if ended.is_set() else b"0")
        os.kill(os.getppid(), signal.SIGTERM)
        time.sleep(30)

    workers.serve_forked(1, serve)
    print(os.read(said, 1).decode())
    """
)


def test_a_thread_left_running_ends_before_a_worker_is_forked() -> None:
    done = supervised(FORKED_ALONE)
    assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr


DEAF = textwrap.dedent(
    """
    import os, signal, sys, time
    from ctxfs.tools import workers

    def serve():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a worker deaf to a stop
        os.write(1, b"%d\\n" % os.getpid())
        while True:
            time.sleep(1)

    workers.serve_forked(2, serve, kill_seconds=float(sys.argv[1]))
    """
)


@pytest.mark.parametrize("kill_seconds", [0.5, 120])
def test_workers_of_a_killed_supervisor_end_once_their_time_is_up(kill_seconds: float) -> None:
    command = [sys.executable, "-c", DEAF, str(kill_seconds)]
    with subprocess.Popen(command, stdout=PIPE, text=True, start_new_session=True) as process:
        try:
            assert process.stdout is not None
            forked = [int(process.stdout.readline()) for _ in range(2)]
            process.kill()
            process.wait(timeout=10)
            ended = eventually(lambda: not any(map(running, forked)), seconds=5)
            assert ended == (kill_seconds < 5), where_they_wait(forked[0])
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # (its workers are in its group)
