"""``move``: rename a file the agent has read, never over a file it has not."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Annotations, Limits, Step, Tool, ToolArgs

__all__ = ["MOVE", "MoveArgs", "MoveData", "MoveTool"]


class MoveArgs(ToolArgs):
    """Arguments of ``move``."""

    source_path: str = Field(description="Path of the file to move, relative to the root.")
    destination_path: str = Field(description="Its new path, relative to the workspace root.")
    overwrite: bool = Field(
        default=False,
        description="Replace a file already at destination_path (it must have been read).",
    )


class MoveData(ResultData):
    """The data of a ``move`` result."""

    destination: str
    version: str
    replaced: str | None


class MoveTool(Tool[MoveArgs, MoveData]):
    """Move (rename) a file."""

    name = "move"
    arguments = MoveArgs
    result = MoveData
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    def description(self, limits: Limits) -> str:
        del limits
        return (
            "Move or rename a file you have read (any part of it) since it last changed. "
            "The destination must not exist, unless `overwrite` is true and you have read "
            "the file there too. Missing directories are created; afterwards the file counts "
            "as read at its new path."
        )

    async def run(self, step: Step, args: MoveArgs) -> MoveData:
        outcome = await step.ctx.fs.move(
            args.source_path, args.destination_path, overwrite=args.overwrite
        )
        return self.data(outcome)

    def render(self, data: MoveData, args: MoveArgs) -> str:
        del args
        replaced = " (replacing the file there)" if data.replaced is not None else ""
        return f"Moved {data.target} to {data.destination}{replaced}."


MOVE = MoveTool()
