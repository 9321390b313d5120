"""The LangChain tools, driven by LangChain's own fake chat model through a LangGraph ToolNode."""

from __future__ import annotations

import asyncio
import base64
import gc
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.tool import tool_call
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field

from ctxfs.core import Context, Fs, MemoryBackend, Operation, hookimpl, open_fs
from ctxfs.core.policies import IntegrationSwitch, StaticIntegrations
from ctxfs.local import LocalBackend
from ctxfs.tools import Exposure, FsToolset, ToolsetOptions
from ctxfs.tools.langchain import tools
from tests.harnesses.common import GrepDeferred, run_example
from tests.tools.media import image

pytestmark = pytest.mark.anyio

FILE_TOOLS = [
    "read", "write", "edit", "multi_edit", "apply_patch", "notebook_edit", "delete", "move",
    "create_directory", "list_dir", "glob", "grep", "search_tools", "call_tool",
]  # fmt: skip
"""The tools offered by default: undo and changes are deferred, behind the discovery pair."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # LangChain's async calls run on asyncio only


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, answering from its script, able to bind tools.

    It records the tools it is bound to (as OpenAI tools) and the messages of each request.
    """

    bound: list[dict[str, Any]] = Field(default_factory=list)
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Any | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        self.bound[:] = [convert_to_openai_tool(tool) for tool in tools]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.requests.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.bound]


def calls(*made: tuple[str, dict[str, Any]]) -> AIMessage:
    """The model's turn making the calls *made* (name and arguments), ids ``call-1``, ..."""
    return AIMessage(
        "",
        tool_calls=[
            tool_call(name=name, args=args, id=f"call-{n}")
            for n, (name, args) in enumerate(made, 1)
        ],
    )


