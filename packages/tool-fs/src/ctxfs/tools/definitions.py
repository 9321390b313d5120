"""What the model is offered: names, descriptions written from the live limits, schemas.

Descriptions never promise what the code does not do: every number in them is
read from the same :class:`~ctxfs.core.TextOptions` and
:class:`ToolsetOptions` the tools run with.
"""

from __future__ import annotations

import copy
import enum
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel

from ctxfs.core.text import TextOptions
from ctxfs.tools.arguments import ARGUMENTS, CallToolArgs, SearchToolsArgs, ToolArgs
from ctxfs.tools.results import (
    EditData,
    GlobData,
    GrepData,
    ListData,
    ReadData,
    ResultData,
    SearchToolsData,
    WriteData,
)

__all__ = [
    "DEFAULT_IGNORE",
    "Exposure",
    "ToolDefinition",
    "ToolsetOptions",
    "describe",
    "openai_strict",
]

DEFAULT_IGNORE: Final = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".idea",
    }
)  # fmt: skip
"""Directories glob and grep do not descend into (list_dir still shows them)."""


class Exposure(enum.StrEnum):
    """How a tool is offered in a step."""

    DIRECT = "direct"
    """Offered as a tool of its own."""
    DEFERRED = "deferred"
    """Found through ``search_tools`` and run through ``call_tool``."""
    HIDDEN = "hidden"
    """Neither offered nor callable."""


@dataclass(frozen=True, kw_only=True)
class ToolsetOptions:
    """Limits and exposure of the tools of one :class:`~ctxfs.tools.FsToolset`."""

    exposure: Mapping[str, Exposure] = field(default_factory=dict)
    """Exposure per tool name; tools not named are direct."""
    ignore: frozenset[str] = DEFAULT_IGNORE
    list_limit: int = 500
    glob_limit: int = 200
    grep_limit: int = 100
    max_walk_entries: int = 50_000
    """Entries a glob or grep walk visits before it stops and says so."""
    grep_line_seconds: float = 1.0
    """Time a grep pattern that can backtrack may spend on one line (lines are cut at
    ``TextOptions.max_line_chars``) before the call fails ``invalid_argument``."""
    editor_root: str | None = None
    """An absolute path the model may prefix paths with in Anthropic text-editor calls
    (as ``/repo/src/app.py`` for ``src/app.py``); None accepts relative paths only."""


@dataclass(frozen=True, kw_only=True)
class ToolDefinition:
    """One tool as offered to a model, before any provider's wrapping."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    read_only: bool
    destructive: bool
    idempotent: bool
    owner: str = "ctxfs.tools"


_OUTPUTS: Final[dict[str, type[ResultData]]] = {
    "read": ReadData,
    "write": WriteData,
    "edit": EditData,
    "list_dir": ListData,
    "glob": GlobData,
    "grep": GrepData,
    "search_tools": SearchToolsData,
    "call_tool": ResultData,
}
_HINTS: Final = {  # read_only, destructive, idempotent
    "read": (True, False, True),
    "list_dir": (True, False, True),
    "glob": (True, False, True),
    "grep": (True, False, True),
    "write": (False, True, True),
    "edit": (False, True, False),
    "search_tools": (True, False, True),
    "call_tool": (False, True, False),
}


def describe(name: str, text: TextOptions, options: ToolsetOptions) -> ToolDefinition:
    """The definition of tool *name* under the given limits."""
    ignored = ", ".join(sorted(options.ignore))
    descriptions = {
        "read": (
            f"Read a text file. Returns up to {text.default_limit:,} lines from `offset` "
            f"(1-based, default 1), each prefixed with its line number and one space; at most "
            f"{text.max_output_chars:,} characters per call; lines longer than "
            f"{text.max_line_chars:,} characters are cut where marked. A last line in "
            "parentheses says the file ended or gives the exact `offset` to continue with. "
            "Binary files are refused; the file's encoding is detected."
        ),
        "write": (
            "Create a file, or replace a whole file with `content`. Replacing an existing "
            "file needs a read of all of it (one read that reached its end, nothing cut) "
            "since it last changed; creating one needs no read. Missing directories are "
            "created. A new file is UTF-8 with \\n line endings; a replaced file keeps its "
            "encoding, byte-order mark and line endings. Prefer edit for small changes."
        ),
        "edit": (
            "Replace exact text in a file you have read (any part of it) since it last "
            "changed. `old_string` must match the file exactly, whitespace included, without "
            "the line numbers read shows; \\n matches any line ending. It must occur exactly "
            "once unless `replace_all` is true. Only the matched text changes; the new text "
            "takes the line endings of the text it replaces."
        ),
        "list_dir": (
            f"List a directory: names sorted, directories ending with /, files with their "
            f"size; at most {options.list_limit:,} entries per call, with the `offset` to "
            "continue."
        ),
        "glob": (
            "Find files by path pattern: `*` and `?` match within one directory, `**` "
            "across any number; a pattern without / matches file names at any depth "
            f"(`*.py`). Paths come sorted, at most {options.glob_limit:,} per call, with "
            f"exact totals and the `offset` to continue. Skips these directories: {ignored}."
        ),
        "grep": (
            "Search text files for a regular expression (Python syntax), line by line. "
            f"Returns `path:line: text`, sorted by path and line, at most "
            f"{options.grep_limit:,} matches per call, with exact totals and the `offset` "
            "to continue. `glob` filters files as in the glob tool; binary files are "
            f"skipped; so are these directories: {ignored}. Searching does not count as "
            "reading a file before editing it."
        ),
        "search_tools": (
            "Find tools that are available but not listed: matches your words against "
            "their names, descriptions and parameters, and returns exact names to pass "
            "to call_tool with a summary of their arguments."
        ),
        "call_tool": ("Run a tool found with search_tools, by its exact name, with its arguments."),
    }
    arguments: type[ToolArgs] = ARGUMENTS.get(name) or (
        SearchToolsArgs if name == "search_tools" else CallToolArgs
    )
    read_only, destructive, idempotent = _HINTS[name]
    return ToolDefinition(
        name=name,
        description=descriptions[name],
        input_schema=_input_schema(arguments, text, options, name),
        output_schema=_output_schema(_OUTPUTS[name]),
        read_only=read_only,
        destructive=destructive,
        idempotent=idempotent,
    )


def _input_schema(
    model: type[ToolArgs], text: TextOptions, options: ToolsetOptions, name: str
) -> dict[str, Any]:
    schema = _json_schema(model)
    limits = {
        "read": text.default_limit,
        "list_dir": options.list_limit,
        "glob": options.glob_limit,
        "grep": options.grep_limit,
    }
    if name in limits and "limit" in schema["properties"]:
        schema["properties"]["limit"]["description"] += f" Default and most: {limits[name]:,}."
    return schema


def _json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A fresh copy of *model*'s JSON schema without titles (pydantic builds it only once)."""
    return copy.deepcopy(_built_schema(model))


