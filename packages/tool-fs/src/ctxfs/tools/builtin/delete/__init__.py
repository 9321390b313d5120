"""``delete``: remove a file the agent has read, only as it read it."""

from __future__ import annotations

from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

__all__ = ["DELETE", "DeleteArgs", "DeleteData", "DeleteTool"]


class DeleteArgs(ToolArgs):
    """Arguments of ``delete``."""

    file_path: str


class DeleteData(ResultData):
    """The data of a ``delete`` result."""


class DeleteTool(Tool[DeleteArgs, DeleteData]):
    """Delete a file."""

    name = "delete"
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    summary = "Delete a file (not a directory) you have read since it last changed."

    async def run(self, step: Step, args: DeleteArgs) -> DeleteData:
        await step.ctx.fs.delete(args.file_path)
        return self.data(target=args.file_path)

    def render(self, data: DeleteData, args: DeleteArgs) -> str:
        del args
        return f"Deleted {data.target}."


DELETE = DeleteTool()
