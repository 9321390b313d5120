"""The workspace as a newcomer and a packager meet it: imports, wheels, the shipped kit."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
DISTS = {
    "ctxfs-core": "ctxfs/core",
    "ctxfs-local": "ctxfs/local",
    "ctxfs-remote": "ctxfs/remote",
    "ctxfs-tools": "ctxfs/tools",
}
UV = os.environ.get("UV") or shutil.which("uv")  # uv run exports the binary it runs as
needs_uv = pytest.mark.skipif(UV is None, reason="needs uv: run the suite with 'uv run pytest'")


@pytest.mark.parametrize("module", ["ctxfs.core", "ctxfs.local", "ctxfs.remote", "ctxfs.tools"])
def test_every_package_imports(module: str) -> None:
    assert importlib.import_module(module).__doc__


def test_ctxfs_is_one_implicit_namespace_package() -> None:
    import ctxfs  # noqa: PLC0415

    assert getattr(ctxfs, "__file__", None) is None
    assert not list(ROOT.glob("packages/*/src/ctxfs/__init__.py"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    assert UV is not None
    out = tmp_path_factory.mktemp("wheels")
    built = {}
    for dist in DISTS:
        subprocess.run(
            [UV, "build", "--package", dist, "--wheel", "--out-dir", str(out / dist)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        (wheel,) = (out / dist).glob("*.whl")
        built[dist] = wheel
    return built


@needs_uv
@pytest.mark.slow
@pytest.mark.parametrize("dist", list(DISTS))
def test_each_package_builds_as_a_wheel_on_its_own(wheels: dict[str, Path], dist: str) -> None:
    names = zipfile.ZipFile(wheels[dist]).namelist()
    package = DISTS[dist]
    assert f"{package}/__init__.py" in names
    assert f"{package}/py.typed" in names
    assert "ctxfs/__init__.py" not in names
    assert all(name.startswith((package + "/", dist.replace("-", "_"))) for name in names)


@needs_uv
@pytest.mark.slow
def test_core_wheel_ships_the_testing_plugin_and_the_suite(wheels: dict[str, Path]) -> None:
    wheel = zipfile.ZipFile(wheels["ctxfs-core"])
    names = wheel.namelist()
    assert "ctxfs/core/testing/conformance/__init__.py" in names
    assert "ctxfs/core/testing/pytest_plugin.py" in names
    (entry_points,) = [name for name in names if name.endswith("entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "[pytest11]\nctxfs = ctxfs.core.testing.pytest_plugin" in text
    assert "[ctxfs.backends]\nmemory = ctxfs.core.memory:MemoryBackend.from_url" in text


THIRD_PARTY_TEST = """
import pytest
from ctxfs.core import MemoryBackend
from ctxfs.core.testing import BackendConformance


@pytest.fixture
def anyio_backend():
    return "asyncio"


class TestTheirBackend(BackendConformance):
    @pytest.fixture
    def backend(self):
        return MemoryBackend()


@pytest.mark.anyio
async def test_fixtures_from_the_plugin(memory_ctx):
    await memory_ctx.fs.write("a.txt", "hi\\n")
    assert (await memory_ctx.fs.read("a.txt")).text == "hi\\n"
"""


@needs_uv
@pytest.mark.slow
def test_a_third_party_adopts_the_suite_from_the_installed_wheel(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    assert UV is not None
    venv = tmp_path / "venv"
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(
        [UV, "pip", "install", "--quiet", str(wheels["ctxfs-core"]), "pytest", "anyio"],
        check=True,
        env=env,
    )
    project = tmp_path / "their_project"
    project.mkdir()
    (project / "test_their_backend.py").write_text(textwrap.dedent(THIRD_PARTY_TEST))
    result = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            "-q",
            "-W",
            "error",
            "-p",
            "no:cacheprovider",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    passed = re.search(r"(\d+) passed", result.stdout)
    assert passed is not None, result.stdout
    assert int(passed.group(1)) >= 30, "the whole suite ran, not just the local test"


@pytest.mark.parametrize("dist", list(DISTS))
def test_every_dist_states_its_license_urls_and_bounds_on_its_siblings(dist: str) -> None:
    metadata = importlib.metadata.metadata(dist)
    assert metadata["License-Expression"] == "MIT"
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    siblings = [
        requirement
        for requirement in importlib.metadata.requires(dist) or []
        if requirement.startswith("ctxfs-")
    ]
    assert all("~=" in requirement for requirement in siblings), siblings


OPTIONAL_LIBRARIES = {
    "charset-normalizer": ("ctxfs-core", "legacy"),
    "redis": ("ctxfs-core", "redis"),
    "pillow": ("ctxfs-tools", "images"),
    "pypdf": ("ctxfs-tools", "pdf"),
    "mcp": ("ctxfs-tools", "mcp"),
    "pydantic-ai-slim": ("ctxfs-tools", "pydantic-ai"),
}
"""Each library only some features need, and the extra (of the dist using it) that brings it."""


def installed_with(dist: str, *extras: str) -> set[str]:
    """The distributions ``pip install 'DIST[EXTRAS]'`` brings, DIST's siblings followed."""
    brought: set[str] = set()
    for line in importlib.metadata.requires(dist) or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": extra}) for extra in extras):
            name = canonicalize_name(requirement.name)
            brought.add(name)
            if name in DISTS:
                brought |= installed_with(name, *requirement.extras)
    return brought


@pytest.mark.parametrize("dists", [["ctxfs-core"], ["ctxfs-core", "ctxfs-local"], list(DISTS)])
def test_no_optional_library_comes_without_its_extra(dists: list[str]) -> None:
    brought = set().union(*(installed_with(dist) for dist in dists))
    assert brought.isdisjoint(OPTIONAL_LIBRARIES), brought & set(OPTIONAL_LIBRARIES)


def test_each_optional_library_comes_with_its_extra_and_the_cli_brings_every_file_kind() -> None:
    for library, (dist, extra) in OPTIONAL_LIBRARIES.items():
        assert library in installed_with(dist, extra), (library, dist, extra)
    assert {"mcp", "pillow", "pypdf", "charset-normalizer"} <= installed_with("ctxfs-tools", "cli")
