"""Without its extra, a harness adapter's import says in one line which extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

ADAPTERS = [
    ("ctxfs.tools.pydanticai", "pydantic_ai", "pydantic-ai", "pydantic-ai"),
    ("ctxfs.tools.openai_agents", "agents", "openai-agents", "openai-agents"),
    ("ctxfs.tools.langchain", "langchain_core", "langchain-core", "langchain"),
    ("ctxfs.tools.claude_agent", "claude_agent_sdk", "claude-agent-sdk", "claude-agent"),
    ("ctxfs.tools.google_adk", "google.adk", "google-adk", "google-adk"),
]


@pytest.mark.parametrize(("module", "package", "distribution", "extra"), ADAPTERS)
def test_without_the_extra_the_import_names_the_extra(
    module: str, package: str, distribution: str, extra: str
) -> None:
    script = (
        f"import sys; sys.modules[{package!r}] = None\n"  # as if not installed, here or not
        f"try:\n    import {module}\n"
        "except ModuleNotFoundError as missing:\n    print(missing.name, missing, sep='; ')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    name, _, message = done.stdout.partition("; ")
    assert f"{name}.".startswith(f"{package}.")  # the module that is missing, or one of its own
    assert message == (
        f"{module} needs {distribution}, which is not installed: "
        f"pip install 'ctxfs-tools[{extra}]'\n"
    )
