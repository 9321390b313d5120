"""The schema tests of the filesystem-tool-schemas RFC, and the provider shapes."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from ctxfs.core import Context, ErrorCode
from ctxfs.core.text import TextOptions
from ctxfs.tools import Exposure, FsToolset, Limits, ToolsetOptions
from tests.tools.conftest import DEFAULT_TOOLS, FILE_TOOLS, Seed

LIMITS = Limits(text=TextOptions(), options=ToolsetOptions())

pytestmark = pytest.mark.anyio


async def generic(tools: FsToolset, ctx: Context) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in await tools.definitions(ctx)}


async def test_the_toolset_offers_every_file_tool(tools: FsToolset, ctx: Context) -> None:
    names = list(await generic(tools, ctx))
    assert names == DEFAULT_TOOLS


async def test_read_schema(tools: FsToolset, ctx: Context) -> None:
    schema = (await generic(tools, ctx))["read"]["parameters"]
    assert schema["required"] == ["file_path"]
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "file_path", "offset", "limit", "pages", "encoding", "fresh"
    }  # fmt: skip
    assert schema["properties"]["fresh"] == {"type": "boolean", "default": False}
    for name in ("offset", "limit"):  # optional, and never null (null takes the default)
        assert schema["properties"][name]["type"] == "integer"
        assert schema["properties"][name]["minimum"] == 1


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"file_path": "a", "offset": 0}, "offset"), ({"file_path": "a", "limit": -1}, "limit"),
     ({"file_path": "a", "offset": "two"}, "offset"), ({}, "file_path"),
     ({"file_path": "a", "pages": "0"}, "pages"), ({"file_path": "a", "pages": "5-3"}, "pages"),
     ({"file_path": "a", "pages": "two"}, "pages")],
)  # fmt: skip
async def test_read_rejects_non_positive_numbers_and_names_the_field(
    tools: FsToolset, ctx: Context, arguments: dict[str, Any], field: str
) -> None:
    result = await tools.execute(ctx, "read", arguments)
    assert result.error_code is ErrorCode.INVALID_ARGUMENT
    assert result.structured["error"]["details"]["field"] == field
    assert f"{field}:" in result.text


async def test_write_schema(tools: FsToolset, ctx: Context) -> None:
    schema = (await generic(tools, ctx))["write"]["parameters"]
    assert schema["required"] == ["file_path", "content"]
    assert set(schema["properties"]) == {"file_path", "content"}


async def test_edit_schema(tools: FsToolset, ctx: Context) -> None:
    schema = (await generic(tools, ctx))["edit"]["parameters"]
    assert schema["required"] == ["file_path", "old_string", "new_string"]
    assert schema["properties"]["replace_all"] == {"default": False, "type": "boolean"}


async def test_edit_rejects_an_empty_old_string_clearly(tools: FsToolset, ctx: Context) -> None:
    await tools.execute(ctx, "write", {"file_path": "a.txt", "content": "x\n"})
    result = await tools.execute(
        ctx, "edit", {"file_path": "a.txt", "old_string": "", "new_string": "y"}
    )
    assert result.error_code is ErrorCode.EMPTY_OLD_STRING
    assert "Error [empty_old_string]: old_string is empty" in result.text
    assert "use write" in result.text


async def test_names_are_snake_case_and_extra_fields_refused(
    tools: FsToolset, ctx: Context
) -> None:
    for tool in (await generic(tools, ctx)).values():
        for name in tool["parameters"]["properties"]:
            assert name == name.lower()
            assert "-" not in name
    result = await tools.execute(ctx, "read", {"filePath": "a.txt"})
    assert result.error_code is ErrorCode.INVALID_ARGUMENT
    assert "filePath" in result.text


async def test_descriptions_state_the_read_rule_and_the_live_limits(ctx: Context) -> None:
    tools = FsToolset(ToolsetOptions(grep_limit=7))
    ctx.opened_fs.text_options = TextOptions(default_limit=123)
    offered = await generic(tools, ctx)
    changing = [tool.name for tool in tools.registered if tool.writes and tool.name in offered]
    for name in set(changing) - {"create_directory"}:  # what it changes must have been read
        assert re.search(r"\bread\b", offered[name]["description"]), name
    assert "lines, up to 123 " in offered["read"]["description"]
    assert "description" not in offered["read"]["parameters"]["properties"]["limit"]  # said
    limit = offered["grep"]["parameters"]["properties"]["limit"]
    assert limit["description"] == "Default and most: 7."


def _strict_problems(schema: dict[str, Any], where: str = "") -> list[str]:
    problems = []
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties must be false")
        if sorted(schema.get("required", [])) != sorted(schema.get("properties", {})):
            problems.append(f"{where}: every property must be required")
    if "default" in schema:
        problems.append(f"{where}: defaults are not allowed")
    for name, sub in schema.get("properties", {}).items():
        problems += _strict_problems(sub, f"{where}.{name}")
    for option in schema.get("anyOf", []):
        problems += _strict_problems(option, where)
    if "items" in schema:
        problems += _strict_problems(schema["items"], f"{where}[]")
    return problems


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_openai_tools_are_valid_in_strict_mode(
    tools: FsToolset, ctx: Context, api: str
) -> None:
    offered = await tools.definitions(ctx, provider="openai", openai_api=api)  # type: ignore[arg-type]
    if api == "responses":  # the built-in apply_patch stands for the function
        assert offered[0] == {"type": "apply_patch"}
        offered = offered[1:]
    assert all(
        (t["function"] if api == "chat" else t)["name"] != "apply_patch" for t in offered
    ) is (api == "responses")
    for tool in offered:
        function = tool["function"] if api == "chat" else tool
        assert tool["type"] == "function"
        assert function["strict"] is True
        assert _strict_problems(function["parameters"]) == [], function["name"]
    read = next(t for t in offered if (t["function"] if api == "chat" else t)["name"] == "read")
    offset = (read["function"] if api == "chat" else read)["parameters"]["properties"]["offset"]
    assert {"type": "null"} in offset["anyOf"]


EVERY_TOOL = [
    ToolsetOptions(),
    ToolsetOptions(exposure={"grep": Exposure.DEFERRED}),  # with search_tools and call_tool
]


@pytest.mark.parametrize("options", EVERY_TOOL)
@pytest.mark.parametrize(
    ("provider", "api"),
    [("generic", "chat"), ("anthropic", "chat"), ("openai", "chat"), ("openai", "responses")],
)
async def test_no_schema_refers_to_definitions(
    ctx: Context, options: ToolsetOptions, provider: str, api: str
) -> None:
    offered = await FsToolset(options).definitions(ctx, provider=provider, openai_api=api)  # type: ignore[arg-type]
    assert len(offered) >= len(FILE_TOOLS) - 3  # (the text editor stands for four)
    assert not {"$ref", "$defs"} & set(_keys(offered))


@pytest.mark.parametrize("options", EVERY_TOOL)
async def test_the_agents_sdk_finds_every_schema_strict_already(
    ctx: Context, options: ToolsetOptions
) -> None:
    """Its strict conversion succeeds on the plain schema and leaves the strict one as it is."""
    from agents.strict_schema import ensure_strict_json_schema  # noqa: PLC0415

    tools = FsToolset(options)
    plain = {tool["name"]: tool["parameters"] for tool in await tools.definitions(ctx)}
    for tool in await tools.definitions(ctx, provider="openai"):
        function = tool["function"]
        assert function["strict"] is True, function["name"]
        assert (
            ensure_strict_json_schema(copy.deepcopy(function["parameters"]))
            == function["parameters"]
        )
        ensure_strict_json_schema(copy.deepcopy(plain[function["name"]]))


# -- output schemas ---------------------------------------------------------------------------

SUCCESSFUL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read", {"file_path": "a.py"}),
    ("edit", {"file_path": "a.py", "old_string": "one", "new_string": "uno"}),
    ("write", {"file_path": "b.py", "content": "two\n"}),
    ("list_dir", {}),
    ("glob", {"pattern": "*.py"}),
    ("grep", {"pattern": "uno"}),
    ("search_tools", {"query": "grep"}),
    ("call_tool", {"name": "grep", "arguments": {"pattern": "two"}}),
]


async def test_every_result_matches_its_plain_output_schema(ctx: Context, seed: Seed) -> None:
    await seed("a.py", b"one\n")
    direct = FsToolset()
    deferred = FsToolset(ToolsetOptions(exposure={"grep": Exposure.DEFERRED}))
    for name, arguments in SUCCESSFUL_CALLS:
        schema = direct.tool(name).definition(LIMITS).output_schema
        tools = deferred if name in ("search_tools", "call_tool") else direct
        assert not {"$ref", "$defs", "anyOf"} & set(_keys(schema)), name
        jsonschema.Draft202012Validator.check_schema(schema)
        result = await tools.execute(ctx, name, arguments)
        assert not result.is_error, result.text
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(result.structured))
        assert errors == [], (name, errors)
    grep_schema = direct.tool("grep").definition(LIMITS).output_schema
    invalid = dict(result.structured, total=None)
    assert not jsonschema.Draft202012Validator(grep_schema).is_valid(invalid)


def _keys(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield key
            yield from _keys(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _keys(item)


async def test_each_call_gets_schemas_of_its_own(tools: FsToolset, ctx: Context) -> None:
    first = {tool.name: tool for tool in await tools.tools(ctx)}
    first["read"].input_schema["properties"]["offset"].clear()
    first["read"].output_schema["properties"]["error"]["properties"].clear()
    again = {tool.name: tool for tool in await tools.tools(ctx)}
    assert again["read"].input_schema["properties"]["offset"]

    assert again["read"].output_schema["properties"]["error"]["properties"]
