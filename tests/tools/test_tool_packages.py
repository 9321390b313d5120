"""A tool is a package plus one line of the registry; the independence contract follows it."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.tools import BUILTIN_TOOLS, FsToolset, Offering, ToolsetOptions
from ctxfs.tools.mcpserver import McpTools, create_server
from tests.tools.agent_loop import call_in_agent_loop
from tests.tools.line_count import LINE_COUNT, LineCountData, LineCountOptions

pytestmark = pytest.mark.anyio

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _independence() -> dict[str, Any]:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"] == "ctxfs.tools: each tool stands alone"]
    assert isinstance(contract, dict)
    return contract


def test_the_independence_contract_lists_every_registered_tool_s_package() -> None:
    contract = _independence()
    assert contract["type"] == "independence"
    assert contract["modules"] == [type(tool).__module__ for tool in BUILTIN_TOOLS]


def test_only_a_provider_s_own_tool_may_import_the_tools_it_stands_for() -> None:
    packages = {tool.name: type(tool).__module__ for tool in BUILTIN_TOOLS}
    stood_for = {
        packages[tool.name]: {packages[name] for name in tool.stands_for}
        for tool in BUILTIN_TOOLS
        if tool.offering is Offering.PROVIDER
    }
    ignored = [line.split(" -> ") for line in _independence()["ignore_imports"]]
    for importer, imported in ignored:
        assert any(
            imported == package or imported.startswith(f"{package}.")
            for package in stood_for[importer]
        ), (importer, imported)
    assert {(importer, imported) for importer, imported in ignored} >= {
        (alias, package) for alias, packages_ in stood_for.items() for package in packages_
    }


# -- a toy tool: one package, one line ---------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Options(ToolsetOptions, LineCountOptions):
    """A harness's options: the toolset's, and its own tool's."""


@pytest.fixture
async def fs() -> Fs:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    await fs.backend.write("a.txt", b"short\n" + b"x" * 100 + b"\n", expect=ABSENT)
    return fs


@pytest.fixture
def toolset() -> FsToolset:
    return FsToolset(tools=(*BUILTIN_TOOLS, LINE_COUNT))  # the registration


async def test_a_tool_package_is_in_every_provider_s_definitions(
    fs: Fs, toolset: FsToolset
) -> None:
    ctx = fs.context(owner="a")
    description = "Count the lines of a text file, and those longer than 80 characters."
    generic = await toolset.definitions(ctx)
    assert generic[-3] == {  # then the discovery pair (undo and changes are deferred)
        "name": "line_count",
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the text file."}
            },
            "required": ["file_path"],
            "additionalProperties": False,
        },
    }
    chat = await toolset.definitions(ctx, provider="openai")
    assert chat[-3]["type"] == "function"
    assert chat[-3]["function"]["name"] == "line_count"
    assert chat[-3]["function"]["strict"] is True
    responses = await toolset.definitions(ctx, provider="openai", openai_api="responses")
    assert {"type": "apply_patch"} in responses
    assert responses[-3]["name"] == "line_count"
    assert responses[-3]["description"] == description
    anthropic = await toolset.definitions(ctx, provider="anthropic")
    assert anthropic[0]["name"] == "str_replace_based_edit_tool"
    assert anthropic[-3]["name"] == "line_count"
    assert anthropic[-3]["input_schema"] == generic[-3]["parameters"]
    configured = FsToolset(Options(longest_line=3), tools=toolset.registered)
    assert "longer than 3 characters" in (await configured.definitions(ctx))[-3]["description"]


async def test_a_tool_package_runs_with_its_options_and_its_state(
    fs: Fs, toolset: FsToolset
) -> None:
    ctx = fs.context(owner="a")
    first = await toolset.execute(ctx, "line_count", {"file_path": "a.txt"})
    assert (first.is_error, first.text) == (False, "a.txt: 2 lines, 1 long")
    again = await toolset.execute(ctx, "line_count", '{"file_path": "a.txt"}')
    assert again.data_as(LineCountData).calls == 2
    other = FsToolset(Options(longest_line=3), tools=toolset.registered)
    own = await other.execute(ctx, "line_count", {"file_path": "a.txt"})
    assert (own.text, own.data_as(LineCountData).calls) == ("a.txt: 2 lines, 2 long", 1)
    assert (await toolset.execute(ctx, "edit", _edit())).is_error is False  # it read the file


async def test_a_tool_package_is_listed_and_called_over_mcp(fs: Fs, toolset: FsToolset) -> None:
    server = create_server(McpTools(fs, toolset))
    async with Client(server, raise_exceptions=True) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        called = await client.call_tool("line_count", {"file_path": "a.txt"})
    assert listed["line_count"].input_schema["required"] == ["file_path"]
    assert listed["line_count"].output_schema is not None
    assert listed["line_count"].output_schema["properties"]["long_lines"] == {"type": "integer"}
    assert not called.is_error
    assert called.structured_content is not None
    assert called.structured_content["lines"] == 2


async def test_a_tool_package_runs_in_pydantic_ai_s_agent_loop(fs: Fs, toolset: FsToolset) -> None:
    offered, returns = await call_in_agent_loop(
        toolset, fs.context(owner="a"), "line_count", {"file_path": "a.txt"}
    )
    assert "line_count" in offered
    assert [part.content for part in returns] == ["a.txt: 2 lines, 1 long"]


def _edit() -> dict[str, str]:
    return {"file_path": "a.txt", "old_string": "short", "new_string": "brief"}
