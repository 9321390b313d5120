"""Examples in the README run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_example(index: int, tmp_path: Path) -> str:
    """Run the README's *index*-th Python block as a script; return what it printed."""
    readme = (ROOT / "README.md").read_text()
    example = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)[index]
    script = tmp_path / f"example{index}.py"
    script.write_text(example)
    result = subprocess.run(
        [sys.executable, "-W", "error", str(script)], capture_output=True, text=True, check=True
    )
    return result.stdout


def test_readme_quickstart_runs_and_prints_what_it_promises(tmp_path: Path) -> None:
    assert run_example(0, tmp_path).startswith("stale - The file changed since")


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
    (command,) = re.findall(r"^(uv run --locked pytest)\b", readme, flags=re.MULTILINE)
    assert re.search(rf"^\s*(exec )?{re.escape(command)}", ci, flags=re.MULTILINE)
