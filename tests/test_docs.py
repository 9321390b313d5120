"""Examples in the README and in docs/ run as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import pytest

from ctxfs.core import ErrorCode, Fs, FsError, MemoryBackend
from ctxfs.core.plugins import DISABLE_ENV
from tests.conftest import InstallDist
from tests.snippets import python_blocks, run_block

ROOT = Path(__file__).resolve().parents[1]


def blocks(document: str, language: str) -> list[str]:
    """The fenced *language* blocks of *document* (a path relative to the repository)."""
    text = (ROOT / document).read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def run_example(index: int, tmp_path: Path) -> str:
    """Run the README's *index*-th Python block as written; return what it printed."""
    return run_block(python_blocks("README.md")[index], tmp_path)


def test_readme_quickstart_runs_and_prints_what_it_promises(tmp_path: Path) -> None:
    assert run_example(0, tmp_path) == "stale - ['-hello', '+hi']\nbye\n"


def test_readme_tools_example_runs_and_prints_what_it_promises(tmp_path: Path) -> None:
    printed = run_example(1, tmp_path).splitlines()
    assert printed == [
        "Edited app.py: 1 replacement, line 1.",
        "@@ -1,1 +1,1 @@",
        "-x = 1",
        "+x = 2",
        "not_found",
    ]


def test_readme_test_command_is_the_one_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(r"^(uv run --locked pytest[^#\n]*?)\s*#", readme, flags=re.MULTILINE)
    assert commands == ["uv run --locked pytest", "uv run --locked pytest -m slow"]
    for command in commands:
        assert re.search(rf"^\s*(exec )?{re.escape(command)}\s*(#|$)", ci, flags=re.MULTILINE)


# -- docs/plugins.md: the change budget --------------------------------------------------------

PLUGIN, PLUGIN_USAGE = python_blocks("docs/plugins.md")  # the module, then a script using it
PLUGIN_SOURCE = PLUGIN.code


def test_plugin_guide_example_prints_what_the_guide_says(tmp_path: Path) -> None:
    (promised,) = blocks("docs/plugins.md", "text")
    assert run_block(PLUGIN_USAGE, tmp_path) == promised


def install_change_budget(install_dist: InstallDist) -> None:
    (declared,) = blocks("docs/plugins.md", "toml")
    points = tomllib.loads(declared)["project"]["entry-points"]["ctxfs.plugins"]
    install_dist(
        "change-budget",
        modules={"change_budget": PLUGIN_SOURCE},
        entry_points={"ctxfs.plugins": points},
    )


@pytest.mark.anyio
async def test_plugin_guide_example_loads_through_its_entry_point_and_never_overspends(
    install_dist: InstallDist, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHANGE_BUDGET", "3")
    install_change_budget(install_dist)
    async with Fs(MemoryBackend()) as fs:
        assert fs.plugin_manager.get_plugin("change-budget") is sys.modules["change_budget"].budget
        ctx = fs.context(owner="agent", workspace="w")
        await ctx.fs.write("kept.md", "one\n")
        await ctx.fs.read("kept.md")
        with pytest.raises(FsError) as failed:
            await ctx.fs.edit("kept.md", "absent", "x")  # a failed change costs nothing
        assert failed.value.code is ErrorCode.NO_MATCH

        outcomes: list[str] = []

        async def write(name: str) -> None:
            try:
                await ctx.fs.write(name, "x\n")
                outcomes.append("ok")
            except FsError as error:
                outcomes.append(error.code)

        async with anyio.create_task_group() as group:
            for index in range(10):
                group.start_soon(write, f"file{index}.md")
        assert sorted(outcomes) == ["denied"] * 8 + ["ok"] * 2
        other = fs.context(owner="other", workspace="w")
        await other.fs.write("theirs.md", "x\n")  # budgets are per owner


@pytest.mark.anyio
async def test_plugin_guide_example_is_not_imported_when_disabled(
    install_dist: InstallDist, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_change_budget(install_dist)
    monkeypatch.setenv(DISABLE_ENV, "change-budget")
    async with Fs(MemoryBackend()) as fs:
        assert fs.plugin_manager.get_plugin("change-budget") is None
        assert "change_budget" not in sys.modules


@pytest.mark.slow
def test_readme_main_job_command_runs_the_demo_and_installs_only_what_it_runs(
    tmp_path: Path,
) -> None:
    readme = (ROOT / "README.md").read_text()
    (command,) = re.findall(r"^(uv run --locked .*ctxfs demo)\s", readme, flags=re.MULTILINE)
    uv = shutil.which("uv")
    if uv is None:  # the console script of this environment, as the command would run it
        argv, env = [str(Path(sys.executable).with_name("ctxfs")), "demo"], None
    else:  # a fresh environment: what the command installs is all it has
        argv = [uv, *command.split()[1:]]
        env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(tmp_path / "venv")}
        env.pop("VIRTUAL_ENV", None)
    result = subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "<- error [stale]" in result.stdout
    assert result.stdout.rstrip().endswith("neither agent overwrote what it had not seen.")
    if uv is not None:
        listed = [uv, "pip", "list", "--format", "freeze", "--python", str(tmp_path / "venv")]
        installed = subprocess.run(listed, capture_output=True, text=True, check=True).stdout
        assert len(installed.split()) <= 20, installed  # the test command installs about 130
        assert not re.search(r"^(mcp|mypy|ruff|s3fs|pytest)==", installed, flags=re.MULTILINE)
