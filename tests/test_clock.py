"""No test depends on the date: the in-process suites pass on a clock far in the future."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.far_future import FAR_FUTURE, WORKERS_WARNING

ROOT = Path(__file__).resolve().parents[1]

ON_THE_CLOCK = [
    "tests/core", "tests/conformance/test_memory_backend.py", "tests/tools/test_execute.py",
    "tests/tools/test_cli.py", "tests/tools/test_http.py", "tests/tools/test_mcp.py",
]  # fmt: skip
"""Suites whose clocks the plugin moves (leases, observations, audit records, tokens, sessions):
in-process, or in Python processes they start. fs-local's tests are left out: they compare the
wall clock with file times the kernel stamps. Property tests draw the developers' smaller
sample: the dates are the point here."""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_in_process_suites_pass_far_in_the_future() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.far_future", "-n", "2",
         "-W", WORKERS_WARNING, "-m", "", "--hypothesis-profile", "dev", *ON_THE_CLOCK],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    report = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    assert f"clock: {FAR_FUTURE:%Y-%m-%d}" in done.stdout, report
