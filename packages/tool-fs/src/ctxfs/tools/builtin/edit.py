"""``edit``: replace exact text in a file the agent has read, and nothing else."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.render import count, span, with_diff
from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Annotations, Limits, Step, Tool, ToolArgs

__all__ = ["EDIT", "EditArgs", "EditData", "EditTool"]


class EditArgs(ToolArgs):
    """Arguments of ``edit``."""

    file_path: str = Field(description="Path of the file, relative to the workspace root.")
    old_string: str = Field(
        description="The exact text to replace, copied from the file (never empty)."
    )
    new_string: str = Field(description="The text to put in its place (empty deletes it).")
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence; otherwise old_string must occur exactly once.",
    )


class EditData(ResultData):
    """The data of an ``edit`` result."""

    replacements: int
    replace_all: bool
    version: str
    previous_version: str
    first_line: int
    last_line: int
    stripped_line_numbers: bool
    diff: str | None


class EditTool(Tool[EditArgs, EditData]):
    """Replace exact text."""

    name = "edit"
    arguments = EditArgs
    result = EditData
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    def description(self, limits: Limits) -> str:
        del limits
        return (
            "Replace exact text in a file you have read (any part of it) since it last "
            "changed. `old_string` must match the file exactly, whitespace included, without "
            "the line numbers read shows; \\n matches any line ending. It must occur exactly "
            "once unless `replace_all` is true. Only the matched text changes; the new text "
            "takes the line endings of the text it replaces."
        )

    async def run(self, step: Step, args: EditArgs) -> EditData:
        outcome = await step.ctx.fs.edit(
            args.file_path, args.old_string, args.new_string, replace_all=args.replace_all
        )
        return self.data(outcome, replace_all=args.replace_all)

    def render(self, data: EditData, args: EditArgs) -> str:
        replaced = count(data.replacements, "replacement")
        head = f"Edited {data.target}: {replaced}, {span(data.first_line, data.last_line)}."
        if data.stripped_line_numbers:
            head += " (The line numbers pasted into old_string were ignored.)"
        return with_diff(head, data.diff)


EDIT = EditTool()
