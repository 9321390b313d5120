"""One result, two projections: text for the model and structured data for programs.

:class:`ToolResult` is what :meth:`FsToolset.execute` returns: the model's text, any
:attr:`~ToolResult.media`, and ``data``, the tool's own :class:`ResultData` model (whose JSON schema
is the tool's output schema); :attr:`ToolResult.structured` is that data as plain JSON types. Below:
the pieces every tool's text is made of, and a result in each provider's own shape, what a harness
sends back to the model.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Self, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    field_serializer,
    field_validator,
)

from ctxfs.core import CutLine, ErrorCode, FsError, format_line_number
from ctxfs.tools.names import ESCAPED_NAMES, escaped, escaped_data

if TYPE_CHECKING:
    from ctxfs.core import UndoOutcome

__all__ = [
    "SHOWN_CHARS",
    "STRIPPED_NOTE",
    "WALK_TRUNCATED",
    "EditData",
    "ErrorInfo",
    "MediaPart",
    "Page",
    "PageData",
    "RestoredData",
    "ResultData",
    "ToolResult",
    "UndoData",
    "UndoneFile",
    "anthropic_tool_result",
    "around",
    "count",
    "edited",
    "error_text",
    "escape",
    "left_out",
    "openai_chat_messages",
    "openai_function_call_output",
    "page_footer",
    "size",
    "span",
    "undone",
    "unnamed",
    "walk_stopped",
    "with_diff",
]

DataT = TypeVar("DataT", bound="ResultData")
T = TypeVar("T")


class ErrorInfo(BaseModel):
    """A failure, as programs see it."""

    model_config = ConfigDict(frozen=True)

    code: ErrorCode
    message: str
    retryable: bool
    hint: str
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, error: FsError) -> ErrorInfo:
        """The structured form of *error*."""
        return cls(
            code=error.code,
            message=error.message,
            retryable=error.retryable,
            hint=error.hint,
            details=dict(error.details),
        )


class ResultData(BaseModel):
    """Fields every result has."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built by its tool's first use

    status: Literal["ok", "error"]
    tool: str
    target: str | None = Field(
        default=None,
        validation_alias=AliasChoices("target", "path"),
        description="The path the call acted on.",
    )
    error: ErrorInfo | None = None

    @classmethod
    def of(cls, outcome: object = None, /, **fields: Any) -> Self:
        """The successful data of *outcome* (a dataclass, a model or None) and *fields*.

        Fields are taken by name (the outcome's ``path`` is the ``target``), never copied by hand;
        each tool's data model adds its own fields.
        """
        return cls.model_validate({**_fields_of(outcome), "status": "ok", **fields})

    @classmethod
    def failure(cls, tool: str, error: FsError, target: str | None = None) -> ResultData:
        """The data of a call of *tool* that failed with *error*."""
        return ResultData(
            status="error", tool=tool, target=error.path or target, error=ErrorInfo.of(error)
        )


class EditData(ResultData):
    """The data of a text edit: ``edit``'s and ``multi_edit``'s results."""

    replacements: int
    version: str
    previous_version: str
    first_line: int
    last_line: int
    stripped_line_numbers: bool
    diff: str | None
    replace_all: bool = False
    edits: int = Field(default=1, description="Edits applied in turn (multi_edit).")
    written: bool = Field(default=True, description="False for a dry run: nothing changed.")


class UndoneFile(BaseModel):
    """One file an undo put back."""

    path: str
    was: str | None = Field(
        default=None, description="Its version before the undo; absent: it did not exist."
    )
    now: str | None = Field(default=None, description="Its version after; absent: removed.")
    moved_back_from: str | None = Field(
        default=None, description="A directory moved back (its files with it): where it was."
    )


class UndoData(ResultData):
    """The data of an undo: the ``undo`` tool's, and the text editor's ``undo_edit``."""

    steps: list[int] = Field(description="The steps undone, newest first.")
    files: list[UndoneFile]
    directories: list[str] = Field(
        default_factory=list, description="Directories the undone changes made, removed."
    )
    kept_directories: list[str] = Field(
        default_factory=list,
        description="Directories they made, kept: not empty, or not removable.",
    )
    written: bool = Field(default=True, description="False for a dry run: nothing changed.")

    @classmethod
    def of_undo(cls, outcome: UndoOutcome, *, tool: str) -> UndoData:
        """The data of *outcome* (an :class:`~ctxfs.core.outcomes.UndoOutcome`)."""
        files = [
            UndoneFile(path=f.path, was=f.was, now=f.now, moved_back_from=f.moved_back_from)
            for f in outcome.files
        ]
        return cls.of(
            tool=tool,
            steps=list(outcome.steps),
            files=files,
            directories=list(outcome.directories),
            kept_directories=list(outcome.kept_directories),
            written=outcome.written,
        )


