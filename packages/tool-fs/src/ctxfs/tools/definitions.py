"""What the model is offered: exposure, the toolset's options, definitions and their schemas.

Each tool writes its own description from the live limits it runs with, so descriptions never
promise what the code does not do.
"""

from __future__ import annotations

import copy
import enum
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pydantic import BaseModel  # annotations only: the CLI reads ToolsetOptions without it

__all__ = [
    "SHIPPED_SCHEMAS",
    "CommonOptions",
    "Exposure",
    "ToolDefinition",
    "built_schema",
    "input_schema",
    "output_schema",
    "schema_key",
]

SHIPPED_SCHEMAS: Final = "schemas.json"
"""The built-in tools' schemas as :func:`built_schema` makes them, shipped with
:mod:`ctxfs.tools` so that a process need not build them (about 45 ms, paid by every
server's first listing); used only under the pydantic version that made them."""


class Exposure(enum.StrEnum):
    """How a tool is offered in a step."""

    DIRECT = "direct"
    """Offered as a tool of its own."""
    DEFERRED = "deferred"
    """Found through ``search_tools`` and run through ``call_tool``."""
    HIDDEN = "hidden"
    """Neither offered nor callable."""

    @classmethod
    def of(cls, value: str, *, what: str) -> Exposure:
        """*value* (an exposure or its name) as an exposure.

        Raises:
            ValueError: *value* is neither; *what* says whose exposure it is.

        """
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(repr(level.value) for level in cls)
            raise ValueError(
                f"the exposure of {what} must be one of {names}, not {value!r}"
            ) from None


@dataclass(frozen=True, kw_only=True)
class CommonOptions:
    """The options of the toolset itself: which tools it offers, how, and under which names.

    :class:`~ctxfs.tools.ToolsetOptions` adds each built-in tool's own options.
    """

    exposure: Mapping[str, Exposure] = field(default_factory=dict)
    """Exposure per tool name; a tool not named has its own default (:attr:`Tool.exposure
    <ctxfs.tools.tool.Tool.exposure>`: direct, but ``undo`` and ``changes`` are deferred)."""
    read_only: bool = False
    """Offer no tool that writes (every tool declares whether it does)."""
    tools: frozenset[str] | None = None
    """The tools offered, by name (``serve --tools``); None offers every one. Any other is
    hidden, as by :attr:`exposure`."""
    tool_prefix: str = ""
    """Put before the name of every tool offered, where models list and call them
    (``fs_``: ``fs_read``), so that the tools of several servers in one client do not
    collide (32 characters at most, the first a letter or ``_``). A provider's own tools keep
    the names their APIs give them."""
    progress_seconds: float = 1.0
    """A search still running after this long reports its progress (to a caller that
    asked: the CLI, an MCP client with a progress token), and as often after that."""

    def __post_init__(self) -> None:
        for name, level in self.exposure.items():  # (a name counts: "deferred")
            Exposure.of(level, what=repr(name))
        if not 0 <= self.progress_seconds < math.inf:  # (nan compares false)
            raise ValueError(
                f"progress_seconds must be 0 or more seconds, not {self.progress_seconds}"
            )
        if not re.fullmatch(r"([A-Za-z_][A-Za-z0-9_-]{0,31})?", self.tool_prefix):
            raise ValueError(
                "a tool prefix is at most 32 letters, digits, '_' and '-', the first a letter "
                f"or '_', not {self.tool_prefix!r}"
            )  # what every provider takes in a tool's name (64 at most, with the tool's)


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
    strict: bool = True
    """Whether OpenAI's strict mode can describe the arguments."""


def input_schema(model: type[BaseModel], *, page_limit: int | None = None) -> dict[str, Any]:
    """The JSON schema of arguments *model*, as plain as :func:`output_schema`'s.

    References are inlined (no ``$defs``: strict clients refuse them), and an argument that may be
    null is optional instead (null takes its default, see :class:`~ctxfs.tools.ToolArgs`). The
    models' docstrings stay out: the tool's description says what a model needs. *page_limit* is
    stated on the ``limit`` field.
    """
    schema = copy.deepcopy(_built_schema(model))
    schema.pop("description", None)
    defs = {
        name: {key: value for key, value in sub.items() if key != "description"}
        for name, sub in schema.pop("$defs", {}).items()
    }
    schema = _without_nulls(_inline(schema, defs))
    limit = schema.get("properties", {}).get("limit")
    if page_limit is not None and limit is not None:
        own, stated = limit.get("description"), f"Default and most: {page_limit:,}."
        limit["description"] = f"{own} {stated}" if own else stated
    return schema


