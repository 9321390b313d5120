"""A pytest plugin that runs the session on a clock far in the future: ``-p tests.far_future``.

The wall clocks (``time.time``, ``datetime.now`` and the like) of the test process,
and of every Python process it starts, read :data:`FAR_FUTURE` at the session's start
and tick on from there. The monotonic clock and the kernel's file times keep the real
time, as do processes that ignore ``PYTHONPATH`` (``python -I``) and other programs.
Run it without workers (``-n 0``): an xdist worker would find time_machine imported.
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

_CHILD = f"""\
import os, time, time_machine
time_machine.travel(time.time() + float(os.environ[{OFFSET_ENV!r}]), tick=True).start()
"""
_TRAVEL = pytest.StashKey[time_machine.travel]()
_SITE = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
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
    config.stash[_TRAVEL].stop()
    shutil.rmtree(config.stash[_SITE], ignore_errors=True)


def pytest_report_header() -> str:
    return f"clock: {dt.datetime.now(dt.UTC):%Y-%m-%d} (tests.far_future)"
