"""Timing cases against their baselines, and writing the report.

A case pairs the ctxfs operation with a minimal hand-written baseline doing the
same work. Both run alternately, ``rounds`` times each, in one process and one
event loop; the report gives each side's median and spread (the interquartile
range) and the ratio of the medians.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

Timed = Callable[[], Awaitable[object]]


@dataclass(frozen=True, kw_only=True)
class Case:
    """One measured comparison."""

    group: str
    name: str
    ours: Timed
    baseline: Timed
    target: float | None
    """Largest acceptable ratio (ours / baseline), or None for information only."""
    rounds: int = 15
    calls: int = 1
    """Calls per timed sample, for operations too quick to time one by one."""
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class Result:
    """The timings of one case: seconds per operation, one sample per round."""

    case: Case
    ours: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """Median time of ctxfs over median time of the baseline."""
        return statistics.median(self.ours) / statistics.median(self.baseline)

    @property
    def met(self) -> bool | None:
        """Whether the ratio is within the target (None without a target)."""
        return None if self.case.target is None else self.ratio <= self.case.target


async def measure(case: Case) -> Result:
    """Warm both sides up, then time them alternately."""
    await case.ours()
    await case.baseline()
    result = Result(case=case)
    for _ in range(case.rounds):
        for side, samples in ((case.ours, result.ours), (case.baseline, result.baseline)):
            started = time.perf_counter()
            for _ in range(case.calls):
                await side()
            samples.append((time.perf_counter() - started) / case.calls)
    return result


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    """Whether a server (one of `.ci/servers`) listens on 127.0.0.1:*port*."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def describe(seconds: list[float]) -> str:
    """Median and interquartile range, in a unit that suits the size."""
    quartiles = statistics.quantiles(seconds, n=4)
    median = statistics.median(seconds)
    scale, unit = next(
        (scale, unit) for scale, unit in ((1, "s"), (1e3, "ms"), (1e6, "µs")) if median * scale >= 1
    ) if median >= 1e-6 else (1e6, "µs")  # fmt: skip
    low, high = quartiles[0] * scale, quartiles[2] * scale
    return f"{_digits(median * scale)} {unit} ({_digits(low)}–{_digits(high)})"


def _digits(value: float) -> str:
    """Three significant digits, never in exponent form."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def machine() -> list[str]:
    """Facts about where the numbers were taken."""
    cpu = platform.processor() or platform.machine()
    try:
        with Path("/proc/cpuinfo").open() as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if "model name" in line)
    except (OSError, StopIteration):
        pass
    versions = ", ".join(
        f"{dist} {importlib.metadata.version(dist)}"
        for dist in ("ctxfs-core", "anyio", "pluggy", "xxhash")
    )
    return [
        f"- Machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()})",
        f"- Packages: {versions}",
    ]


def report(results: list[Result], *, title: str, intro: str) -> str:
    """The Markdown report, one table per group."""
    lines = [f"# {title}", "", intro, "", *machine(), ""]
    groups: dict[str, list[Result]] = {}
    for result in results:
        groups.setdefault(result.case.group, []).append(result)
    for group, members in groups.items():
        lines += [
            f"## {group}",
            "",
            "| case | ctxfs: median (IQR) | baseline: median (IQR) | ratio | target | met |",
            "|---|---|---|---|---|---|",
        ]
        for result in members:
            target = "—" if result.case.target is None else f"≤ {result.case.target:g}×"
            met = {None: "—", True: "yes", False: "**missed**"}[result.met]
            lines.append(
                f"| {result.case.name} | {describe(result.ours)} | {describe(result.baseline)} "
                f"| {result.ratio:.2f}× | {target} | {met} |"
            )
        notes = [f"- {r.case.name}: {r.case.note}" for r in members if r.case.note]
        lines += ["", *notes, ""] if notes else [""]
    return "\n".join(lines)
