"""``multi_edit``: several replacements in one file, in order, all or nothing."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ctxfs.core import Replacement
from ctxfs.tools.render import count, edited
from ctxfs.tools.results import EditData
from ctxfs.tools.tool import Annotations, Limits, Step, Tool, ToolArgs

__all__ = ["MULTI_EDIT", "EditItem", "MultiEditArgs", "MultiEditTool"]


class EditItem(BaseModel):
    """One edit of ``multi_edit``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    old_string: str = Field(description="The exact text to replace (never empty).")
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence; otherwise old_string must occur exactly once.",
    )


class MultiEditArgs(ToolArgs):
    """Arguments of ``multi_edit``."""

    file_path: str = Field(description="Path of the file, relative to the workspace root.")
    edits: list[EditItem] = Field(
        min_length=1, description="The edits, applied in order, each to the result of the last."
    )
    dry_run: bool = Field(
        default=False, description="Only show the change (its diff); write nothing."
    )


class MultiEditTool(Tool[MultiEditArgs, EditData]):
    """Several exact replacements in one file."""

    name = "multi_edit"
    arguments = MultiEditArgs
    result = EditData
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    def description(self, limits: Limits) -> str:
        del limits
        return (
            "Make several exact replacements in one file you have read (any part of it) "
            "since it last changed. The edits apply in order, each to the text the one "
            "before left, and the file is written once: if any edit fails (no match, "
            "several matches, nothing to change), nothing is written and the error names "
            "that edit. Each edit follows edit's rules. With `dry_run`, nothing is written: "
            "the result shows the diff."
        )

    async def run(self, step: Step, args: MultiEditArgs) -> EditData:
        edits = [
            Replacement(
                old_string=item.old_string,
                new_string=item.new_string,
                replace_all=item.replace_all,
            )
            for item in args.edits
        ]
        outcome = await step.ctx.fs.multi_edit(args.file_path, edits, dry_run=args.dry_run)
        return self.data(outcome)

    def render(self, data: EditData, args: MultiEditArgs) -> str:
        del args
        return edited(
            data.target,
            written=data.written,
            changes=f"{count(data.edits, 'edit')}, {count(data.replacements, 'replacement')}",
            first_line=data.first_line,
            last_line=data.last_line,
            diff=data.diff,
        )


MULTI_EDIT = MultiEditTool()
