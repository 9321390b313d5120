"""One result, two projections: text for the model and structured data for programs.

:class:`ToolResult` is what :meth:`FsToolset.execute` returns. Its ``data`` is
a :class:`ResultData` model (each tool's own subclass, declared in the tool's
module), typed for Python callers; :attr:`ToolResult.structured` is the same as
plain JSON types, what MCP's structured content and ``ctxfs call --json`` carry.
The data models' JSON schemas are the tools' output schemas. A result may also
carry :attr:`ToolResult.media` (an image ``read`` returns) for models that see;
the structured data holds only what describes it, never its bytes.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, Literal, Self, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    field_serializer,
    field_validator,
)

from ctxfs.core import ErrorCode, FsError
from ctxfs.tools.names import ESCAPED_NAMES, escaped, escaped_data

__all__ = ["EditData", "ErrorInfo", "MediaPart", "RestoredData", "ResultData", "ToolResult"]

DataT = TypeVar("DataT", bound="ResultData")


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

        Fields are taken by name (the outcome's ``path`` is the ``target``), never
        copied by hand; each tool's data model adds its own fields.
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
    shapes of a result carry it (:mod:`ctxfs.tools.replies`)."""

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
        """:attr:`data` as plain JSON types (what clients check against the output schema).

        A field that holds nothing is left out: None (as the MCP SDK leaves out
        its own; such fields are optional in the output schema, never null), and
        a field of the result itself at an empty default (``false``, ``[]``,
        ``{}``: the schema states it; a default that says something, such as
        ``written: true``, is always there). An MCP client checks every field a
        result carries, at a cost per field. Names holding bytes that are not
        UTF-8 are escaped as in :attr:`text`; ``raw_names`` then maps each
        escaped name to its bytes in base64.
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
