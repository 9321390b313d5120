"""One result, two projections: text for the model and structured data for programs.

:class:`ToolResult` is what :meth:`FsToolset.execute` returns. Its ``data`` is
one of the models below, dumped to plain JSON types; their schemas are the
tools' output schemas.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ctxfs.core.errors import ErrorCode, FsError

__all__ = [
    "EditData",
    "EntryData",
    "ErrorInfo",
    "GlobData",
    "GrepData",
    "GrepMatch",
    "InsertData",
    "ListData",
    "ReadData",
    "ResultData",
    "SearchToolsData",
    "ToolResult",
    "WriteData",
]


class ToolResult(BaseModel):
    """The outcome of one tool call."""

    model_config = ConfigDict(frozen=True)

    is_error: bool
    text: str
    """What the model reads."""
    data: dict[str, Any]
    """The same result as structured data, for programs (see the ``*Data`` models)."""
    error_code: ErrorCode | None = None
    """The stable code of a failure, None on success."""


class ErrorInfo(BaseModel):
    """A failure, as programs see it."""

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

    status: Literal["ok", "error"]
    tool: str
    target: str | None = Field(default=None, description="The path the call acted on.")
    error: ErrorInfo | None = None


class ReadData(ResultData):
    """The data of a ``read`` result."""

    content: str = Field(description="The window of lines, without line numbers.")
    version: str
    offset: int
    returned_lines: int
    total_lines: int
    next_offset: int | None = Field(
        description="The offset that continues the read; None at the end."
    )
    partial: bool
    truncated_lines: list[int]
    output_capped: bool
    encoding: str


class WriteData(ResultData):
    """The data of a ``write`` result."""

    created: bool
    version: str
    previous_version: str | None
    size: int
    first_line: int
    last_line: int
    diff: str | None


class EditData(ResultData):
    """The data of an ``edit`` result."""

    replacements: int
    replace_all: bool
    version: str
    previous_version: str
    first_line: int
    last_line: int
    stripped_line_numbers: bool
    diff: str | None


class InsertData(ResultData):
    """The data of an ``insert`` (Anthropic text editor) result."""

    version: str
    previous_version: str
    first_line: int
    last_line: int
    diff: str | None


class EntryData(BaseModel):
    """One directory entry."""

    name: str
    path: str
    kind: str
    size: int | None


class ListData(ResultData):
    """The data of a ``list_dir`` result."""

    entries: list[EntryData]
    total: int
    offset: int
    next_offset: int | None
    truncated: bool


class GlobData(ResultData):
    """The data of a ``glob`` result."""

    pattern: str
    paths: list[str]
    total: int
    offset: int
    next_offset: int | None
    truncated: bool
    walk_truncated: bool = Field(description="Whether the directory walk hit its size limit.")


class GrepMatch(BaseModel):
    """One line that matched."""

    path: str
    line: int
    text: str


class GrepData(ResultData):
    """The data of a ``grep`` result."""

    pattern: str
    matches: list[GrepMatch]
    total: int
    files_searched: int
    files_skipped: int = Field(description="Files not searched: binary, undecodable or unreadable.")
    offset: int
    next_offset: int | None
    truncated: bool
    walk_truncated: bool


class SearchToolsData(ResultData):
    """The data of a ``search_tools`` result."""

    tools: list[dict[str, Any]]
