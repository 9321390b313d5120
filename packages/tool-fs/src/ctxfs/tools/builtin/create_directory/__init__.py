"""``create_directory``: make a directory and its missing parents."""

from __future__ import annotations

from pydantic import Field

from ctxfs.tools.results import ResultData
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

__all__ = ["CREATE_DIRECTORY", "CreateDirectoryArgs", "CreateDirectoryData", "CreateDirectoryTool"]


class CreateDirectoryArgs(ToolArgs):
    """Arguments of ``create_directory``."""

    path: str


class CreateDirectoryData(ResultData):
    """The data of a ``create_directory`` result."""

    implicit: bool = Field(
        default=False,
        description="The store keeps no directories (an object store): nothing was made; "
        "one appears with its first file.",
    )


class CreateDirectoryTool(Tool[CreateDirectoryArgs, CreateDirectoryData]):
    """Create a directory."""

    name = "create_directory"
    writes = True
    annotations = Annotations(read_only=False, destructive=False, idempotent=True)

    summary = "Create a directory and any missing parents (one that exists is no error)."

    async def run(self, step: Step, args: CreateDirectoryArgs) -> CreateDirectoryData:
        await step.ctx.fs.mkdir(args.path)
        implicit = not step.ctx.opened_fs.backend.capabilities.real_directories
        return self.data(target=args.path, implicit=implicit)

    def render(self, data: CreateDirectoryData, args: CreateDirectoryArgs) -> str:
        del args
        if data.implicit:
            return (
                f"Nothing to make: on this store {data.target}/ appears with its first file "
                "(nothing was written, and there is nothing to undo)."
            )
        return f"Directory {data.target} exists."


CREATE_DIRECTORY = CreateDirectoryTool()
