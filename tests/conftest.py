"""Shared fixtures: the event loops to run on, a tmpfs directory, throw-away distributions,
the Redis server."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import is_hypothesis_test, settings

from ctxfs.core.plugins import DISABLE_ENV
from ctxfs.local.writes import kept_in_memory

collect_ignore = [] if os.environ.get("CTXFS_HARNESS") else ["harnesses"]
"""A harness's tests run in its own environment (``nox -s harness``), which sets CTXFS_HARNESS."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core for the slow set, which measures latency and memory; one
    more for the quick loop, whose tests spend much of their time waiting on processes."""
    cores = os.cpu_count() or 1
    return cores if config.option.markexpr.strip() == "slow" else cores + 1


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Core code is anyio-neutral: prove it on both event loops."""
    return str(request.param)


@pytest.fixture(autouse=True, scope="session")
def _state_dir_of_the_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's state directory (locks, kept observations) of this run, not the user's own."""
    saved = os.environ.get("CTXFS_STATE_DIR")
    os.environ["CTXFS_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    yield
    if saved is None:
        del os.environ["CTXFS_STATE_DIR"]
    else:
        os.environ["CTXFS_STATE_DIR"] = saved


@pytest.fixture(autouse=True)
def _no_blocked_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own CTXFS_DISABLE_PLUGINS must not change test outcomes."""
    monkeypatch.delenv(DISABLE_ENV, raising=False)


@pytest.fixture
def memory_path() -> Iterator[Path]:
    """A fresh directory under ``/dev/shm`` where that is tmpfs (as on most Linux hosts),
    removed afterwards; else the test skips."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not kept_in_memory(shm.stat().st_dev):
        pytest.skip("needs /dev/shm on tmpfs")
    path = Path(tempfile.mkdtemp(dir=shm))
    yield path
    shutil.rmtree(path)


InstallDist = Callable[..., Path]


@pytest.fixture
def install_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InstallDist]:
    """Install a distribution the way pip does: modules plus a ``.dist-info`` on sys.path.

    ``install_dist("name", modules={"mod": "source"}, entry_points={"group": {"ep": "mod"}})``
    """
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    installed: list[str] = []

    def install(
        name: str,
        *,
        modules: dict[str, str],
        entry_points: dict[str, dict[str, str]],
    ) -> Path:
        for module, source in modules.items():
            (site / f"{module}.py").write_text(textwrap.dedent(source))
            installed.append(module)
        info = site / f"{name.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        lines = []
        for group, points in entry_points.items():
            lines.append(f"[{group}]")
            lines.extend(f"{ep} = {target}" for ep, target in points.items())
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        return site

    yield install
    for module in installed:
        sys.modules.pop(module, None)


REDIS_PORT = 6390
"""Where `.ci/servers start redis` runs redis-server (not 6379: tests never touch a user's Redis)."""


@pytest.fixture
def redis_url() -> str:
    """A Redis URL with a key prefix of its own (``prefix=``), for one test.

    Skips unless `.ci/servers start redis` runs; with ``CTXFS_REQUIRE_SERVERS=1`` (CI) fails.
    """
    try:
        socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=1).close()
    except OSError:
        message = (
            f"the redis test server is not listening on 127.0.0.1:{REDIS_PORT}; "
            "start it with `.ci/servers install redis && .ci/servers start redis`"
        )
        if os.environ.get("CTXFS_REQUIRE_SERVERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return f"redis://127.0.0.1:{REDIS_PORT}/0?prefix=ctxfs-test-{uuid.uuid4().hex[:12]}:"


# The property tests' sample: a developer's run draws a quarter of CI_SAMPLE, fresh each run.
# CI's quick loop draws as many, the same each run (reproducible, and the README's test command
# costs what it costs a developer); CI's slow run takes the property tests again with the whole
# sample. `--hypothesis-profile NAME` chooses, in CI too.
CI_SAMPLE = 400
settings.register_profile("ci", derandomize=True, max_examples=CI_SAMPLE, deadline=None)
settings.register_profile("ci-quick", derandomize=True, max_examples=CI_SAMPLE // 4, deadline=None)
settings.register_profile("dev", max_examples=CI_SAMPLE // 4, deadline=None)
settings.load_profile("dev")


def _slow_run(config: pytest.Config) -> bool:
    return bool(config.option.markexpr.strip() == "slow")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI") and not config.getoption("hypothesis_profile", None):
        settings.load_profile("ci" if _slow_run(config) else "ci-quick")


@pytest.hookimpl(tryfirst=True)  # (before `-m` deselects)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """CI's slow run takes the property tests too, with the whole sample."""
    if os.environ.get("CI") and _slow_run(config):
        for item in items:
            if is_hypothesis_test(getattr(item, "obj", None)):
                item.add_marker(pytest.mark.slow)


def examples(in_ci: int) -> int:
    """A property test's sample: *in_ci* examples under CI's profile, and under another the
    share of *in_ci* that its default is of CI's (a quarter under ``dev``)."""
    return max(in_ci * settings().max_examples // CI_SAMPLE, 1)