@dataclass(frozen=True, kw_only=True)
class Page:
    """Which items of a list a call returns: ``count`` of them from the 1-based ``first``."""

    first: int
    count: int

    @classmethod
    def of(cls, offset: int | None, limit: int | None, most: int) -> Page:
        """The page a model asked for with *offset* and *limit*, at most *most* items."""
        return cls(first=offset or 1, count=min(limit or most, most))

    def cut(self, items: Sequence[T]) -> list[T]:
        """The items of this page."""
        return list(items[self.first - 1 : self.first - 1 + self.count])

    def holds(self, number: int) -> bool:
        """Whether the item *number* (1-based) is on this page."""
        return self.first <= number < self.first + self.count

    def next_offset(self, shown: int, total: int) -> int | None:
        """The offset that continues after *shown* items of *total*, or None at the end."""
        following = self.first + shown
        return following if following <= total else None


class PageData(ResultData):
    """Fields every paged result has."""

    total: int = Field(description="Items in the whole list, not just this page.")
    offset: int = Field(description="1-based number of the first item of this page.")
    next_offset: int | None = Field(description="The offset that continues; None at the end.")
    truncated: bool = Field(description="Whether items follow this page.")


class RestoredData(ResultData):
    """Result data read back from its plain form (``ToolResult.model_validate_json``).

    Every field of the plain form is kept, as an attribute, whatever tool it came from.
    """

    model_config = ConfigDict(extra="allow")


class MediaPart(BaseModel):
    """An image a result shows the model, next to its text (in JSON, the bytes are base64)."""

    model_config = ConfigDict(frozen=True, ser_json_bytes="base64", val_json_bytes="base64")

    media_type: str
    """``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp``."""
    data: bytes = Field(repr=False)
    width: int
    height: int

    @property
    def base64_data(self) -> str:
        """The bytes in base64 (what JSON APIs carry)."""
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """The image as a ``data:`` URL (what OpenAI's APIs take)."""
        return f"data:{self.media_type};base64,{self.base64_data}"


class ToolResult(BaseModel):
    """The outcome of one tool call."""

    model_config = ConfigDict(frozen=True)

    is_error: bool
    text: str
    """What the model reads; it also says what :attr:`media` shows (a model may not see)."""
    data: SerializeAsAny[ResultData]
    """The same result as typed data, for programs: the tool's own :class:`ResultData`."""
    error_code: ErrorCode | None = None
    """The stable code of a failure, None on success."""
    media: tuple[MediaPart, ...] = ()
    """What the model sees besides the text (an image ``read`` returns); the providers'
    shapes of a result carry it (:mod:`ctxfs.tools.results`)."""

    @field_validator("text")
    @classmethod
    def _escape_names(cls, text: str) -> str:
        """Bytes of names that are not UTF-8 are shown escaped, and the text says so."""
        shown = escaped(text)
        return text if shown is text else f"{shown}\n{ESCAPED_NAMES}"

    @field_validator("data", mode="before")
    @classmethod
    def _restore(cls, value: object) -> object:
        """Plain data (a saved result, read back) keeps every field it has."""
        return RestoredData.model_validate(value) if isinstance(value, Mapping) else value

    @field_serializer("data")
    def _plain_data(self, data: ResultData) -> dict[str, Any]:
        """A result in JSON (saved, say) carries its data in the plain form: :attr:`structured`."""
        del data
        return self.structured

    @classmethod
    def success(cls, text: str, data: ResultData, media: tuple[MediaPart, ...] = ()) -> ToolResult:
        """A successful call's result (with *media* for the model to see, if any)."""
        return cls(is_error=False, text=text, data=data, media=media)

    @classmethod
    def failed(cls, tool: str, error: FsError, target: str | None, text: str) -> ToolResult:
        """A failed call's result: *text* for the model, the error's code and data."""
        return cls(
            is_error=True,
            text=text,
            data=ResultData.failure(tool, error, target),
            error_code=error.code,
        )

    @functools.cached_property
    def structured(self) -> dict[str, Any]:
        """:attr:`data` as plain JSON types, what clients check against the output schema.

        Fields holding nothing are left out: None, and the result's own fields at an empty default
        (``false``, ``[]``, ``{}``). Names that are not UTF-8 are escaped as in :attr:`text`,
        ``raw_names`` mapping each to its bytes in base64.
        """
        plain = self.data.model_dump(mode="json", exclude_none=True)
        for name, empty in _empty_defaults(type(self.data)).items():
            if name in plain and type(plain[name]) is type(empty) and plain[name] == empty:
                del plain[name]
        return escaped_data(plain)

    def data_as(self, model: type[DataT]) -> DataT:
        """:attr:`data`, checked to be a *model* (``result.data_as(ReadData).version``).

        Raises:
            TypeError: The data is of another kind (the call failed, or was another tool).

        """
        if not isinstance(self.data, model):
            raise TypeError(f"the result holds {type(self.data).__name__}, not {model.__name__}")
        return self.data


