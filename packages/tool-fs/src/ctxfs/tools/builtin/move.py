"""``move``: rename a file the agent has read (never over a file it has not), or a directory."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Annotations, Limits, Step, Tool, ToolArgs

__all__ = ["MOVE", "MoveArgs", "MoveData", "MoveTool"]


class MoveArgs(ToolArgs):
    """Arguments of ``move``."""

    source_path: str = Field(
        description="Path of the file (or directory) to move, relative to the root."
    )
    destination_path: str = Field(description="Its new path, relative to the workspace root.")
    overwrite: bool = Field(
        default=False,
        description="Replace a file already at destination_path (it must have been read).",
    )


class MoveData(ResultData):
    """The data of a ``move`` result."""

    destination: str
    version: str | None = Field(
        description="The file's version at its new path; none (absent) when a directory moved."
    )
    replaced: str | None
    directory: bool = Field(default=False, description="Whether a whole directory moved.")
    moved: int = Field(
        default=1, description="Entries moved: 1 for a file; everything below a directory."
    )


class MoveTool(Tool[MoveArgs, MoveData]):
    """Move (rename) a file, or a directory with everything in it."""

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
            "as read at its new path. A directory moves too, whole, with everything in it "
            "(no read needed; its destination must not exist), where the store has real "
            "directories; on an object store, move its files one by one."
        )

    async def run(self, step: Step, args: MoveArgs) -> MoveData:
        outcome = await step.ctx.fs.move(
            args.source_path, args.destination_path, overwrite=args.overwrite
        )
        return self.data(outcome)

    def render(self, data: MoveData, args: MoveArgs) -> str:
        del args
        if data.directory:
            entries = "entry" if data.moved == 1 else "entries"
            return (
                f"Moved directory {data.target} to {data.destination} "
                f"({data.moved} {entries} in it)."
            )
        replaced = " (replacing the file there)" if data.replaced is not None else ""
        return f"Moved {data.target} to {data.destination}{replaced}."


MOVE = MoveTool()