def react_agent(model: ScriptedModel, fs_tools: list[BaseTool]) -> CompiledStateGraph[Any]:
    """LangGraph's ReAct loop: the model, then a ToolNode running its calls, until it answers."""
    chat = model.bind_tools(fs_tools)

    def step(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [chat.invoke(state["messages"])]}

    async def astep(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", RunnableLambda(step, afunc=astep))
    graph.add_node("tools", ToolNode(fs_tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def local(tmp_path: Path, **files: str) -> Fs:
    """A store over the directory *tmp_path* holding *files* (name: text)."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return open_fs(str(tmp_path))


def named(fs_tools: list[BaseTool]) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in fs_tools}


def answers(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [message for message in messages if isinstance(message, ToolMessage)]


STALE_HINT = (
    "The diff shows what changed since your read; it counts as a read of the current"
    " version: redo your change against it (no read needed)."
)
"""The hint of a ``stale`` refusal: its diff stands for a read of the current version."""


def stale_edit_script(other: Context) -> Iterator[AIMessage]:
    """Read notes.md; another owner edits it; edit (stale, with the diff); edit again; answer.

    The diff of the stale refusal counts as a read: the second edit comes with no read
    in between.
    """
    someone_else = named(tools(other))
    edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
    yield calls(("read", {"file_path": "notes.md"}))
    someone_else["read"].invoke({"file_path": "notes.md"})
    someone_else["edit"].invoke(
        {"file_path": "notes.md", "old_string": "alpha", "new_string": "ALPHA"}
    )
    yield calls(("edit", edit))
    yield calls(("edit", edit))
    yield AIMessage("done")


def check_the_stale_edit_run(
    model: ScriptedModel, messages: list[BaseMessage], notes: Path
) -> None:
    read, stale, edited = answers(messages)
    assert (read.status, read.content) == (
        "success",
        "1 alpha\n2 beta\n(end of file; lines 1-2 of 2)",
    )
    assert read.artifact["content"] == "alpha\nbeta\n"
    assert stale.status == "error"
    assert stale.artifact is None
    assert stale.content == (
        "Error [stale]: notes.md has changed since it was last read;"
        " what changed since your version:\n"
        "--- a/notes.md\n"
        "+++ b/notes.md\n"
        "@@ -1,2 +1,2 @@\n"
        "-alpha\n"
        "+ALPHA\n"
        " beta\n"
        f"Next: {STALE_HINT}"
    )
    assert model.requests[2][-1] == stale  # the model was told so, diff and all
    assert [m.name for m in answers(messages)] == ["read", "edit", "edit"]  # no read again
    assert edited.status == "success"  # redone against the diff, with no read in between
    assert edited.text.startswith("Edited notes.md: 1 replacement")
    assert edited.artifact["replacements"] == 1
    assert notes.read_text() == "ALPHA\ngamma\n"
    assert messages[-1].content == "done"
    assert model.tool_names == FILE_TOOLS


def test_a_stale_edit_reaches_the_model_as_an_error_tool_message(tmp_path: Path) -> None:
    fs = local(tmp_path, **{"notes.md": "alpha\nbeta\n"})
    model = ScriptedModel(messages=stale_edit_script(fs.context(owner="someone-else")))
    agent = react_agent(model, tools(fs.context(owner="agent")))
    state = agent.invoke({"messages": [("user", "fix the notes")]})
    check_the_stale_edit_run(model, state["messages"], tmp_path / "notes.md")


async def test_the_same_run_awaited_calls_the_tools_on_the_callers_loop(tmp_path: Path) -> None:
    seen = LoopsSeen()
    (tmp_path / "notes.md").write_text("alpha\nbeta\n")
    async with Fs(LocalBackend(str(tmp_path)), plugins=[seen], load_entrypoints=False) as fs:
        model = ScriptedModel(messages=stale_edit_script(fs.context(owner="someone-else")))
        agent = react_agent(model, tools(fs.context(owner="agent")))
        state = await agent.ainvoke({"messages": [("user", "fix the notes")]})
    check_the_stale_edit_run(model, state["messages"], tmp_path / "notes.md")
    assert set(seen.loops["agent"]) == {asyncio.get_running_loop()}


class LoopsSeen:
    """A plugin noting the event loop each owner's operations run on."""

    def __init__(self) -> None:
        self.loops: dict[str, list[asyncio.AbstractEventLoop]] = defaultdict(list)

    @hookimpl
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
        self.loops[ctx.owner].append(asyncio.get_running_loop())


def test_sync_calls_from_plain_code_all_run_on_one_loop(tmp_path: Path) -> None:
    seen = LoopsSeen()
    fs = Fs(LocalBackend(str(tmp_path)), plugins=[seen], load_entrypoints=False)
    fs_tools = named(tools(fs.context(owner="agent")))
    for n in range(5):
        reply = fs_tools["write"].invoke({"file_path": f"f{n}.txt", "content": f"{n}\n"})
        assert reply == f"Created f{n}.txt (1 line, 2 bytes)."
        assert fs_tools["read"].invoke({"file_path": f"f{n}.txt"}).startswith(f"1 {n}\n")
    with ThreadPoolExecutor(4) as threads:
        listed = list(threads.map(lambda _: fs_tools["list_dir"].invoke({"path": ""}), range(8)))
    assert all(text.splitlines()[0].startswith("f0.txt") for text in listed)
    loops = seen.loops["agent"]
    assert len(loops) >= 18
    assert len(set(loops)) == 1  # what a loop-bound store (a Redis client) needs
    assert not loops[0].is_closed()


def test_the_loop_of_the_sync_calls_ends_with_the_tools(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    fs_tools = tools(local(tmp_path, **{"a.txt": "a\n"}).context(owner="agent"))
    named(fs_tools)["read"].invoke({"file_path": "a.txt"})
    (loop_thread,) = set(threading.enumerate()) - before
    assert loop_thread.daemon
    del fs_tools
    gc.collect()
    loop_thread.join(timeout=10)
    assert not loop_thread.is_alive()


async def test_a_tool_node_runs_parallel_calls_and_reports_each(tmp_path: Path) -> None:
    fs_tools = tools(local(tmp_path, **{"a.txt": "a\n"}).context(owner="agent"))
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(fs_tools))
    graph.add_edge(START, "tools")
    node = graph.compile()
    turn = calls(
        ("read", {"file_path": "a.txt", "fresh": True}),  # (the second turn reads it again)
        ("read", {"file_path": "missing.txt"}),
        ("write", {"file_path": "a.txt", "content": "b\n", "mode": "bad"}),
        ("write", {"file_path": "a.txt", "content": "b\n", "self": 1}),  # (no clash)
    )
    for state in (node.invoke({"messages": [turn]}), await node.ainvoke({"messages": [turn]})):
        found, missing, invalid, clash = answers(state["messages"])
        assert [m.tool_call_id for m in (found, missing, invalid)] == ["call-1", "call-2", "call-3"]
        assert (found.status, found.content) == ("success", "1 a\n(end of file; lines 1-1 of 1)")
        assert missing.status == invalid.status == clash.status == "error"
        assert missing.text.startswith("Error [not_found]")
        assert invalid.text.startswith("Error [invalid_argument]: invalid arguments for write")
        assert clash.text.startswith("Error [invalid_argument]: invalid arguments for write")
    assert (tmp_path / "a.txt").read_text() == "a\n"


async def test_an_image_read_reaches_the_model_as_content_blocks(tmp_path: Path) -> None:
    png = image((40, 30))
    (tmp_path / "logo.png").write_bytes(png)
    fs_tools = named(tools(open_fs(str(tmp_path)).context(owner="agent")))
    reply = await fs_tools["read"].ainvoke(calls(("read", {"file_path": "logo.png"})).tool_calls[0])
    assert isinstance(reply, ToolMessage)
    assert isinstance(reply.content, list)
    text, picture = reply.content
    assert isinstance(text, dict)
    assert isinstance(picture, dict)
    assert text["type"] == "text"
    assert text["text"].startswith("Returned the image logo.png (image/png, 40x30 px,")
    assert (picture["type"], picture["mime_type"]) == ("image", "image/png")
    assert base64.b64decode(picture["base64"]) == png
    assert reply.artifact["kind"] == "image"
    assert "base64" not in str(reply.artifact)


def test_read_only_offers_only_the_readers_and_deferred_tools_come_through_discovery(
    tmp_path: Path,
) -> None:
    ctx = local(tmp_path, **{"a.txt": "a\n"}).context(owner="agent")
    model = ScriptedModel(messages=iter([AIMessage("done")]))
    react_agent(model, tools(ctx, FsToolset(ToolsetOptions(read_only=True))))
    assert model.tool_names == [
        "read",
        "list_dir",
        "glob",
        "grep",
        "search_tools",
        "call_tool",
    ]  # changes: deferred

    options = ToolsetOptions(exposure={"grep": Exposure.DEFERRED}, tool_prefix="fs_")
    fs_tools = named(tools(ctx, FsToolset(options)))
    assert "fs_grep" not in fs_tools
    assert {"fs_search_tools", "fs_call_tool"} <= set(fs_tools)
    found = fs_tools["fs_call_tool"].invoke({"name": "grep", "arguments": '{"pattern": "a"}'})
    assert found.startswith("a.txt")


def test_tools_bound_in_strict_mode_take_null_for_what_the_model_leaves_out(
    tmp_path: Path,
) -> None:
    # bind_tools(..., strict=True) makes every property required: each optional one takes null,
    # and a call sending nulls reads as one leaving them out.
    ctx = local(tmp_path, **{"a.txt": "one\ntwo\n"}).context(owner="agent")
    by_name = named(tools(ctx))
    for tool in by_name.values():
        parameters = convert_to_openai_tool(tool, strict=True)["function"]["parameters"]
        assert "default" not in str(parameters), tool.name
    read = convert_to_openai_tool(by_name["read"], strict=True)["function"]["parameters"]
    assert read["required"] == list(read["properties"])
    assert {"type": "null"} in read["properties"]["pages"]["anyOf"]
    nulls = dict.fromkeys(read["properties"]) | {"file_path": "a.txt"}
    assert by_name["read"].invoke(nulls).startswith("1 one\n2 two\n")


def test_a_tool_a_plugin_hides_in_a_step_is_listed_but_refused(tmp_path: Path) -> None:
    integrations = StaticIntegrations(off={"w1": ["docs"]})
    switch = IntegrationSwitch(integrations, key_of=lambda path: "docs", keys=["docs"])
    fs = Fs(LocalBackend(str(tmp_path)), plugins=[switch], load_entrypoints=False)
    (tmp_path / "guide.md").write_text("# guide\n")
    model = ScriptedModel(
        messages=iter([
            calls(("read", {"file_path": "guide.md"})),
            calls(("edit", {"file_path": "guide.md", "old_string": "guide", "new_string": "x"})),
            AIMessage("done"),
        ])
    )  # fmt: skip
    fs_tools = tools(fs.context(owner="agent", workspace="w1"))
    agent = react_agent(model, fs_tools)
    read, refused = answers(agent.invoke({"messages": [("user", "edit")]})["messages"])
    assert "edit" in model.tool_names  # LangChain's list is fixed
    assert read.status == "success"
    assert refused.status == "error"
    assert refused.text.startswith("Error [invalid_argument]: tool 'edit' is not offered in this")
    assert (tmp_path / "guide.md").read_text() == "# guide\n"

    integrations.switch("docs", on=True, workspace="w1")  # the same tool works from now on
    edit = {"file_path": "guide.md", "old_string": "guide", "new_string": "x"}
    assert named(fs_tools)["edit"].invoke(edit).startswith("Edited guide.md")


async def test_a_tool_a_plugin_defers_runs_through_call_tool_in_the_fixed_list() -> None:
    # The list is made once: call_tool is in it wherever plugins vote, though the
    # configuration defers nothing.
    fs = Fs(MemoryBackend(), plugins=[GrepDeferred()], load_entrypoints=False)
    await fs.context(owner="setup").fs.write("notes.txt", "hello\n")
    none_deferred = ToolsetOptions(exposure={"undo": Exposure.DIRECT, "changes": Exposure.DIRECT})
    listed = named(tools(fs.context(owner="agent"), FsToolset(none_deferred)))
    assert {"search_tools", "call_tool"} <= set(listed)
    found = await listed["call_tool"].ainvoke({"name": "grep", "arguments": '{"pattern": "hel"}'})
    assert "notes.txt:1: hello" in found


def test_the_example_runs_offline(tmp_path: Path) -> None:
    printed = run_example("with_langchain.py", tmp_path)
    assert printed == (
        f"tools: {', '.join(FILE_TOOLS)}\n"
        "1 alpha\n2 beta\n(end of file; lines 1-2 of 2)\n"
        "[error] Error [stale]: notes.md has changed since it was last read;"
        " what changed since your version:\n"
        "--- a/notes.md\n"
        "+++ b/notes.md\n"
        "@@ -1,2 +1,2 @@\n"
        " alpha\n"
        "-beta\n"
        "+BETA\n"
        f"Next: {STALE_HINT}\n"
        "[success] Edited notes.md: 1 replacement, line 2.\n"
        "@@ -2,1 +2,1 @@\n"
        "-BETA\n"
        "+gamma\n"
        "alpha\ngamma\n"
    )