@functools.cache
def _empty_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """The fields of *model* whose default says nothing (``False``, ``[]``, ``{}``), and it."""
    empty: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        default = info.get_default(call_default_factory=True)
        if type(default) in (bool, list, dict) and not default:
            empty[name] = default
    return empty


def _fields_of(outcome: object) -> Mapping[str, Any]:
    if outcome is None:
        return {}
    if dataclasses.is_dataclass(outcome) and not isinstance(outcome, type):
        return {field.name: getattr(outcome, field.name) for field in dataclasses.fields(outcome)}
    if isinstance(outcome, BaseModel):
        return {name: getattr(outcome, name) for name in type(outcome).model_fields}
    raise TypeError(f"cannot take result fields from {type(outcome).__name__}")


# -- the text pieces --------------------------------------------------------------------

WALK_TRUNCATED: Final = "(the walk stopped at its size limit: give a narrower path)"


def walk_stopped(not_listed: list[str]) -> str:
    """The line saying where a walk stopped at its size limit and how to search the rest."""
    if not not_listed:
        return WALK_TRUNCATED
    shown = ", ".join(escape(path or ".") for path in not_listed[:5])
    more = f" and {len(not_listed) - 5:,} more" if len(not_listed) > 5 else ""
    return (
        "(the walk stopped at its size limit; these directories were not searched, or "
        f"only in part: {shown}{more}; search them with `path`)"
    )


def left_out(hidden: int, ignored: int) -> str | None:
    """The line saying which entries a walk left out and how to include them, if any."""
    parts = []
    if hidden:
        parts.append(
            f"{count(hidden, 'hidden entry', 'hidden entries')} (hidden=true includes them)"
        )
    if ignored:
        parts.append(
            f"{count(ignored, 'ignored entry', 'ignored entries')} "
            "(include_ignored=true includes them)"
        )
    return f"(left out: {'; '.join(parts)})" if parts else None


def unnamed(number: int) -> str:
    """The line saying that *number* entries of the store could not be listed."""
    return (
        f"({count(number, 'entry', 'entries')} not listed: no path can name "
        f"{'it' if number == 1 else 'them'} (a key with an empty, '.' or '..' segment))"
    )


_BIDI: Final = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ESCAPES: Final = {
    **{code: f"\\x{code:02x}" for code in (*range(0x09), *range(0x0A, 0x20), 0x7F)},
    **{code: f"\\u{code:04x}" for code in range(0x80, 0xA0)},  # \xNN is a raw byte
    **{code: f"\\u{code:04x}" for code in _BIDI},
}
SHOWN_CHARS: Final = 300
"""How much of a long line a listing shows."""


