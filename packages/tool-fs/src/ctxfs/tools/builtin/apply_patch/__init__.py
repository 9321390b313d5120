"""``apply_patch``: a Codex patch over several files, applied whole or not at all."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ctxfs.tools.results import ResultData, span, with_diff
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

__all__ = ["APPLY_PATCH", "ApplyPatchArgs", "ApplyPatchTool", "PatchData", "PatchedFileData"]


class ApplyPatchArgs(ToolArgs):
    """Arguments of ``apply_patch`` (``input``, as Codex names it)."""

    input: str
    dry_run: bool = Field(default=False, description="Show the diff; write nothing.")


class PatchedFileData(BaseModel):
    """What a patch did to one file."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    path: str
    action: Literal["add", "update", "delete"]
    moved_to: str | None
    version: str | None = Field(
        description="Its version now; none (absent) once deleted or in a dry run."
    )
    previous_version: str | None
    first_line: int
    last_line: int
    diff: str | None


class PatchData(ResultData):
    """The data of a patch's result: each file, in the patch's order."""

    files: list[PatchedFileData]
    written: bool = Field(description="False for a dry run: nothing changed.")


class ApplyPatchTool(Tool[ApplyPatchArgs, PatchData]):
    """Add, update, move and delete files with one patch."""

    name = "apply_patch"
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)

    summary = (
        "Add, update, move and delete files with one patch, all or nothing; files it "
        "changes must have been read since they last changed. `input`:\n"
        "*** Begin Patch\n"
        "*** Add File: new.py\n+line\n"
        "*** Update File: app.py\n*** Move to: main.py\n@@ def greet():\n"
        " context\n-old\n+new\n"
        "*** Delete File: old.py\n"
        "*** End Patch"
    )

    async def run(self, step: Step, args: ApplyPatchArgs) -> PatchData:
        from ctxfs.tools.builtin.apply_patch.patches import parse_patch  # noqa: PLC0415 - loaded by the first patch

        outcome = await step.ctx.fs.apply_patch(parse_patch(args.input), dry_run=args.dry_run)
        return self.data(outcome, target=outcome.files[0].path)

    def render(self, data: PatchData, args: ApplyPatchArgs) -> str:
        del args
        return patched(data)


_LETTERS = {"add": "A", "update": "M", "delete": "D"}


def patched(data: PatchData) -> str:
    """What a patch changed, file by file (``A``, ``M``, ``D`` as Codex says), with diffs."""
    head = (
        "Success. Updated the following files:"
        if data.written
        else "Dry run, nothing written. The patch applies, and would change:"
    )
    lines = [head]
    for file in data.files:
        where = f"{file.path} -> {file.moved_to}" if file.moved_to else file.path
        if file.action == "update" and file.diff is not None:
            where += f" ({span(file.first_line, file.last_line)})"
        lines.append(with_diff(f"{_LETTERS[file.action]} {where}", file.diff))
    return "\n".join(lines)


APPLY_PATCH = ApplyPatchTool()
