"""``edit``: replace exact text in a file the agent has read, and nothing else."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.render import STRIPPED_NOTE, count, edited
from ctxfs.tools.results import EditData
from ctxfs.tools.tool import Annotations, Limits, Step, Tool, ToolArgs

__all__ = ["EDIT", "EditArgs", "EditTool"]


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
    dry_run: bool = Field(
        default=False, description="Only show the change (its diff); write nothing."
    )


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
            "takes the line endings of the text it replaces. With `dry_run`, nothing is "
            "written: the result shows the diff."
        )

    async def run(self, step: Step, args: EditArgs) -> EditData:
        outcome = await step.ctx.fs.edit(
            args.file_path,
            args.old_string,
            args.new_string,
            replace_all=args.replace_all,
            dry_run=args.dry_run,
        )
        return self.data(outcome, replace_all=args.replace_all)

    def render(self, data: EditData, args: EditArgs) -> str:
        return edited(
            data.target,
            written=data.written,
            changes=count(data.replacements, "replacement"),
            first_line=data.first_line,
            last_line=data.last_line,
            diff=data.diff,
            note=STRIPPED_NOTE if data.stripped_line_numbers else "",
        )


EDIT = EditTool()
