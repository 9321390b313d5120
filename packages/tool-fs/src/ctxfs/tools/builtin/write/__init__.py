"""``write``: create a file, or replace one read whole, keeping its encoding and endings."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.results import ResultData, count, span, with_diff
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

__all__ = ["WRITE", "WriteArgs", "WriteData", "WriteTool"]


class WriteArgs(ToolArgs):
    """Arguments of ``write``."""

    file_path: str
    content: str


class WriteData(ResultData):
    """The data of a ``write`` result."""

    created: bool
    version: str
    previous_version: str | None
    size: int
    first_line: int
    last_line: int
    diff: str | None
    total_lines: int = Field(description="Lines the file holds now.")


class WriteTool(Tool[WriteArgs, WriteData]):
    """Create or replace a whole file."""

    name = "write"
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=True)

    mentions = ("edit",)
    summary = (
        "Create a file (and missing directories), or replace all of one you have read "
        "whole since it last changed. For small changes, use edit."
    )

    async def run(self, step: Step, args: WriteArgs) -> WriteData:
        return self.data(await step.ctx.fs.write(args.file_path, args.content))

    def render(self, data: WriteData, args: WriteArgs) -> str:
        lines = count(data.total_lines, "line")
        if data.created:
            return f"Created {data.target} ({lines}, {count(data.size, 'byte')})."
        if data.previous_version == data.version:
            return f"Wrote {data.target}: the content was already identical; nothing changed."
        changed = span(data.first_line, data.last_line)
        return with_diff(f"Updated {data.target}: {changed} changed ({lines} now).", data.diff)


WRITE = WriteTool()