@functools.cache
def _built_schema(model: type[BaseModel]) -> dict[str, Any]:
    """*model*'s JSON schema without titles, made once (shared: copy it before changing it)."""
    shipped = _shipped_schemas().get(schema_key(model))
    return shipped if shipped is not None else built_schema(model)


def built_schema(model: type[BaseModel]) -> dict[str, Any]:
    """*model*'s JSON schema as pydantic makes it, without titles."""
    return _clean(model.model_json_schema())


def schema_key(model: type[BaseModel]) -> str:
    """What names *model* among the shipped schemas: ``module:qualname``."""
    return f"{model.__module__}:{model.__qualname__}"


@functools.cache
def _shipped_schemas() -> dict[str, dict[str, Any]]:
    """The shipped schemas by :func:`schema_key`; none under another pydantic version."""
    from pydantic import VERSION  # noqa: PLC0415 - loaded once models exist anyway

    try:
        shipped = json.loads(files("ctxfs.tools").joinpath(SHIPPED_SCHEMAS).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(shipped, dict) or shipped.get("pydantic") != VERSION:
        return {}
    schemas = shipped.get("schemas")
    return schemas if isinstance(schemas, dict) else {}


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles; keep everything a validator or a model uses."""
    return {
        key: value
        for key, value in _nested(schema, _clean).items()
        if key != "title" or not isinstance(value, str)
    }


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The schema of *model*'s plain form: self-contained, and with no nulls.

    References are inlined, so the schema reads the same in every client. The plain form
    (:attr:`~ctxfs.tools.ToolResult.structured`) leaves out a field that holds nothing (None, or an
    empty default the schema states), so a field that may be None is optional here and never null.
    Both keep the check cheap: an MCP client validates every structured result against its tool's
    schema, at a cost that grows with the fields a result carries.
    """
    schema = copy.deepcopy(_built_schema(model))
    return _without_nulls(_inline(schema, schema.pop("$defs", {})))


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
    return _nested(schema, lambda sub: _inline(sub, defs))


def _without_nulls(schema: dict[str, Any]) -> dict[str, Any]:
    """*schema* for values whose None fields are left out: each such field is optional."""
    cleaned = _nested(schema, _without_nulls, prop=lambda prop: _without_nulls(_never_null(prop)))
    nullable = [name for name, prop in schema.get("properties", {}).items() if _nullable_type(prop)]
    required = [name for name in schema.get("required", []) if name not in nullable]
    if required:
        cleaned["required"] = required
    else:
        cleaned.pop("required", None)
    return cleaned


def _nested(
    schema: dict[str, Any],
    visit: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    prop: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """*schema* with *visit* (*prop* for a property) applied to each schema nested in it."""

    def each(key: str, value: Any) -> Any:
        if isinstance(value, dict):
            if key == "properties":
                return {name: (prop or visit)(sub) for name, sub in value.items()}
            return visit(value)
        if isinstance(value, list):
            return [visit(item) if isinstance(item, dict) else item for item in value]
        return value

    return {key: each(key, value) for key, value in schema.items()}


def _nullable_type(prop: dict[str, Any]) -> bool:
    kind = prop.get("type")
    return (isinstance(kind, list) and "null" in kind) or {"type": "null"} in prop.get("anyOf", [])


def _never_null(prop: dict[str, Any]) -> dict[str, Any]:
    """A property that may be null, as the property left out instead."""
    if not _nullable_type(prop):
        return prop
    prop = {key: value for key, value in prop.items() if key != "default"}
    kind = prop.get("type")
    if isinstance(kind, list):
        rest = [item for item in kind if item != "null"]
        prop["type"] = rest[0] if len(rest) == 1 else rest
        if "enum" in prop:
            prop["enum"] = [item for item in prop["enum"] if item is not None]
    else:
        options = [option for option in prop.pop("anyOf") if option != {"type": "null"}]
        prop = options[0] | prop if len(options) == 1 else {**prop, "anyOf": options}
    return prop
