"""What every harness's tests share: running its example as a user would, a plugin hiding a tool."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ctxfs.core import Context, hookimpl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODEL_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")


def run_example(name: str, directory: Path) -> str:
    """Run ``examples/NAME`` in *directory* offline (no model's key), warnings as errors.

    Returns what it printed; fails with its stderr when it exits with an error.
    """
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / name)],
        cwd=directory, capture_output=True, text=True, timeout=120, check=False,
        env={key: value for key, value in os.environ.items() if key not in MODEL_KEYS},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


class EditSwitch:
    """A plugin that hides ``edit`` while :attr:`hiding` is set."""

    def __init__(self, *, hiding: bool) -> None:
        self.hiding = hiding

    @hookimpl
    def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> object:
        del ctx
        return "hidden" if self.hiding and tool == "edit" else None


class GrepDeferred:
    """A plugin that defers ``grep`` in every step."""

    @hookimpl
    def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> object:
        del ctx
        return "deferred" if tool == "grep" else None
