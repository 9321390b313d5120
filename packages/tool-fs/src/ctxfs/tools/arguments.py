"""The arguments of each tool, as the model sends them: snake_case, nothing extra.

These pydantic models are the validators; their JSON schemas are what providers
are offered (with descriptions filled in from the live configuration by
:mod:`ctxfs.tools.definitions`).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

__all__ = [
    "ARGUMENTS",
    "CallToolArgs",
    "EditArgs",
    "GlobArgs",
    "GrepArgs",
    "ListDirArgs",
    "ReadArgs",
    "SearchToolsArgs",
    "ToolArgs",
    "WriteArgs",
]


class ToolArgs(BaseModel):
    """Base of every argument model: unknown fields are errors, values are immutable.

    An optional argument sent as null takes its default: OpenAI's strict mode
    makes models send every argument, null for the ones they leave out.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {
            key: value
            for key, value in data.items()
            if value is not None
            or key not in cls.model_fields
            or cls.model_fields[key].is_required()
        }


class ReadArgs(ToolArgs):
    """Arguments of ``read``."""

    file_path: str = Field(description="Path of the file, relative to the workspace root.")
    offset: PositiveInt | None = Field(
        default=None, description="1-based number of the first line to return (default 1)."
    )
    limit: PositiveInt | None = Field(default=None, description="How many lines to return at most.")


class WriteArgs(ToolArgs):
    """Arguments of ``write``."""

    file_path: str = Field(description="Path of the file, relative to the workspace root.")
    content: str = Field(description="The whole new content of the file.")


class EditArgs(ToolArgs):
    """Arguments of ``edit``."""

    file_path: str = Field(description="Path of the file, relative to the workspace root.")
    old_string: str = Field(
        description="The exact text to replace, copied from the file (never empty)."
    )
    new_string: str = Field(description="The text to put in its place (empty deletes it).")
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence; otherwise old_string must occur exactly once.",
    )


class ListDirArgs(ToolArgs):
    """Arguments of ``list_dir``."""

    path: str = Field(default="", description="Directory to list (default: the workspace root).")
    offset: PositiveInt | None = Field(
        default=None, description="1-based number of the first entry to return (default 1)."
    )
    limit: PositiveInt | None = Field(default=None, description="How many entries at most.")


class GlobArgs(ToolArgs):
    """Arguments of ``glob``."""

    pattern: str = Field(
        description="Glob pattern matched against paths relative to `path`: `*` and `?` stay "
        "within one directory, `**` spans any number of them, e.g. `src/**/*.py`."
    )
    path: str = Field(default="", description="Directory to search (default: the workspace root).")
    offset: PositiveInt | None = Field(
        default=None, description="1-based number of the first path to return (default 1)."
    )
    limit: PositiveInt | None = Field(default=None, description="How many paths at most.")


class GrepArgs(ToolArgs):
    """Arguments of ``grep``."""

    pattern: str = Field(description="Regular expression (Python syntax) to search for.")
    path: str = Field(
        default="", description="File or directory to search (default: the workspace root)."
    )
    glob: str | None = Field(
        default=None, description="Only search files whose path matches this glob, e.g. `*.py`."
    )
    ignore_case: bool = Field(default=False, description="Match letters of either case.")
    offset: PositiveInt | None = Field(
        default=None, description="1-based number of the first match to return (default 1)."
    )
    limit: PositiveInt | None = Field(default=None, description="How many matches at most.")


class SearchToolsArgs(ToolArgs):
    """Arguments of ``search_tools``."""

    query: str = Field(description="Words describing the tool you need.")


class CallToolArgs(ToolArgs):
    """Arguments of ``call_tool``."""

    name: str = Field(description="Exact name of a tool returned by search_tools.")
    arguments: dict[str, object] = Field(
        default_factory=dict, description="The tool's arguments, as its schema describes them."
    )


ARGUMENTS: Final[dict[str, type[ToolArgs]]] = {
    "read": ReadArgs,
    "write": WriteArgs,
    "edit": EditArgs,
    "list_dir": ListDirArgs,
    "glob": GlobArgs,
    "grep": GrepArgs,
}
"""The file tools and their argument models, in the order they are offered."""
