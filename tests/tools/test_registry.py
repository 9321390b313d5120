"""A tool is one object: a toy tool registered once is offered and run everywhere.

Also: a step's offer is worked out once and serves its listing and its calls,
and a plugin's exposure answer, good, bad or raising, never escapes as an
exception.
"""

from __future__ import annotations

import logging

import anyio.lowlevel
import pytest
from mcp import Client
from pydantic import Field
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxfs.core import ABSENT, Context, ErrorCode, Fs, MemoryBackend, hookimpl
from ctxfs.core.policies import IntegrationSwitch, StaticIntegrations
from ctxfs.tools import (
    Annotations,
    Exposure,
    FsToolset,
    Limits,
    ReadData,
    ResultData,
    Step,
    Tool,
    ToolArgs,
    ToolResult,
    ToolsetOptions,
)
from ctxfs.tools.mcpserver import McpTools, create_server
from ctxfs.tools.pydanticai import CtxfsToolset
from tests.tools.agent_loop import call_in_agent_loop
from tests.tools.conftest import DEFERRED_TOOLS, FILE_TOOLS

pytestmark = pytest.mark.anyio

ASKED = [*FILE_TOOLS, *DEFERRED_TOOLS]
"""The tools exposure plugins are asked about by default: every one offered by exposure."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP client and pydantic-ai run on asyncio


# -- a toy tool, defined as a user would -------------------------------------------------------


class CountArgs(ToolArgs):
    """Arguments of ``word_count``."""

    file_path: str = Field(description="Path of the file to count.")


class CountData(ResultData):
    """The data of a ``word_count`` result."""

    words: int
    version: str


class WordCount(Tool[CountArgs, CountData]):
    """Counts the words of a text file (a read: it counts as observing the file)."""

    name = "word_count"  # (Tool[CountArgs, CountData] sets its arguments and result)
    owner = "tests"

    def description(self, limits: Limits) -> str:
        return f"Count the words of a text file (up to {limits.text.default_limit} lines)."

    async def run(self, step: Step, args: CountArgs) -> CountData:
        outcome = await step.ctx.fs.read(args.file_path)
        return self.data(outcome, words=len(outcome.text.split()))

    def render(self, data: CountData, args: CountArgs) -> str:
        return f"{data.target}: {data.words} words"


class ShoutArgs(ToolArgs):
    """Arguments of ``shout``."""

    file_path: str


class Shout(Tool[ShoutArgs, ResultData]):
    """Upper-cases a file: a tool that writes, and says so."""

    name = "shout"
    arguments = ShoutArgs
    result = ResultData
    writes = True
    annotations = Annotations(read_only=False, destructive=True, idempotent=True)

    def description(self, limits: Limits) -> str:
        return "Upper-case a whole file you have read."

    async def run(self, step: Step, args: ShoutArgs) -> ResultData:
        text = (await step.ctx.fs.read(args.file_path)).text
        return self.data(await step.ctx.fs.write(args.file_path, text.upper()))

    def render(self, data: ResultData, args: ShoutArgs) -> str:
        return f"Shouted {data.target}."


def test_the_type_arguments_set_what_a_tool_does_not_and_a_subclass_inherits_the_rest() -> None:
    class Loud(Shout):
        name = "loud"

    class Counted(Tool[ShoutArgs, CountData]):
        arguments = CountArgs

    assert (WordCount.arguments, WordCount.result) == (CountArgs, CountData)
    assert (Loud.arguments, Loud.result) == (ShoutArgs, ResultData)

    class Again(Counted):
        name = "again"

    assert (Counted.arguments, Counted.result) == (CountArgs, CountData)
    assert (Again.arguments, Again.result) == (CountArgs, CountData)


@pytest.fixture
async def fs() -> Fs:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    await fs.backend.write("a.txt", b"one two three\n", expect=ABSENT)
    return fs


@pytest.fixture
def toolset() -> FsToolset:
    toolset = FsToolset()
    toolset.register(WordCount())
    return toolset


async def test_a_registered_tool_is_offered_to_every_provider(fs: Fs, toolset: FsToolset) -> None:
    ctx = fs.context(owner="a")
    generic = {tool["name"]: tool for tool in await toolset.definitions(ctx)}
    assert generic["word_count"]["parameters"]["required"] == ["file_path"]
    assert "up to 2000 lines" in generic["word_count"]["description"]
    chat = await toolset.definitions(ctx, provider="openai")
    (function,) = [t["function"] for t in chat if t["function"]["name"] == "word_count"]
    assert function["strict"] is True
    assert function["parameters"]["additionalProperties"] is False
    responses = await toolset.definitions(ctx, provider="openai", openai_api="responses")
    assert "word_count" in [tool.get("name") for tool in responses]
    anthropic = await toolset.definitions(ctx, provider="anthropic")
    names = [tool["name"] for tool in anthropic]
    assert names == [
        "str_replace_based_edit_tool", *FILE_TOOLS[3:9], "glob", "grep", "word_count",
        "search_tools", "call_tool",
    ]  # fmt: skip
    definition = (await toolset.tools(ctx))[-3]  # then the discovery pair
    assert (definition.name, definition.owner) == ("word_count", "tests")
    assert definition.output_schema["properties"]["words"] == {"type": "integer"}


async def test_a_registered_tool_runs_and_its_data_is_typed(fs: Fs, toolset: FsToolset) -> None:
    ctx = fs.context(owner="a")
    result = await toolset.execute(ctx, "word_count", {"file_path": "a.txt"})
    assert not result.is_error, result.text
    assert result.text == "a.txt: 3 words"
    assert isinstance(result.data, CountData)
    assert (result.data.words, result.data.target, result.data.tool) == (3, "a.txt", "word_count")
    assert result.data_as(CountData).version == result.structured["version"]
    assert (await toolset.execute(ctx, "edit", _edit("one", "uno"))).is_error is False  # it read
    invalid = await toolset.execute(ctx, "word_count", {"path": "a.txt"})
    assert invalid.error_code is ErrorCode.INVALID_ARGUMENT
    assert "file_path: Field required" in invalid.text


async def test_a_registered_tool_is_listed_and_called_over_mcp(fs: Fs, toolset: FsToolset) -> None:
    server = create_server(McpTools(fs, toolset))
    async with Client(server, raise_exceptions=True) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["word_count"].output_schema is not None
        assert listed["word_count"].annotations is not None
        assert listed["word_count"].annotations.read_only_hint is True
        called = await client.call_tool("word_count", {"file_path": "a.txt"})
    assert not called.is_error
    assert called.structured_content is not None
    assert called.structured_content["words"] == 3


async def test_a_registered_tool_runs_in_pydantic_ai_s_agent_loop(
    fs: Fs, toolset: FsToolset
) -> None:
    offered, returns = await call_in_agent_loop(
        toolset, fs.context(owner="a"), "word_count", {"file_path": "a.txt"}
    )
    assert "word_count" in offered
    assert [part.content for part in returns] == ["a.txt: 3 words"]
    assert returns[0].metadata["words"] == 3


async def test_a_tool_that_says_it_writes_is_hidden_by_a_switch_and_read_only(fs: Fs) -> None:
    integrations = StaticIntegrations(off={None: ["docs"]})
    switch = IntegrationSwitch(integrations, key_of=lambda path: "docs", keys=["docs"])
    switched = Fs(fs.backend, plugins=[switch], load_entrypoints=False)
    toolset = FsToolset(tools=[*FsToolset().registered, Shout()])
    names = [tool.name for tool in await toolset.tools(switched.context(owner="a"))]
    readers = ["read", "list_dir", "glob", "grep", "search_tools", "call_tool"]  # changes reads
    assert names == readers
    integrations.switch("docs", on=True)
    assert "shout" in [tool.name for tool in await toolset.tools(switched.context(owner="a"))]
    read_only = FsToolset(ToolsetOptions(read_only=True), tools=toolset.registered)
    ctx = fs.context(owner="a")
    assert [tool.name for tool in await read_only.tools(ctx)] == readers
    refused = await read_only.execute(ctx, "shout", {"file_path": "a.txt"})
    assert refused.error_code is ErrorCode.INVALID_ARGUMENT
    assert (await fs.backend.read("a.txt")).data == b"one two three\n"


def test_two_tools_of_one_name_are_refused(toolset: FsToolset) -> None:
    with pytest.raises(ValueError, match="'word_count' is registered already"):
        toolset.register(WordCount())


# -- one offer per step -----------------------------------------------------------------------


class Counting:
    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    async def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> str | None:
        await anyio.lowlevel.checkpoint()
        self.asked.append(tool)
        return None


class EditSwitch:
    hiding = False

    @hookimpl
    def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> str | None:
        return "hidden" if self.hiding and tool == "edit" else None


async def test_a_tool_listed_once_then_held_back_is_said_not_offered_not_unknown(fs: Fs) -> None:
    switch = EditSwitch()
    ctx = Fs(fs.backend, plugins=[switch], load_entrypoints=False).context(owner="a")
    toolset = FsToolset()
    assert "edit" in [tool.name for tool in toolset.listed(ctx, toolset.fixed(ctx))]
    switch.hiding = True
    refused = await toolset.execute(ctx, "edit", _edit("two", "deux"))
    assert refused.error_code is ErrorCode.INVALID_ARGUMENT
    assert refused.text.startswith("Error [invalid_argument]: tool 'edit' is not offered in this")
    unknown = await toolset.execute(ctx, "edut", _edit("two", "deux"))
    assert "unknown tool 'edut'" in unknown.text


async def test_a_step_asks_the_plugins_once_for_its_listing_and_its_calls(fs: Fs) -> None:
    counting = Counting()
    watched = Fs(fs.backend, plugins=[counting], load_entrypoints=False)
    ctx = watched.context(owner="a")
    toolset = FsToolset()
    offer = await toolset.offer(ctx)
    assert counting.asked == ASKED
    await toolset.definitions(ctx, provider="anthropic", offer=offer)
    await toolset.execute(ctx, "read", {"file_path": "a.txt"}, offer=offer)
    await toolset.execute(ctx, "edit", _edit("two", "deux"), offer=offer)
    assert len(counting.asked) == len(ASKED)  # the listing and both calls used the offer
    await toolset.execute(ctx, "read", {"file_path": "a.txt"})  # no offer: this call works one out
    assert len(counting.asked) == 2 * len(ASKED)


async def test_pydantic_ai_asks_the_plugins_once_per_step(fs: Fs) -> None:
    counting = Counting()
    watched = Fs(fs.backend, plugins=[counting], load_entrypoints=False)

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            read = ToolCallPart("read", {"file_path": "a.txt"})
            return ModelResponse(parts=[read, ToolCallPart("grep", {"pattern": "o"})])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(script), deps_type=Context, toolsets=[CtxfsToolset()])
    await agent.run("look", deps=watched.context(owner="a"))
    assert len(counting.asked) == 2 * len(ASKED)  # two steps, one offer each: the calls reuse it


# -- exposure answers never escape ------------------------------------------------------------


class Sloppy:
    @hookimpl
    def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> object:
        return {"write": "Hidden", "grep": "DEFERRED ", "glob": "invisible", "read": 42}.get(tool)


class Broken:
    @hookimpl
    def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> str | None:
        if tool == "edit":
            raise RuntimeError("the exposure service is down")
        return None


async def test_a_bad_exposure_answer_hides_the_tool_and_its_call_is_a_result(
    fs: Fs, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = Fs(fs.backend, plugins=[Sloppy()], load_entrypoints=False).context(owner="a")
    toolset = FsToolset()
    with caplog.at_level(logging.ERROR, logger="ctxfs.tools.toolset"):
        plan = await toolset.plan(ctx)
        listed = [tool.name for tool in await toolset.tools(ctx)]
        glob = await toolset.execute(ctx, "glob", {"pattern": "*.txt"})
        edit = await toolset.execute(
            ctx, "edit", {"file_path": "a.txt", "old_string": "a", "new_string": "b"}
        )
    assert plan["write"] == "hidden"  # a spelling of a known answer counts
    assert plan["grep"] == "deferred"
    assert (plan["glob"], plan["read"]) == ("hidden", "hidden")  # no answer at all: fails closed
    assert listed == [*FILE_TOOLS[2:10], "search_tools", "call_tool"]
    assert glob.error_code is ErrorCode.BACKEND_ERROR
    assert "'invisible' is not 'direct', 'deferred', 'hidden' or None" in glob.text
    assert edit.error_code is ErrorCode.NOT_OBSERVED  # the other tools run as usual
    assert "'invisible' is not" in caplog.text
    assert "42 is not" in caplog.text


async def test_an_offer_that_names_a_tool_this_toolset_lacks_gives_a_result(fs: Fs) -> None:
    ctx = fs.context(owner="a")
    other = FsToolset(tools=[*FsToolset().registered, WordCount()])
    result = await FsToolset().execute(ctx, "word_count", {}, offer=await other.offer(ctx))
    assert result.error_code is ErrorCode.INVALID_ARGUMENT


async def test_an_exposure_may_be_named_and_a_wrong_name_is_refused_at_once(fs: Fs) -> None:
    ctx = fs.context(owner="a")
    named = FsToolset(ToolsetOptions(exposure={"grep": "deferred"}))  # type: ignore[dict-item]
    assert "grep" in (await named.offer(ctx)).deferred
    with pytest.raises(ValueError, match="exposure of 'grep' must be one of"):
        ToolsetOptions(exposure={"grep": "Deferred"})  # type: ignore[dict-item]

    class Counted(WordCount):
        exposure = "deferred"  # type: ignore[assignment]

    class Misnamed(WordCount):
        exposure = "later"  # type: ignore[assignment]

    counted = FsToolset(tools=[*FsToolset().registered, Counted()])
    assert "word_count" in (await counted.offer(ctx)).deferred
    with pytest.raises(ValueError, match="exposure of the tool 'word_count'"):
        FsToolset(tools=[Misnamed()])


async def test_the_configured_offer_follows_the_options(fs: Fs) -> None:
    exposure: dict[str, Exposure] = {}
    toolset = FsToolset(ToolsetOptions(exposure=exposure))
    ctx = fs.context(owner="a")
    assert "write" in (await toolset.offer(ctx)).direct
    exposure["write"] = Exposure.HIDDEN  # the mapping the options hold, changed in place
    assert "write" not in (await toolset.offer(ctx)).direct
    toolset.options = ToolsetOptions(read_only=True)
    offer = await toolset.offer(ctx)
    assert offer.direct == ("read", "list_dir", "glob", "grep")
    with pytest.raises(TypeError):
        offer.exposure["write"] = Exposure.DIRECT  # type: ignore[index]


async def test_a_result_read_back_from_its_plain_form_keeps_every_field(
    fs: Fs, toolset: FsToolset
) -> None:
    result = await toolset.execute(fs.context(owner="a"), "word_count", {"file_path": "a.txt"})
    back = ToolResult.model_validate_json(result.model_dump_json())
    assert back.structured == result.structured
    assert back.data.words == 3  # type: ignore[attr-defined]


async def test_a_failing_exposure_plugin_hides_the_tool_and_its_call_is_a_result(
    fs: Fs, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = Fs(fs.backend, plugins=[Broken()], load_entrypoints=False).context(owner="a")
    toolset = FsToolset()
    with caplog.at_level(logging.ERROR, logger="ctxfs.tools.toolset"):
        names = [tool.name for tool in await toolset.tools(ctx)]
        result = await toolset.execute(ctx, "edit", _edit("one", "uno"))
    assert "edit" not in names
    assert "read" in names
    assert result.is_error
    assert result.error_code is ErrorCode.BACKEND_ERROR
    assert "could not tell whether 'edit' is offered" in result.text
    assert "the exposure service is down" in caplog.text


def _edit(old: str, new: str) -> dict[str, str]:
    return {"file_path": "a.txt", "old_string": old, "new_string": new}


async def test_the_data_is_the_tools_own_model(fs: Fs, toolset: FsToolset) -> None:
    result = await toolset.execute(fs.context(owner="a"), "read", {"file_path": "a.txt"})
    assert isinstance(result.data, ReadData)
    assert result.data == result.data_as(ReadData)
    with pytest.raises(TypeError, match="holds ReadData, not CountData"):
        result.data_as(CountData)


async def test_without_exposure_plugins_the_configured_offer_is_worked_out_once(fs: Fs) -> None:
    toolset = FsToolset(ToolsetOptions(read_only=True))
    ctx = fs.context(owner="a")
    first = await toolset.offer(ctx)
    assert await toolset.offer(fs.context(owner="b")) is first
    assert first.direct == ("read", "list_dir", "glob", "grep")
    toolset.register(WordCount())
    registered = await toolset.offer(ctx)
    assert "word_count" in registered.direct
    counting = Counting()
    fs.plugin_manager.register(counting)  # a plugin that has a say: asked from now on
    assert (await toolset.offer(ctx)).direct == registered.direct
    assert counting.asked == [*ASKED, "word_count"]