def escape(text: str) -> str:
    """Show control characters and bidirectional overrides as escapes (tabs stay)."""
    return text.translate(_ESCAPES)


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``1 line``, ``2 lines``; ``1 entry``, ``2 entries`` with *plural*."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def around(text: str, start: int, width: int) -> tuple[str, int]:
    """The part of a line, at most *width* long, that shows position *start*.

    Returns the part, with some of what leads up to *start*, and where it begins. *text* is the
    line, or a :class:`~ctxfs.core.CutLine` of it holding the part.
    """
    given, length = (text.start, text.length) if isinstance(text, CutLine) else (0, len(text))
    if length <= width:
        return text, 0
    begin = max(0, min(start - width // 4, length - width))
    offset = max(0, begin - given)  # a cut line holds at least width around start
    return text[offset : offset + width], begin


def span(first: int, last: int) -> str:
    """``line 3`` or ``lines 3-5``."""
    return f"line {first}" if first == last else f"lines {first}-{last}"


STRIPPED_NOTE: Final = "(The line numbers pasted into old_string were ignored.)"


def edited(data: EditData, *, changes: str, note: str = "") -> str:
    """What an edit changed (or, in a dry run, would change): *changes*, the lines, the diff."""
    what = f"{data.target}: {changes}, {span(data.first_line, data.last_line)}"
    head = f"Edited {what}." if data.written else f"Dry run, nothing written: would edit {what}."
    return with_diff(f"{head} {note}" if note else head, data.diff)


def undone(data: UndoData, what: str) -> str:
    """What an undo of *what* (``your last change``) put back, or in a dry run would, by file."""
    moved = sum(file.moved_back_from is not None for file in data.files)
    files = len(data.files) - moved
    done = [f"put back {count(files, 'file')}"] if files or not (moved or data.directories) else []
    if moved:
        verb = "moved back" if data.written else "move back"
        done.append(f"{verb} {count(moved, 'directory', 'directories')}")
    if data.directories:
        removed = "removed" if data.written else "remove"
        done.append(f"{removed} {count(len(data.directories), 'directory', 'directories')}")
    if data.written:
        lines = [f"Undid {what}: {' and '.join(done)}."]
    else:
        lines = [f"Dry run, nothing written: undoing {what} would {' and '.join(done)}."]
    lines += [f"  {path}/: removed (you had made the directory)" for path in data.directories]
    kept = data.kept_directories
    lines += [
        f"  {path}/: kept (you had made it; it is not empty, or could not be removed)"
        for path in kept
    ]
    for file in data.files:
        if file.moved_back_from is not None:
            lines.append(f"  {file.path}/: moved back from {file.moved_back_from}/, with its files")
        elif file.now is None:
            lines.append(f"  {file.path}: removed (you had created it or moved it there)")
        elif file.was is None:
            lines.append(f"  {file.path}: restored (you had deleted or moved it)")
        else:
            lines.append(f"  {file.path}: back to version {file.now}")
    return "\n".join(lines)


def with_diff(head: str, diff: str | None) -> str:
    """*head*, then the diff of the change when there is one."""
    return head if diff is None else f"{head}\n{diff}"


def size(number: int) -> str:
    """A size in bytes, as people read it (``1 B``, ``2.5 KB``)."""
    if number < 1024:
        return f"{number} B"
    value = number / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def page_footer(noun: str, first: int, shown: int, of: str, next_offset: int | None) -> str:
    """The footer of one page of a longer list: which items, of how many, how to go on."""
    if not shown:  # (an offset past the end)
        return f"(no {noun} from offset {first}: there are {of})"
    more = f"; continue with offset={next_offset}" if next_offset else ""
    return f"({noun} {first}-{first + shown - 1} of {of}{more})"


def error_text(error: FsError) -> str:
    """The code, the message, the next action, and whatever helps take it."""
    parts = [f"Error [{error.code.value}]: {error.message}"]
    diff = error.details.get("diff")
    if diff:  # a stale change: what changed since the owner's version
        parts.append(diff)
    if error.hint:
        parts.append(f"Next: {error.hint}")
    candidates = error.details.get("candidates")
    if candidates:
        parts.append("Closest text in the file:")
        parts += [
            format_line_number(candidate["line"]) + line
            for candidate in candidates
            for line in candidate["text"].split("\n")[:1]
        ]
    holder = error.details.get("holder")
    if holder:
        until = error.details.get("until")
        parts.append(f"Checked out by {holder}" + (f" until {until}." if until else "."))
    return "\n".join(parts)


# -- a result in each provider's shape ---------------------------------------------------


def anthropic_tool_result(result: ToolResult, tool_use_id: str) -> dict[str, Any]:
    """The ``tool_result`` block answering Anthropic's ``tool_use`` block *tool_use_id*."""
    images = [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": part.media_type, "data": part.base64_data},
        }
        for part in result.media
    ]
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [{"type": "text", "text": result.text}, *images],
        "is_error": result.is_error,
    }


def openai_function_call_output(result: ToolResult, call_id: str) -> dict[str, Any]:
    """The Responses API's ``function_call_output`` item answering function call *call_id*.

    The output is the text alone when there is no image, as the API takes it most often.
    """
    output: str | list[dict[str, Any]] = result.text
    if result.media:
        output = [
            {"type": "input_text", "text": result.text},
            *({"type": "input_image", "image_url": part.data_url} for part in result.media),
        ]
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def openai_chat_messages(answers: Iterable[tuple[str, ToolResult]]) -> list[dict[str, Any]]:
    """The Chat Completions messages answering one assistant turn's tool calls.

    *answers* pairs each ``tool_call_id`` with its result. A ``tool`` message can carry only text,
    and the API wants the tool messages of a turn right after the assistant's message: so one
    ``tool`` message per call comes first, then, if any result holds images, one ``user`` message
    with them, each after a line naming the call it belongs to.
    """
    messages: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for call_id, result in answers:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result.text})
        if result.media:
            images.append({"type": "text", "text": f"The image(s) of tool call {call_id}:"})
            images += (
                {"type": "image_url", "image_url": {"url": part.data_url}} for part in result.media
            )
    if images:
        messages.append({"role": "user", "content": images})
    return messages
