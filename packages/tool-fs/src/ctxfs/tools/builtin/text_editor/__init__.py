"""Anthropic's text editor tool (``text_editor_20250728``), run as the other tools' calls.

Claude models are trained on this client-executed tool. ctxfs offers it to the
``anthropic`` provider in place of ``read``, ``write``, ``edit`` and ``list_dir``
(when all four are offered directly) and runs each command as the same
``ctx.fs`` call, with the same checks, as those tools: ``view`` is a read (or a
listing, for a directory), ``create`` a write, ``str_replace`` an edit,
``insert`` an insert. A ``view`` always shows the text (it has no ``fresh`` to
ask for it again). ``undo_edit``, gone from this version of the tool but still
sent by models trained on earlier ones, undoes the owner's newest step when that
step changed the file (``ctx.fs.undo(1)``), and is refused otherwise.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import Field, NonNegativeInt, RootModel

from ctxfs.core import (
    FileKind,
    FsError,
    InvalidArgument,
    NotEnabled,
    OutsideRoot,
    normalize_path,
)
from ctxfs.tools.builtin.edit import EDIT, EditArgs
from ctxfs.tools.builtin.list_dir import LIST_DIR, ListData, ListDirArgs
from ctxfs.tools.builtin.read import INVALID_BYTES_NOTE, READ, ReadArgs, ReadData
from ctxfs.tools.builtin.write import WRITE, WriteArgs
from ctxfs.tools.definitions import Exposure
from ctxfs.tools.results import (
    STRIPPED_NOTE,
    EditData,
    ResultData,
    ToolResult,
    UndoData,
    count,
    span,
    undone,
    with_diff,
)
from ctxfs.tools.tool import Annotations, Limits, Offering, Step, Tool, ToolArgs

__all__ = [
    "EDITOR_NAME",
    "EDITOR_TYPE",
    "TEXT_EDITOR",
    "Create",
    "EditorCommand",
    "Insert",
    "InsertData",
    "StrReplace",
    "TextEditorOptions",
    "TextEditorTool",
    "UndoEdit",
    "View",
]

EDITOR_NAME: Final = "str_replace_based_edit_tool"
EDITOR_TYPE: Final = "text_editor_20250728"


@dataclass(frozen=True, kw_only=True)
class TextEditorOptions:
    """The options of Anthropic's text editor."""

    editor_root: str | None = None
    """An absolute path the model may prefix paths with in text-editor calls (as
    ``/repo/src/app.py`` for ``src/app.py``); None accepts relative paths only."""


class View(ToolArgs):
    """``view``: a file's lines (``[start, end]``, end -1 for the last) or a directory."""

    command: Literal["view"]
    path: str
    view_range: tuple[int, int] | None = None


class Create(ToolArgs):
    """``create``: write a whole file."""

    command: Literal["create"]
    path: str
    file_text: str


class StrReplace(ToolArgs):
    """``str_replace``: replace the one occurrence of ``old_str``."""

    command: Literal["str_replace"]
    path: str
    old_str: str
    new_str: str = ""


class Insert(ToolArgs):
    """``insert``: add lines after line ``insert_line`` (0: at the top).

    Models send the text as ``insert_text`` (observed) or ``new_str`` (documented):
    both are accepted.
    """

    command: Literal["insert"]
    path: str
    insert_line: NonNegativeInt
    insert_text: str | None = None
    new_str: str | None = None

    @property
    def text(self) -> str | None:
        """The lines to insert, whichever field carried them."""
        return self.insert_text if self.insert_text is not None else self.new_str


class UndoEdit(ToolArgs):
    """``undo_edit``: undo the last change of ``path`` (only if it is the owner's newest)."""

    command: Literal["undo_edit"]
    path: str


Command = View | Create | StrReplace | Insert | UndoEdit


class EditorCommand(RootModel[Command]):
    """One call of the text editor: the command picks the fields."""

    root: Annotated[Command, Field(discriminator="command")]


class InsertData(ResultData):
    """The data of an ``insert`` result."""

    version: str
    previous_version: str
    first_line: int
    last_line: int
    diff: str | None


