"""The supervisor of ``serve --workers``: a stop, however it comes, ends every worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

STOPPED_AS_IT_FORKS = textwrap.dedent(
    """
    import os, signal, threading, time
    from ctxfs.tools import workers

    # Another thread, stop signals not blocked: the kernel hands it the SIGTERM.
    catcher = threading.Thread(target=time.sleep, args=(60,), daemon=True)
    catcher.start()
    caught, wakeup = os.pipe()
    os.set_blocking(wakeup, False)
    signal.set_wakeup_fd(wakeup)  # (a byte once a thread has caught a signal)
    fork, forked = workers._fork, []

    def stopped_as_it_forks(work, shared, mask):
        pid = fork(work, shared, mask)
        forked.append(pid)
        if len(forked) == 1:  # the stop comes before the supervisor has noted the first worker
            signal.pthread_kill(catcher.ident, signal.SIGTERM)
            os.read(caught, 1)
            for _ in range(100):  # (its handler runs here, in this thread)
                pass
        return pid

    def serve():
        time.sleep(30)  # as a worker serves, until told to stop
        return 0

    workers._fork = stopped_as_it_forks
    status = workers.serve_forked(2, serve)
    print(status, len(forked))
    """
)


def test_a_stop_caught_while_a_worker_is_forked_ends_it_and_starts_no_more() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STOPPED_AS_IT_FORKS],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "0 1\n"), done.stderr
