"""``edit``: replace exact text in a file the agent has read, and nothing else."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.results import STRIPPED_NOTE, EditData, count, edited
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

__all__ = ["EDIT", "EditArgs", "EditTool"]


class EditArgs(ToolArgs):
    """Arguments of ``edit``."""

    file_path: str
    old_string: str
    new_string: str
    replace_all: bool = False
    dry_run: bool = Field(default=False, description="Show the diff; write nothing.")


class EditTool(Tool[EditArgs, EditData]):
    """Replace exact text."""

    name = "edit"
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    summary = (
        "Replace exact text in a file you have read since it last changed. `old_string` "
        "must match exactly (whitespace too, no line numbers) and occur once unless "
        "`replace_all`."
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
            data,
            changes=count(data.replacements, "replacement"),
            note=STRIPPED_NOTE if data.stripped_line_numbers else "",
        )


EDIT = EditTool()
