"""The Python blocks of the README and ``docs/``, and how each runs as written.

A block runs as a script of its own, with warnings as errors, in a fresh directory. An HTML
comment on the line before its fence says otherwise:

- ``<!-- fragment: REASON -->``: not run (a part of a larger program); the reason is required.
- ``<!-- runs-with: HARNESS -->``: run in that harness's environment (``nox -s harness``).
- ``<!-- file: NAME -->``: saved as NAME beside the document's later blocks, which import it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))

_BLOCK = re.compile(
    r"^(?:<!--(?P<comment>[^\n]*?)-->\n)?```python\n(?P<code>.*?)^```",
    flags=re.DOTALL | re.MULTILINE,
)
_MARKER = re.compile(r"\s*(?P<marker>fragment|runs-with|file):(?P<value>.*)")


@dataclass(frozen=True, kw_only=True)
class Block:
    """One fenced Python block of a document."""

    document: str
    line: int
    code: str
    fragment: str | None = None
    runs_with: str | None = None
    file: str | None = None
    unknown_marker: str | None = None
    """An HTML comment on the line before the fence that is none of the markers."""

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}"


def python_blocks(document: str | None = None) -> list[Block]:
    """The Python blocks of *document* (default: every document), in order."""
    found = []
    for name in (document,) if document else DOCUMENTS:
        text = (ROOT / name).read_text()
        for match in _BLOCK.finditer(text):
            comment = match["comment"]
            marked = _MARKER.fullmatch(comment) if comment is not None else None
            marker, value = (marked["marker"], marked["value"].strip()) if marked else (None, "")
            found.append(
                Block(
                    document=name,
                    line=text.count("\n", 0, match.start("code")) + 1,
                    code=match["code"],
                    fragment=value if marker == "fragment" else None,
                    runs_with=value if marker == "runs-with" else None,
                    file=value if marker == "file" else None,
                    unknown_marker=comment if comment is not None and not marked else None,
                )
            )
    return found


def run_block(block: Block, directory: Path, *, timeout: float = 120) -> str:
    """Run *block* as written in *directory*, beside its document's ``file:`` blocks.

    Returns what it printed; fails with its output when it exits with an error.
    """
    for earlier in python_blocks(block.document):
        if earlier.file and earlier.line < block.line:
            (directory / earlier.file).write_text(earlier.code)
    script = directory / f"block_{block.line}.py"
    script.write_text(block.code)
    done = subprocess.run(
        [sys.executable, "-W", "error", script.name],
        cwd=directory, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout
