"""``line_count``: a toy tool written as the built-in ones are, one package.

Its arguments, result, options and state live here; registering it is one line
(``FsToolset(tools=(*BUILTIN_TOOLS, LINE_COUNT))``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pydantic import Field

from ctxfs.tools import Limits, ResultData, Step, Tool, ToolArgs


@dataclass(frozen=True, kw_only=True)
class LineCountOptions:
    """The options of ``line_count``: its defaults unless a toolset's options hold them."""

    longest_line: int = 80


class LineCountArgs(ToolArgs):
    """Arguments of ``line_count``."""

    file_path: str = Field(description="Path of the text file.")


class LineCountData(ResultData):
    """The data of a ``line_count`` result."""

    lines: int
    long_lines: int
    calls: int = Field(description="Calls of this tool on this file in this toolset.")


class LineCountTool(Tool[LineCountArgs, LineCountData]):
    """Count the lines of a text file."""

    name = "line_count"
    arguments = LineCountArgs
    result = LineCountData
    owner = "tests"

    def description(self, limits: Limits) -> str:
        longest = limits.of(LineCountOptions).longest_line
        return f"Count the lines of a text file, and those longer than {longest} characters."

    def new_state(self) -> Counter[str]:
        return Counter()

    async def run(self, step: Step, args: LineCountArgs) -> LineCountData:
        outcome = await step.ctx.fs.read(args.file_path)
        longest = step.limits.of(LineCountOptions).longest_line
        lines = outcome.text.splitlines()
        calls: Counter[str] = step.toolset.state(self.name)
        calls[outcome.path] += 1
        return self.data(
            outcome,
            lines=len(lines),
            long_lines=sum(len(line) > longest for line in lines),
            calls=calls[outcome.path],
        )

    def render(self, data: LineCountData, args: LineCountArgs) -> str:
        return f"{data.target}: {data.lines} lines, {data.long_lines} long"


LINE_COUNT = LineCountTool()
