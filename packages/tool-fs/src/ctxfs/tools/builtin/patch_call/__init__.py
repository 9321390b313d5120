"""The Responses API's ``apply_patch`` tool, run as ``ctx.fs.apply_patch`` calls.

GPT models are trained on this built-in, client-executed tool. ctxfs offers it
(``{"type": "apply_patch"}``) to the ``openai`` provider on the Responses API in
place of the Codex ``apply_patch`` function tool. The model then emits
``apply_patch_call`` items, each one ``create_file``, ``update_file`` (with a
V4A diff) or ``delete_file`` operation; :func:`answer_patch_call` runs one with
the same checks as every other change and returns the
``apply_patch_call_output`` item to send back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import Field, RootModel

from ctxfs.core import PatchAction
from ctxfs.tools.builtin.apply_patch import APPLY_PATCH, PatchData, patched
from ctxfs.tools.tool import Annotations, Limits, Offering, Step, Tool, ToolArgs

if TYPE_CHECKING:
    from ctxfs.core import Context
    from ctxfs.tools.offers import Offer
    from ctxfs.tools.results import ToolResult
    from ctxfs.tools.toolset import FsToolset

__all__ = ["PATCH_CALL", "PatchCallTool", "PatchOperation", "answer_patch_call"]

_ACTIONS: Final = {
    "create_file": PatchAction.ADD,
    "update_file": PatchAction.UPDATE,
    "delete_file": PatchAction.DELETE,
}


class CreateFile(ToolArgs):
    """``create_file``: a new file, its lines as a V4A diff of ``+`` lines."""

    type: Literal["create_file"]
    path: str
    diff: str


class UpdateFile(ToolArgs):
    """``update_file``: a V4A diff of the file."""

    type: Literal["update_file"]
    path: str
    diff: str


class DeleteFile(ToolArgs):
    """``delete_file``."""

    type: Literal["delete_file"]
    path: str


class PatchOperation(RootModel[CreateFile | UpdateFile | DeleteFile]):
    """The ``operation`` of one ``apply_patch_call`` item."""

    root: Annotated[CreateFile | UpdateFile | DeleteFile, Field(discriminator="type")]


class PatchCallTool(Tool[PatchOperation, PatchData]):
    """The Responses API's ``apply_patch``: one file operation per call."""

    name = "apply_patch_call"
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)
    offering = Offering.PROVIDER
    provider = "openai"
    stands_for = (APPLY_PATCH.name,)

    summary = "The Responses API's apply_patch: create_file, update_file and delete_file."

    def provider_definition(self, limits: Limits) -> dict[str, Any]:
        """The built-in tool the Responses API takes in place of a function."""
        del limits
        return {"type": "apply_patch"}

    async def run(self, step: Step, args: PatchOperation) -> PatchData:
        from ctxfs.tools.builtin.apply_patch.patches import parse_diff  # noqa: PLC0415 - loaded by the first patch

        operation = args.root
        patch = parse_diff(
            _ACTIONS[operation.type],
            operation.path,
            "" if isinstance(operation, DeleteFile) else operation.diff,
        )
        outcome = await step.ctx.fs.apply_patch([patch])
        return self.data(outcome, target=outcome.files[0].path)

    def render(self, data: PatchData, args: PatchOperation) -> str:
        del args
        return patched(data)


async def answer_patch_call(
    toolset: FsToolset, ctx: Context, item: Mapping[str, Any], *, offer: Offer | None = None
) -> dict[str, Any]:
    """Run one ``apply_patch_call`` item; return its ``apply_patch_call_output`` item.

    *item* is the item as the Responses API returned it (as a mapping:
    ``item.model_dump()`` for the SDK's model). A failure is a ``failed`` status
    whose output says why and what to do; nothing raises but cancellation.
    """
    result: ToolResult = await toolset.execute(
        ctx, PATCH_CALL.name, item.get("operation"), provider="openai", offer=offer
    )
    return {
        "type": "apply_patch_call_output",
        "call_id": item.get("call_id", ""),
        "status": "failed" if result.is_error else "completed",
        "output": result.text,
    }


PATCH_CALL = PatchCallTool()
