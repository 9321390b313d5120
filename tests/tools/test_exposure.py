"""Exposure: direct, deferred and hidden tools, decided per step, one executor path."""

from __future__ import annotations

import anyio
import pytest

from ctxfs.core import Context, ErrorCode, Fs, MemoryBackend, hookimpl
from ctxfs.tools import Exposure, FsToolset, ToolsetOptions
from ctxfs.tools.toolset import MAX_NAME_CHARS
from tests.tools.conftest import DEFAULT_TOOLS, DEFERRED_TOOLS, FILE_TOOLS

pytestmark = pytest.mark.anyio

NONE_DEFERRED = dict.fromkeys(DEFERRED_TOOLS, Exposure.DIRECT)
"""The exposure that offers the tools deferred by default directly."""
DEFERRED = ToolsetOptions(
    exposure={**NONE_DEFERRED, "grep": Exposure.DEFERRED, "glob": Exposure.DEFERRED}
)


async def names(tools: FsToolset, ctx: Context) -> list[str]:
    return [tool["name"] for tool in await tools.definitions(ctx)]


async def test_without_deferred_tools_there_is_no_search_pair(ctx: Context) -> None:
    offered = await names(FsToolset(ToolsetOptions(exposure=NONE_DEFERRED)), ctx)
    assert offered == [*FILE_TOOLS, *DEFERRED_TOOLS]


async def test_undo_and_changes_are_deferred_by_default(tools: FsToolset, ctx: Context) -> None:
    assert await names(tools, ctx) == DEFAULT_TOOLS
    assert await tools.plan(ctx) == {
        **dict.fromkeys(FILE_TOOLS, Exposure.DIRECT),
        **dict.fromkeys(DEFERRED_TOOLS, Exposure.DEFERRED),
    }
    found = await tools.execute(ctx, "search_tools", {"query": "undo"})
    assert next(tool["name"] for tool in found.structured["tools"]) == "undo"
    read_only = FsToolset(ToolsetOptions(read_only=True))
    assert (await read_only.plan(ctx))["undo"] is Exposure.HIDDEN  # it writes
    assert (await names(read_only, ctx))[-2:] == ["search_tools", "call_tool"]  # changes
    runner = (await read_only.tools(ctx))[-1]
    assert (runner.read_only, runner.destructive) == (True, False)  # it runs no tool that writes
    runner = (await tools.tools(ctx))[-1]
    assert (runner.read_only, runner.destructive) == (False, True)


async def test_deferred_tools_are_absent_and_the_search_pair_appears(ctx: Context) -> None:
    offered = await names(FsToolset(DEFERRED), ctx)
    assert offered == [*FILE_TOOLS[:-2], *DEFERRED_TOOLS, "search_tools", "call_tool"]


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("grep", ["grep"]),  # by name
        ("regular expression", ["grep"]),  # by description
        ("ignore_case", ["grep"]),  # by parameter
        ("ctxfs.tools", ["glob", "grep"]),  # by owner
        ("pattern files", ["glob", "grep"]),
    ],
)
async def test_search_tools_finds_deferred_tools_by_their_metadata(
    ctx: Context, query: str, found: list[str]
) -> None:
    result = await FsToolset(DEFERRED).execute(ctx, "search_tools", {"query": query})
    assert not result.is_error
    assert sorted(tool["name"] for tool in result.structured["tools"]) == found
    for tool in result.structured["tools"]:
        assert tool["owner"] == "ctxfs.tools"
        assert "pattern" in tool["arguments"]
        assert tool["required"] == ["pattern"]
    assert all(f"{name}(" in result.text for name in found)


async def test_search_tools_never_returns_direct_or_hidden_tools(ctx: Context) -> None:
    exposure = {**NONE_DEFERRED, "grep": Exposure.DEFERRED, "glob": Exposure.HIDDEN}
    options = ToolsetOptions(exposure=exposure)
    result = await FsToolset(options).execute(ctx, "search_tools", {"query": "files read edit"})
    assert [tool["name"] for tool in result.structured["tools"]] == ["grep"]


async def test_call_tool_runs_a_deferred_tool_through_the_normal_path(ctx: Context) -> None:
    tools = FsToolset(DEFERRED)
    await tools.execute(ctx, "write", {"file_path": "src/a.py", "content": "needle = 1\n"})
    ok = await tools.execute(ctx, "call_tool", {"name": "grep", "arguments": {"pattern": "needle"}})
    assert not ok.is_error
    assert ok.structured["tool"] == "grep"
    assert ok.text.startswith("src/a.py:1: needle = 1")
    invalid = await tools.execute(ctx, "call_tool", {"name": "grep", "arguments": {"pattern": "("}})
    assert invalid.error_code is ErrorCode.INVALID_ARGUMENT  # the same validation
    assert invalid.structured["error"]["details"]["field"] == "pattern"
    missing = await tools.execute(ctx, "call_tool", {"name": "grep", "arguments": {}})
    assert missing.error_code is ErrorCode.INVALID_ARGUMENT
    assert "pattern: Field required" in missing.text
    as_text = {"name": "grep", "arguments": '{"pattern": "needle"}'}  # what strict mode sends
    assert (await tools.execute(ctx, "call_tool", as_text)).text == ok.text
    broken = await tools.execute(ctx, "call_tool", {"name": "grep", "arguments": '{"pattern'})
    assert broken.error_code is ErrorCode.INVALID_ARGUMENT
    assert "not valid JSON" in broken.text


