"""``changes``: the files the agent read or wrote that changed since, with their diffs.

It lists ``ctx.fs.changed()``; nothing is observed (a changed file still needs a
read before the agent changes it, unless a stale refusal showed its whole diff).
Deferred by default: found through ``search_tools``.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, Field

from ctxfs.core import normalize_path
from ctxfs.tools.definitions import Exposure
from ctxfs.tools.results import ResultData, count
from ctxfs.tools.tool import Step, Tool, ToolArgs

__all__ = ["CHANGES", "ChangedFileData", "ChangesArgs", "ChangesData", "ChangesTool"]


class ChangesArgs(ToolArgs):
    """Arguments of ``changes``."""

    path: str = Field(default="", description="Only files at or below this path.")


class ChangedFileData(BaseModel):
    """One file the agent saw whose current version is another."""

    path: str
    seen: str = Field(description="The version you last read or wrote.")
    current: str | None = Field(default=None, description="The version now; absent: deleted.")
    current_kind: str | None = Field(
        default=None,
        description="What is there now, if no file: directory, symlink (out of the root or "
        "looping), other.",
    )
    diff: str | None = Field(
        default=None, description="What changed since your version, when it is kept."
    )
    diff_whole: bool = Field(
        default=False, description="Whether diff is the whole diff, not a summary."
    )
    diff_left_out: bool = Field(
        default=False, description="The diff was left out: the answer held enough diffs."
    )


class ChangesData(ResultData):
    """The data of a ``changes`` result."""

    files: list[ChangedFileData]


class ChangesTool(Tool[ChangesArgs, ChangesData]):
    """List the files the agent saw that changed since."""

    name = "changes"
    exposure = Exposure.DEFERRED

    summary = "List the files you read or wrote that were changed since by someone else, diffed."

    async def run(self, step: Step, args: ChangesArgs) -> ChangesData:
        under = normalize_path(args.path)
        files = [
            ChangedFileData.model_validate(changed, from_attributes=True)
            for changed in await step.ctx.fs.changed()
            if not under or changed.path == under or changed.path.startswith(under + "/")
        ]
        budget = step.ctx.opened_fs.text_options.max_output_chars  # (for the diffs together)
        for file in files:
            if file.diff is not None and len(file.diff) > budget:
                file.diff, file.diff_whole, file.diff_left_out = None, False, True
            budget -= len(file.diff or "")
        return self.data(target=under or None, files=files)

    def render(self, data: ChangesData, args: ChangesArgs) -> str:
        where = f" under {data.target}" if data.target else ""
        if not data.files:
            return f"(no file you read or wrote{where} changed since)"
        lines = [f"{count(len(data.files), 'file')} you read or wrote{where} changed since:"]
        for file in data.files:
            if file.current is None:
                now = _NOW_THERE.get(file.current_kind or "", "deleted")
                lines.append(f"{file.path}: {now} (you saw version {file.seen})")
                continue
            lines.append(f"{file.path}: version {file.seen} -> {file.current}")
            if file.diff_left_out:
                lines.append("(diff left out, the answer being long: ask for this path alone)")
            else:
                lines.append(file.diff or "(your version is not kept: read the file to see it)")
        lines.append("(read a file again before you change it)")
        return "\n".join(lines)


_NOW_THERE: Final = {
    "directory": "a directory now",
    "symlink": "a link out of the root or in a loop now (it or a parent directory)",
    "other": "a special file now (not a regular file)",
}

CHANGES = ChangesTool()