@functools.cache
def _built_schema(model: type[BaseModel]) -> dict[str, Any]:
    return _clean(model.model_json_schema())


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles; keep everything a validator or a model uses."""
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if isinstance(value, dict):
            cleaned[key] = (
                {name: _clean(sub) for name, sub in value.items()}
                if key in ("properties", "$defs")
                else _clean(value)
            )
        elif isinstance(value, list):
            cleaned[key] = [_clean(item) if isinstance(item, dict) else item for item in value]
        else:
            cleaned[key] = value
    return cleaned


def _output_schema(model: type[ResultData]) -> dict[str, Any]:
    """The model's schema made self-contained: references inlined, ``X | None`` as a type list.

    Plain schemas read the same in every client, and they are the cheapest to
    check: an MCP client validates every structured result against its tool's.
    """
    schema = _json_schema(model)
    return _inline(schema, schema.pop("$defs", {}))


def _inline(schema: dict[str, Any], defs: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    if "$ref" in schema:
        rest = {key: value for key, value in schema.items() if key != "$ref"}
        return _inline(defs[schema["$ref"].rsplit("/", 1)[-1]], defs) | rest
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        kept = _inline(next(o for o in options if o != {"type": "null"}), defs)
        if isinstance(kept.get("type"), str) and "const" not in kept:
            rest = {key: value for key, value in schema.items() if key != "anyOf"}
            nullable = kept | rest | {"type": [kept["type"], "null"]}
            if "enum" in kept:
                nullable["enum"] = [*kept["enum"], None]
            return nullable
    inlined: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            inlined[key] = {name: _inline(sub, defs) for name, sub in value.items()}
        elif isinstance(value, dict):
            inlined[key] = _inline(value, defs)
        elif isinstance(value, list):
            inlined[key] = [_inline(i, defs) if isinstance(i, dict) else i for i in value]
        else:
            inlined[key] = value
    return inlined


def openai_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema, valid in OpenAI strict mode.

    Every property becomes required (optional ones accept null instead),
    defaults go, and objects refuse additional properties.
    """
    strict = copy.deepcopy(schema)
    properties: dict[str, Any] = strict.get("properties", {})
    required = set(strict.get("required", []))
    for name, prop in properties.items():
        prop.pop("default", None)
        if name not in required and not _nullable(prop):
            description = prop.pop("description", None)
            properties[name] = {"anyOf": [prop, {"type": "null"}]}
            if description:
                properties[name]["description"] = description
    strict["required"] = list(properties)
    strict["additionalProperties"] = False
    return strict


def _nullable(prop: dict[str, Any]) -> bool:
    return any(option.get("type") == "null" for option in prop.get("anyOf", []))
