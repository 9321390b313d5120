"""``undo``: put back what the agent's last changes did, or every change since a checkpoint.

It runs ``ctx.fs.undo`` or ``ctx.fs.rewind``: all the files at once, byte for
byte, or nothing; a file someone else changed since is refused ``stale``, with
its diff. A checkpoint is named by its id or its label (a harness marks them
with ``ctx.fs.checkpoint``). Deferred by default: found through ``search_tools``.
"""

from __future__ import annotations

from pydantic import Field, PositiveInt

from ctxfs.core import InvalidArgument
from ctxfs.tools.definitions import Exposure
from ctxfs.tools.results import UndoData, undone
from ctxfs.tools.tool import Annotations, Step, Tool, ToolArgs

__all__ = ["UNDO", "UndoArgs", "UndoTool"]

_LISTED = 10
"""Checkpoints an unknown one's error names, the newest."""


class UndoArgs(ToolArgs):
    """Arguments of ``undo``."""

    steps: PositiveInt = Field(default=1, description="How many of your last changes to undo.")
    checkpoint: str | None = Field(
        default=None, description="Undo every change since this checkpoint (id or label) instead."
    )
    dry_run: bool = Field(default=False, description="Say what would be put back; write nothing.")


class UndoTool(Tool[UndoArgs, UndoData]):
    """Undo the agent's last changes, or every change since a checkpoint."""

    name = "undo"
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)
    exposure = Exposure.DEFERRED

    summary = (
        "Undo your last changes (each call that changed files is one), or every change "
        "since a checkpoint: the files get back their earlier bytes."
    )

    async def run(self, step: Step, args: UndoArgs) -> UndoData:
        if args.checkpoint is None:
            outcome = await step.ctx.fs.undo(args.steps, dry_run=args.dry_run)
        elif args.steps != 1:
            raise InvalidArgument(
                "give steps or checkpoint, not both",
                hint="Undo to a checkpoint with checkpoint alone, or your last changes with "
                "steps alone.",
                details={"field": "steps"},
            )
        else:
            mark = await _checkpoint_id(step, args.checkpoint)
            outcome = await step.ctx.fs.rewind(mark, dry_run=args.dry_run)
        return UndoData.of_undo(outcome, tool=self.name)

    def render(self, data: UndoData, args: UndoArgs) -> str:
        if args.checkpoint is not None:
            if not data.steps:
                return f"Nothing to undo: you changed nothing since checkpoint {args.checkpoint}."
            return undone(data, f"every change since checkpoint {args.checkpoint}")
        steps = "your last change" if args.steps == 1 else f"your last {args.steps} changes"
        return undone(data, steps)


async def _checkpoint_id(step: Step, given: str) -> str:
    """The id of the owner's checkpoint *given* names: its id, or the newest with that label."""
    memory = step.ctx.opened_fs.session_memory
    if memory is None:
        return given  # the rewind refuses it: no session memory
    marks = await memory.store.checkpoints(step.ctx.owner)
    if any(mark.id == given for mark in marks):
        return given
    labelled = [mark for mark in marks if mark.label == given]
    if labelled:
        return labelled[-1].id
    named = [mark.id + (f" ({mark.label})" if mark.label else "") for mark in marks[-_LISTED:]]
    raise InvalidArgument(
        f"no checkpoint is named {given!r}; yours: {', '.join(named) or 'none'}",
        hint="Pass one of those as checkpoint, or undo your last changes with steps.",
        details={"field": "checkpoint", "checkpoints": [mark.id for mark in marks]},
    )


UNDO = UndoTool()
