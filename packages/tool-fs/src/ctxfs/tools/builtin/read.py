"""``read``: a window of a text file, numbered, with the exact offset to continue from."""

from __future__ import annotations

from pydantic import AliasChoices, Field, PositiveInt

from ctxfs.core import number_lines
from ctxfs.tools.render import count
from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Limits, Step, Tool, ToolArgs

__all__ = ["READ", "ReadArgs", "ReadData", "ReadTool"]


class ReadArgs(ToolArgs):
    """Arguments of ``read``."""

    file_path: str = Field(description="Path of the file, relative to the workspace root.")
    offset: PositiveInt | None = Field(
        default=None, description="1-based number of the first line to return (default 1)."
    )
    limit: PositiveInt | None = Field(default=None, description="How many lines to return at most.")


class ReadData(ResultData):
    """The data of a ``read`` result."""

    content: str = Field(
        validation_alias=AliasChoices("content", "text"),
        description="The window of lines, without line numbers.",
    )
    version: str
    offset: int
    returned_lines: int
    total_lines: int
    next_offset: int | None = Field(
        description="The offset that continues the read; None at the end."
    )
    partial: bool
    truncated_lines: list[int]
    output_capped: bool
    encoding: str


class ReadTool(Tool[ReadArgs, ReadData]):
    """Read a window of lines."""

    name = "read"
    arguments = ReadArgs
    result = ReadData

    def description(self, limits: Limits) -> str:
        text = limits.text
        return (
            f"Read a text file. Returns up to {text.default_limit:,} lines from `offset` "
            f"(1-based, default 1), each prefixed with its line number and one space; at most "
            f"{text.max_output_chars:,} characters per call; lines longer than "
            f"{text.max_line_chars:,} characters are cut where marked. A last line in "
            "parentheses says the file ended or gives the exact `offset` to continue with. "
            "Binary files are refused; the file's encoding is detected."
        )

    def page_limit(self, limits: Limits) -> int:
        return limits.text.default_limit

    async def run(self, step: Step, args: ReadArgs) -> ReadData:
        most = step.ctx.mount.text_options.default_limit
        limit = min(args.limit or most, most)
        return self.data(
            await step.ctx.fs.read(args.file_path, offset=args.offset or 1, limit=limit)
        )

    def render(self, data: ReadData, args: ReadArgs) -> str:
        if data.total_lines == 0:
            return f"({data.target} is empty)"
        if data.returned_lines == 0:
            return (
                f"(no lines at offset {data.offset}: {data.target} has "
                f"{count(data.total_lines, 'line')}; use an offset from 1 to {data.total_lines})"
            )
        return number_lines(data.content, data.offset) + "\n".join(_notes(data))


def _notes(data: ReadData) -> list[str]:
    last = data.offset + data.returned_lines - 1
    shown = f"lines {data.offset}-{last} of {data.total_lines}"
    if data.next_offset is None:
        notes = [f"(end of file; {shown})"]
    elif data.output_capped:
        notes = [f"(output limit reached; {shown}; continue with offset={data.next_offset})"]
    else:
        notes = [f"({shown}; continue with offset={data.next_offset})"]
    if data.truncated_lines:
        cut = ", ".join(map(str, data.truncated_lines))
        notes.append(f"(line {cut} cut where marked: too long to show whole)")
    if "invalid bytes" in data.encoding:
        notes.append("(bytes that are not valid text show as \ufffd; keep them out of old_string)")
    elif data.encoding != "utf-8":
        notes.append(f"(decoded as {data.encoding}; changes keep that encoding)")
    return notes


READ = ReadTool()
