"""The offered tools in each provider's shape, its own tools in place of those they stand for.

``generic``: ``{"name", "description", "parameters"}`` with plain JSON schemas. ``openai``: function
tools, strict where a tool's arguments allow it, in the Chat Completions shape, or the Responses
shape with ``openai_api="responses"``, where the Responses API's built-in ``apply_patch`` stands for
the ``apply_patch`` function. ``anthropic``: custom tools, with read, write, edit and list_dir
advertised as Anthropic's text editor while all four are offered directly.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ctxfs.tools.definitions import ToolDefinition
from ctxfs.tools.offers import Offer
from ctxfs.tools.tool import Limits, Offering, Tool

__all__ = [
    "OpenAiApi",
    "Provider",
    "ProviderTools",
    "nullable_optionals",
    "openai_strict",
    "shaped",
]

Provider = Literal["generic", "openai", "anthropic"]
OpenAiApi = Literal["chat", "responses"]


@dataclass(frozen=True)
class ProviderTools:
    """The providers' own tools, each offered in place of tools that are all offered directly."""

    tools: tuple[Tool[Any, Any], ...]

    @classmethod
    def among(cls, tools: Iterable[Tool[Any, Any]]) -> ProviderTools:
        """The providers' own tools of *tools*."""
        return cls(tuple(tool for tool in tools if tool.offering is Offering.PROVIDER))

    def offered(self, offer: Offer, provider: str) -> list[Tool[Any, Any]]:
        """*provider*'s own tools that *offer* makes room for."""
        direct = set(offer.direct)
        return [
            tool
            for tool in self.tools
            if tool.provider == provider and set(tool.stands_for) <= direct
        ]


def shaped(
    offered: Sequence[ToolDefinition],
    *,
    provider: Provider,
    openai_api: OpenAiApi = "chat",
    aliases: Sequence[Tool[Any, Any]] = (),
    limits: Limits,
    prefix: str = "",
) -> list[dict[str, Any]]:
    """The JSON of the *offered* definitions for *provider*, *aliases* in place of theirs.

    Raises:
        ValueError: *provider* is none of these.

    """
    if provider == "generic":
        return [
            {"name": t.name, "description": t.description, "parameters": t.input_schema}
            for t in offered
        ]
    if provider not in ("anthropic", "openai"):
        raise ValueError(f"unknown provider {provider!r}")
    if provider == "openai" and openai_api == "chat":
        aliases = ()  # Chat Completions has no built-in tools
    covered = {prefix + name for alias in aliases for name in alias.stands_for}
    own = [alias.provider_definition(limits) for alias in aliases]
    kept = [tool for tool in offered if tool.name not in covered]
    if provider == "anthropic":
        return own + [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in kept
        ]
    return own + [_function(tool, responses=openai_api == "responses") for tool in kept]


def _function(tool: ToolDefinition, *, responses: bool) -> dict[str, Any]:
    function = {
        "name": tool.name,
        "description": tool.description,
        "parameters": openai_strict(tool.input_schema) if tool.strict else tool.input_schema,
        "strict": tool.strict,
    }
    return (
        {"type": "function", **function}
        if responses
        else {"type": "function", "function": function}
    )


def openai_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema, valid in OpenAI strict mode.

    In every object, every property becomes required (optional ones accept null instead), defaults
    go, and additional properties are refused.
    """
    return _strict(copy.deepcopy(schema), closed=True)


def nullable_optionals(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema, each optional property taking null too, without defaults.

    What a harness that makes every property required (LangChain's ``strict=True``) turns into a
    valid strict schema, whose nulls a call takes as left out.
    """
    return _strict(copy.deepcopy(schema), closed=False)


def _strict(schema: dict[str, Any], *, closed: bool) -> dict[str, Any]:
    for option in schema.get("anyOf", []):
        _strict(option, closed=closed)
    if isinstance(schema.get("items"), dict):
        _strict(schema["items"], closed=closed)
    properties: dict[str, Any] | None = schema.get("properties")
    if properties is None:
        return schema
    required = set(schema.get("required", []))
    for name, prop in properties.items():
        prop.pop("default", None)
        _strict(prop, closed=closed)
        if name not in required and not _nullable(prop):
            description = prop.pop("description", None)
            properties[name] = {"anyOf": [prop, {"type": "null"}]}
            if description:
                properties[name]["description"] = description
    if closed:
        schema["required"] = list(properties)
        schema["additionalProperties"] = False
    return schema


def _nullable(prop: dict[str, Any]) -> bool:
    return any(option.get("type") == "null" for option in prop.get("anyOf", []))
