"""``notebook_edit``: replace, insert or delete one cell of a notebook the agent has read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ctxfs.tools.results import ResultData, count
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

if TYPE_CHECKING:
    from ctxfs.tools.notebooks import CellChange

__all__ = ["NOTEBOOK_EDIT", "NotebookEditArgs", "NotebookEditData", "NotebookEditTool"]


class NotebookEditArgs(ToolArgs):
    """Arguments of ``notebook_edit``."""

    file_path: str
    cell_id: str | None = Field(
        default=None, description="As read shows it; insert goes after it (none: first)."
    )
    new_source: str = Field(description="'' for delete.")
    cell_type: Literal["code", "markdown", "raw"] | None = Field(
        default=None, description="Needed to insert."
    )
    edit_mode: Literal["replace", "insert", "delete"] = "replace"


class NotebookEditData(ResultData):
    """The data of a ``notebook_edit`` result."""

    cell_id: str = Field(description="The cell replaced, inserted (its new id) or deleted.")
    edit_mode: Literal["replace", "insert", "delete"]
    cell_type: str = Field(description="The cell's type after the edit.")
    previous_cell_type: str | None = Field(
        description="A replaced cell's type before the edit; none (absent) for insert and delete."
    )
    index: int = Field(description="The cell's 0-based position (a deleted cell's former one).")
    cells: int = Field(description="Cells in the notebook after the edit.")
    kept_outputs: int = Field(
        description="Outputs a replaced code cell keeps, from its previous source."
    )
    version: str
    previous_version: str
    rewritten_whole: bool = Field(
        description="Whether the notebook was written again whole (in its own layout) "
        "because the cell could not be spliced in place."
    )
    ids: bool = Field(
        description="Whether every cell has an id of its own (cell-N ids shift with inserts "
        "and deletes)."
    )


class NotebookEditTool(Tool[NotebookEditArgs, NotebookEditData]):
    """Edit one notebook cell."""

    name = "notebook_edit"
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    summary = (
        "Replace, insert or delete one cell of a Jupyter notebook (.ipynb) you have read "
        "since it last changed."
    )

    async def run(self, step: Step, args: NotebookEditArgs) -> NotebookEditData:
        from ctxfs.tools.notebooks import CellEdit, CellType, EditMode, edit_notebook  # noqa: PLC0415

        edit = CellEdit(
            mode=EditMode(args.edit_mode),
            cell_id=args.cell_id or None,
            source=args.new_source,
            cell_type=None if args.cell_type is None else CellType(args.cell_type),
        )
        changes: list[CellChange] = []

        def change(data: bytes) -> bytes:
            changes.append(edit_notebook(data, edit, path=args.file_path))
            return changes[-1].data

        outcome = await step.ctx.fs.rewrite_bytes(args.file_path, change)
        made = changes[-1]
        return self.data(
            made,
            target=outcome.path,
            version=outcome.version,
            previous_version=outcome.previous_version,
            edit_mode=args.edit_mode,
            previous_cell_type=made.previous_type,
        )

    def render(self, data: NotebookEditData, args: NotebookEditArgs) -> str:
        del args
        cell, where = f"cell {data.cell_id}", data.target
        if data.edit_mode == "insert":
            text = (
                f"Inserted {data.cell_type} {cell} at position {data.index} in {where} "
                f"({count(data.cells, 'cell')} now)."
            )
        elif data.edit_mode == "delete":
            left = count(data.cells, "cell")
            text = f"Deleted {cell} ({data.cell_type}) from {where} ({left} left)."
        elif data.previous_cell_type != data.cell_type:
            dropped = " and its outputs dropped" if data.previous_cell_type == "code" else ""
            text = (
                f"Replaced {cell} of {where}: now {data.cell_type} "
                f"(was {data.previous_cell_type}{dropped})."
            )
        else:
            text = f"Replaced the source of {cell} ({data.cell_type}) in {where}."
            if data.kept_outputs:
                text += (
                    f" It keeps {count(data.kept_outputs, 'output')} of the previous source "
                    "until it runs again."
                )
        if not data.ids and data.edit_mode != "replace":
            text += " Cells after it are numbered anew: use the new cell-N ids."
        if data.rewritten_whole:
            text += " (The notebook was written again whole, in its own layout.)"
        return text


NOTEBOOK_EDIT = NotebookEditTool()
