"""``multi_edit``: several replacements in one file, in order, all or nothing."""

from __future__ import annotations

from pydantic import Field

from ctxfs.core import Replacement
from ctxfs.tools.results import EditData, count, edited
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

__all__ = ["MULTI_EDIT", "EditItem", "MultiEditArgs", "MultiEditTool"]


class EditItem(ToolArgs):
    """One edit of ``multi_edit``."""

    old_string: str
    new_string: str
    replace_all: bool = False


class MultiEditArgs(ToolArgs):
    """Arguments of ``multi_edit``."""

    file_path: str
    edits: list[EditItem] = Field(min_length=1)
    dry_run: bool = Field(default=False, description="Show the diff; write nothing.")


class MultiEditTool(Tool[MultiEditArgs, EditData]):
    """Several exact replacements in one file."""

    name = "multi_edit"
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    mentions = ("edit",)
    summary = (
        "Like edit, several replacements in one file you have read since it last changed, "
        "in order, all or nothing."
    )

    async def run(self, step: Step, args: MultiEditArgs) -> EditData:
        edits = [Replacement(**item.model_dump()) for item in args.edits]
        outcome = await step.ctx.fs.multi_edit(args.file_path, edits, dry_run=args.dry_run)
        return self.data(outcome)

    def render(self, data: EditData, args: MultiEditArgs) -> str:
        del args
        return edited(
            data, changes=f"{count(data.edits, 'edit')}, {count(data.replacements, 'replacement')}"
        )


MULTI_EDIT = MultiEditTool()