@pytest.mark.parametrize("name", ["read", "nonexistent", "call_tool", "search_tools", "secret"])
async def test_call_tool_rejects_direct_hidden_and_unknown_names(ctx: Context, name: str) -> None:
    options = ToolsetOptions(exposure={"grep": Exposure.DEFERRED, "list_dir": Exposure.HIDDEN})
    result = await FsToolset(options).execute(ctx, "call_tool", {"name": name, "arguments": {}})
    assert result.error_code is ErrorCode.INVALID_ARGUMENT
    assert result.structured["error"]["details"]["deferred"] == ["grep", *DEFERRED_TOOLS]
    hidden = await FsToolset(options).execute(ctx, "call_tool", {"name": "list_dir"})
    assert hidden.error_code is ErrorCode.INVALID_ARGUMENT


async def test_deferred_and_hidden_tools_cannot_be_called_by_name(ctx: Context) -> None:
    options = ToolsetOptions(exposure={"grep": Exposure.DEFERRED, "list_dir": Exposure.HIDDEN})
    tools = FsToolset(options)
    deferred = await tools.execute(ctx, "grep", {"pattern": "x"})
    assert deferred.error_code is ErrorCode.INVALID_ARGUMENT
    assert "call_tool" in deferred.text
    hidden = await tools.execute(ctx, "list_dir", {})
    assert hidden.error_code is ErrorCode.INVALID_ARGUMENT
    assert "list_dir" not in hidden.structured["error"]["details"]["offered"]


async def test_search_pair_is_not_callable_without_deferred_tools(ctx: Context) -> None:
    tools = FsToolset(ToolsetOptions(exposure=NONE_DEFERRED))
    result = await tools.execute(ctx, "search_tools", {"query": "x"})
    assert result.error_code is ErrorCode.INVALID_ARGUMENT


class StepPolicy:
    """Hides write and defers grep, but only for owner "reviewer"; answers asynchronously."""

    @hookimpl
    async def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> str | None:
        await anyio.lowlevel.checkpoint()
        if ctx.owner != "reviewer":
            return None
        return {"write": "hidden", "grep": "deferred"}.get(tool)


class Revealer:
    @hookimpl
    def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> str | None:
        return "direct"  # can never undo a stricter vote


async def test_plugins_decide_per_step_and_the_strictest_vote_wins() -> None:
    fs = Fs(MemoryBackend(), plugins=[StepPolicy(), Revealer()], load_entrypoints=False)
    tools = FsToolset()
    reviewer, author = fs.context(owner="reviewer"), fs.context(owner="author")
    assert await names(tools, reviewer) == [
        "read", "edit", "multi_edit", "apply_patch", "notebook_edit", "delete", "move",
        "create_directory",
        "list_dir", "glob",
        "search_tools", "call_tool",
    ]  # fmt: skip
    assert await names(tools, author) == DEFAULT_TOOLS  # (undo stays deferred: never revealed)
    refused = await tools.execute(reviewer, "write", {"file_path": "a", "content": "x"})
    assert refused.error_code is ErrorCode.INVALID_ARGUMENT
    assert (
        await tools.execute(author, "write", {"file_path": "a", "content": "x"})
    ).is_error is False


# -- a selection of the tools, and a prefix on their names ------------------------------------


async def test_only_the_selected_tools_are_offered_and_callable(ctx: Context) -> None:
    tools = FsToolset(ToolsetOptions(tools=frozenset({"read", "write", "grep"})))
    assert await names(tools, ctx) == ["read", "write", "grep"]
    assert not (await tools.execute(ctx, "write", {"file_path": "a.md", "content": "a\n"})).is_error
    glob = await tools.execute(ctx, "glob", {"pattern": "*"})
    assert glob.error_code is ErrorCode.INVALID_ARGUMENT
    assert glob.structured["error"]["details"]["offered"] == ["read", "write", "grep"]


