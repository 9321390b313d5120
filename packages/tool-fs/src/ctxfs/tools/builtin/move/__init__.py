"""``move``: rename a file the agent has read (never over a file it has not), or a directory."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

__all__ = ["MOVE", "MoveArgs", "MoveData", "MoveTool"]


class MoveArgs(ToolArgs):
    """Arguments of ``move``."""

    source_path: str
    destination_path: str
    overwrite: bool = False


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
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    summary = (
        "Move or rename a file you have read since it last changed, or a whole "
        "directory. The destination must not exist unless `overwrite`."
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
