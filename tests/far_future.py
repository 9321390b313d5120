"""A pytest plugin that runs the session on a clock far in the future: ``-p tests.far_future``.

The wall clocks (``time.time``, ``datetime.now`` and the like) of the test process,
and of every Python process it starts, read :data:`FAR_FUTURE` at the session's start
and tick on from there. The monotonic clock and the kernel's file times keep the real
time, as do processes that ignore ``PYTHONPATH`` (``python -I``) and other programs.
With workers (``-n 2``), each worker is such a process: it starts on the far clock, so the
plugin leaves it as it is; pass :data:`WORKERS_WARNING` too (a worker's pytest finds
time_machine imported before it could rewrite it).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import time_machine

FAR_FUTURE = dt.datetime(2099, 12, 31, 23, 0, tzinfo=dt.UTC)
OFFSET_ENV = "CTXFS_TEST_CLOCK_OFFSET"
"""Seconds every process of the run adds to the real wall clock."""
WORKERS_WARNING = "ignore:Module already imported so cannot be rewritten; time_machine"
"""The ``-W`` filter a run with workers needs."""

_CHILD = f"""\
import os, time, time_machine
time_machine.travel(time.time() + float(os.environ[{OFFSET_ENV!r}]), tick=True).start()
"""
_TRAVEL = pytest.StashKey[time_machine.travel]()
_SITE = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    if OFFSET_ENV in os.environ:  # a process of the run (an xdist worker): already on the clock
        if time.time() < FAR_FUTURE.timestamp():
            raise pytest.UsageError(f"{OFFSET_ENV} is set, yet this process is not on the clock")
        return
    offset = FAR_FUTURE.timestamp() - time.time()
    site = Path(tempfile.mkdtemp(prefix="ctxfs-far-future-"))
    (site / "sitecustomize.py").write_text(_CHILD)
    os.environ[OFFSET_ENV] = repr(offset)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(site), os.environ.get("PYTHONPATH")])
    )
    travel = time_machine.travel(time.time() + offset, tick=True)
    travel.start()
    config.stash[_TRAVEL] = travel
    config.stash[_SITE] = site


def pytest_unconfigure(config: pytest.Config) -> None:
    if _TRAVEL not in config.stash:
        return
    config.stash[_TRAVEL].stop()
    shutil.rmtree(config.stash[_SITE], ignore_errors=True)


def pytest_report_header() -> str:
    return f"clock: {dt.datetime.now(dt.UTC):%Y-%m-%d} (tests.far_future)"