def test_a_selection_naming_no_tool_is_refused() -> None:
    with pytest.raises(ValueError, match="no tool is named 'reed'"):
        FsToolset(ToolsetOptions(tools=frozenset({"read", "reed"})))
    with pytest.raises(ValueError, match="'search_tools'"):  # offered only with deferred tools
        FsToolset(ToolsetOptions(tools=frozenset({"search_tools"})))
    # an exposure naming no tool would leave the tool meant offered: refused the same way
    for misnamed in ("fs_delete", "Delete", "str_replace_based_edit_tool"):
        with pytest.raises(ValueError, match=f"no tool is named '{misnamed}'"):
            FsToolset(ToolsetOptions(tool_prefix="fs_", exposure={misnamed: Exposure.HIDDEN}))


@pytest.mark.parametrize("prefix", ["1_", "-x", "a" * 33, "fs.", "fs "])
def test_a_prefix_no_provider_takes_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="a tool prefix is at most 32"):
        ToolsetOptions(tool_prefix=prefix)


def test_a_tool_name_longer_than_providers_take_is_refused() -> None:
    tools = FsToolset(ToolsetOptions(tool_prefix="p" * 32))  # the built-in names fit
    assert len(tools.options.tool_prefix + "create_directory") <= MAX_NAME_CHARS
    long_named = type("LongNamed", (type(tools.tool("read")),), {"name": "r" * 33})
    with pytest.raises(ValueError, match="longer than 64 characters"):
        tools.register(long_named())


async def test_prefixed_names_are_offered_and_called_to_every_provider(ctx: Context) -> None:
    tools = FsToolset(ToolsetOptions(tool_prefix="fs_", tools=frozenset(FILE_TOOLS[:4])))
    assert await names(tools, ctx) == [f"fs_{name}" for name in FILE_TOOLS[:4]]
    chat = await tools.definitions(ctx, provider="openai")
    assert [tool["function"]["name"] for tool in chat] == await names(tools, ctx)
    anthropic = [tool["name"] for tool in await tools.definitions(ctx, provider="anthropic")]
    assert anthropic == await names(tools, ctx)  # list_dir is not offered: no text editor
    write = {"file_path": "a.md", "content": "a\n"}
    assert not (await tools.execute(ctx, "fs_write", write)).is_error
    unprefixed = await tools.execute(ctx, "read", {"file_path": "a.md"})
    assert unprefixed.error_code is ErrorCode.INVALID_ARGUMENT
    assert "fs_read" in unprefixed.text
    read = await tools.execute(ctx, "fs_read", {"file_path": "a.md"})
    assert read.structured["content"] == "a\n"


async def test_a_providers_own_tool_keeps_its_name_under_a_prefix(ctx: Context) -> None:
    tools = FsToolset(ToolsetOptions(tool_prefix="fs_"))
    anthropic = [tool["name"] for tool in await tools.definitions(ctx, provider="anthropic")]
    assert anthropic[0] == "str_replace_based_edit_tool"
    assert not {"fs_read", "fs_write", "fs_edit", "fs_list_dir"} & set(anthropic)
    view = {"command": "create", "path": "a.md", "file_text": "a\n"}
    created = await tools.execute(ctx, "str_replace_based_edit_tool", view, provider="anthropic")
    assert not created.is_error, created.text


async def test_descriptions_name_other_tools_as_models_call_them(ctx: Context) -> None:
    plain = {tool.name: tool.description for tool in await FsToolset().tools(ctx)}
    prefixed = {
        tool.name: tool.description
        for tool in await FsToolset(ToolsetOptions(tool_prefix="fs_")).tools(ctx)
    }
    assert plain["write"].endswith("use edit.")
    assert prefixed["fs_write"].endswith("use fs_edit.")
    assert prefixed["fs_multi_edit"].startswith("Like fs_edit,")
    assert "you have read whole" in prefixed["fs_write"]  # (a verb, not the tool)
    assert prefixed["fs_search_tools"].endswith("for fs_call_tool.")
    assert prefixed["fs_call_tool"] == "Run a tool fs_search_tools found."


async def test_deferred_tools_under_a_prefix_run_through_the_prefixed_call_tool(
    ctx: Context,
) -> None:
    tools = FsToolset(ToolsetOptions(tool_prefix="fs_", exposure={"grep": Exposure.DEFERRED}))
    assert (await names(tools, ctx))[-2:] == ["fs_search_tools", "fs_call_tool"]
    direct = await tools.execute(ctx, "fs_grep", {"pattern": "a"})
    assert "fs_call_tool" in direct.text
    called = await tools.execute(
        ctx, "fs_call_tool", {"name": "grep", "arguments": {"pattern": "a"}}
    )
    assert not called.is_error, called.text
    as_models_call_it = await tools.execute(
        ctx, "fs_call_tool", {"name": "fs_grep", "arguments": {"pattern": "a"}}
    )
    assert as_models_call_it.text == called.text
    unknown = await tools.execute(ctx, "fs_call_tool", {"name": "fs_fs_grep"})
    assert unknown.error_code == "invalid_argument"