class TextEditorTool(Tool[EditorCommand, ResultData]):
    """The text editor: ``view``, ``create``, ``str_replace`` and ``insert``."""

    name = EDITOR_NAME
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=False)
    offering = Offering.PROVIDER
    provider = "anthropic"
    stands_for = (READ.name, WRITE.name, EDIT.name, LIST_DIR.name)

    summary = "Anthropic's text editor: view, create, str_replace, insert and undo_edit."

    def provider_definition(self, limits: Limits) -> dict[str, Any]:
        """The typed tool Anthropic's API takes in place of a JSON schema."""
        return {
            "type": EDITOR_TYPE,
            "name": self.name,
            "max_characters": limits.text.max_output_chars,
        }

    async def answer(self, step: Step, args: EditorCommand) -> ToolResult:
        try:
            result = await self._answer(step, args)
        except FsError as error:
            error.message = _in_editor_terms(error.message, error.path)
            error.hint = _in_editor_terms(error.hint, error.path)
            raise
        text = _notes_in_editor_terms(result.text, result.data)
        return result if text == result.text else result.model_copy(update={"text": text})

    async def _answer(self, step: Step, args: EditorCommand) -> ToolResult:
        command = args.root
        path = _relative(command.path, step.limits.of(TextEditorOptions).editor_root)
        if isinstance(command, View):
            offset, limit = _view_range(command.view_range)
            if (await step.ctx.fs.stat(path)).kind is FileKind.DIRECTORY:
                listing = ListDirArgs(path=path, offset=offset, limit=limit)
                return await step.tool(LIST_DIR.name).answer(step, listing)
            read = ReadArgs(file_path=path, offset=offset, limit=limit, fresh=True)
            return await step.tool(READ.name).answer(step, read)
        if isinstance(command, Create):
            write = WriteArgs(file_path=path, content=command.file_text)
            return await step.tool(WRITE.name).answer(step, write)
        if isinstance(command, StrReplace):
            edit = EditArgs(file_path=path, old_string=command.old_str, new_string=command.new_str)
            return await step.tool(EDIT.name).answer(step, edit)
        if isinstance(command, UndoEdit):
            return await _undo_edit(step, path)
        if command.text is None:
            raise InvalidArgument(
                "insert needs the text to insert, as insert_text (or new_str)",
                details={"field": "insert_text"},
            )
        outcome = await step.ctx.fs.insert(path, command.insert_line, command.text)
        data = InsertData.of(outcome, tool="insert")
        inserted = count(data.last_line - data.first_line + 1, "line")
        head = f"Inserted {inserted} into {data.target} ({span(data.first_line, data.last_line)})."
        return ToolResult.success(with_diff(head, data.diff), data)


async def _undo_edit(step: Step, path: str) -> ToolResult:
    """Undo the owner's newest step, if it changed *path*; else refuse, saying what to do."""
    ctx, path = step.ctx, normalize_path(path)
    memory = ctx.opened_fs.session_memory
    offered = step.offer.exposure.get("undo") in (Exposure.DIRECT, Exposure.DEFERRED)
    if memory is None or not offered:
        why = "this store keeps no history of changes" if memory is None else "undo is not offered"
        raise NotEnabled(
            f"undo_edit is not available: {why}",
            path=path,
            hint="Undo a change with str_replace, putting back the text you replaced.",
        )
    steps = [step for step in await memory.store.steps(ctx.owner) if step.undid is None]
    back = None  # how many steps back the newest that changed path is
    for distance, taken in enumerate(reversed(steps), start=1):
        if any(path in (change.path, change.key, change.moved_from) for change in taken.changes):
            back = distance
            break
    if back is None:
        raise InvalidArgument(
            f"undo_edit: there is no change of yours to {path} to undo",
            path=path,
            hint="Only changes made in this session are kept; put back the text you "
            "replaced with str_replace.",
            details={"field": "path"},
        )
    if back > 1:
        later = sorted({change.path or "files it could not record" for change in steps[-1].changes})
        raise _not_newest(step, path, steps_back=back, later=later)
    outcome = await ctx.fs.undo(1, newest=steps[-1].number)  # (not a step made since)
    data = UndoData.of_undo(outcome, tool="undo_edit").model_copy(update={"target": path})
    return ToolResult.success(undone(data, f"your last edit of {path}"), data)


