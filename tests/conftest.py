"""Shared fixtures: the event loops to run on, and installing throw-away distributions."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from ctxfs.core.plugins import DISABLE_ENV


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Core code is anyio-neutral: prove it on both event loops."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _no_blocked_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own CTXFS_DISABLE_PLUGINS must not change test outcomes."""
    monkeypatch.delenv(DISABLE_ENV, raising=False)


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


# CI explores a fixed, larger sample (reproducible); developers get fresh random examples.
settings.register_profile("ci", derandomize=True, max_examples=400, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
