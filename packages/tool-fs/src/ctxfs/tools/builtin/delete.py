"""``delete``: remove a file the agent has read, only as it read it."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Annotations, Limits, Step, Tool, ToolArgs

__all__ = ["DELETE", "DeleteArgs", "DeleteData", "DeleteTool"]


class DeleteArgs(ToolArgs):
    """Arguments of ``delete``."""

    file_path: str = Field(description="Path of the file, relative to the workspace root.")


class DeleteData(ResultData):
    """The data of a ``delete`` result."""


class DeleteTool(Tool[DeleteArgs, DeleteData]):
    """Delete a file."""

    name = "delete"
    arguments = DeleteArgs
    result = DeleteData
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    def description(self, limits: Limits) -> str:
        del limits
        return (
            "Delete a file you have read (any part of it) since it last changed; a file "
            "changed since, or never read, is left alone. Directories are not deleted."
        )

    async def run(self, step: Step, args: DeleteArgs) -> DeleteData:
        await step.ctx.fs.delete(args.file_path)
        return self.data(target=args.file_path)

    def render(self, data: DeleteData, args: DeleteArgs) -> str:
        del args
        return f"Deleted {data.target}."


DELETE = DeleteTool()