def _not_newest(step: Step, path: str, *, steps_back: int, later: list[str]) -> InvalidArgument:
    """Why ``undo_edit`` of *path* undoes nothing (later changes), and what would undo it."""
    prefix = step.toolset.options.tool_prefix
    exposure = step.offer.exposure.get("undo")
    if exposure is Exposure.DIRECT:
        tool = f"{prefix}undo with steps={steps_back}, which undoes them too, or "
    elif exposure is Exposure.DEFERRED:
        call = json.dumps({"name": "undo", "arguments": json.dumps({"steps": steps_back})})
        tool = f"{prefix}call_tool with {call}, which undoes them too, or "
    else:
        tool = ""
    return InvalidArgument(
        f"undo_edit undoes only your newest change, and it changed {', '.join(later)}, not "
        f"{path}; your last change of {path} is {steps_back} changes back",
        path=path,
        hint=f"Undo it with {tool}put back the text you replaced with str_replace.",
        details={"field": "path", "steps_back": steps_back},
    )


_IN_EDITOR_TERMS: Final = (
    (re.compile(r"continue with offset=(\d+)"), r"continue with view_range [\1, -1]"),
    (re.compile(r"use an offset from 1 to (\d+)"), r"use a view_range within lines 1 to \1"),
    (re.compile(r", or set replace_all\b"), ""),
    (re.compile(r"(?<![\w/.-])(old|new)_string(?![\w/-]|\.\w)"), r"\1_str"),
)
"""What the tools the editor runs as say of their arguments, in the editor's own terms."""


def _in_editor_terms(text: str, path: str | None = None) -> str:
    """*text* (the tools' own words) in the editor's terms; *path*, where it is named, as it is."""
    if path:
        named = re.compile(rf"(?<![\w/.-]){re.escape(path)}(?![\w/-]|\.\w)")
        parts = named.split(text)
        return path.join(_in_editor_terms(part) for part in parts)
    for said, meant in _IN_EDITOR_TERMS:
        text = said.sub(meant, text)
    return text


def _notes_in_editor_terms(text: str, data: ResultData) -> str:
    """*text* with the notes the tools add to what they show in the editor's terms.

    Only the notes change, never the lines, names or diffs shown: each note is found as the
    tool wrote it, where it writes it (the last after the lines shown, the first before a diff).
    """
    notes: list[tuple[str, bool]] = []
    if isinstance(data, EditData) and data.stripped_line_numbers:
        notes.append((STRIPPED_NOTE, False))
    if isinstance(data, ReadData) and "invalid bytes" in (data.encoding or ""):
        notes.append((INVALID_BYTES_NOTE, True))
    if isinstance(data, ReadData | ListData) and data.next_offset is not None:
        notes.append((f"continue with offset={data.next_offset}", True))
    if isinstance(data, ReadData) and data.returned_lines == 0 and data.total_lines:
        notes.append((f"use an offset from 1 to {data.total_lines}", True))
    for note, last in notes:
        before, found, after = text.rpartition(note) if last else text.partition(note)
        if found:
            text = before + _in_editor_terms(note) + after
    return text


def _relative(path: str, editor_root: str | None) -> str:
    """Map an absolute path under *editor_root* to a root-relative one."""
    if editor_root is None or not path.startswith("/"):
        return path
    root = editor_root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        raise OutsideRoot(
            f"{path!r} is outside the workspace {root}/",
            path=path,
            hint=f"Use a path under {root}/.",
        )
    return path[len(root) :].lstrip("/")


def _view_range(view_range: tuple[int, int] | None) -> tuple[int | None, int | None]:
    """The read offset and limit of a text-editor ``view_range`` (end -1: to the end)."""
    if view_range is None:
        return None, None
    start, end = view_range
    if start < 1 or (end != -1 and end < start):
        raise InvalidArgument(
            f"view_range {list(view_range)} is not [start, end] with 1 <= start <= end, "
            "or end -1 for the end of the file",
            details={"field": "view_range"},
        )
    return start, None if end == -1 else end - start + 1


TEXT_EDITOR = TextEditorTool()
