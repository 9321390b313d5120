"""The ctxfs tools in the OpenAI Agents SDK: runs of its Runner with its own scripted model.

Each test scripts the model's calls (``agents.testing.ScriptedModel``) and checks what the
model got back: the ``function_call_output`` and ``apply_patch_call_output`` items of the
next model input, as the SDK builds them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    ApplyPatchOperation,
    FunctionTool,
    RunConfig,
    RunContextWrapper,
    Runner,
    Tool,
)
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from ctxfs.core import Context, Fs, MemoryBackend, NotFound, hookimpl
from ctxfs.tools import Exposure, FsToolset, ToolsetOptions
from ctxfs.tools.openai_agents import CtxfsEditor, tools
from tests.harnesses.common import EditSwitch, GrepDeferred, run_example
from tests.tools.media import image

pytestmark = pytest.mark.anyio

DONE = [assistant_message("Done.")]


@pytest.fixture
def anyio_backend() -> str:
    """The SDK's runner runs on asyncio only."""
    return "asyncio"


async def run(agent_tools: Sequence[Tool], *steps: Any) -> ScriptedModel:
    """Run an agent with *agent_tools* whose model takes *steps*, then says it is done."""
    model = ScriptedModel([*steps, DONE])
    agent = Agent(name="coder", model=model, tools=list(agent_tools))
    await Runner.run(agent, "Go.", run_config=RunConfig(tracing_disabled=True))
    model.assert_complete()
    return model


def answers(model: ScriptedModel) -> dict[str, Any]:
    """What each call returned to the model, by call id, as the last model input holds it."""
    final = model.calls[-1].input
    return {item["call_id"]: item for item in final if item.get("type", "").endswith("_output")}


def outputs(model: ScriptedModel) -> dict[str, Any]:
    """The ``output`` of each ``function_call_output`` the model got, by call id."""
    return {call_id: item["output"] for call_id, item in answers(model).items()}


async def exists(ctx: Context, path: str) -> bool:
    try:
        await ctx.fs.stat(path)
    except NotFound:
        return False
    return True


def offered(call: ModelCall) -> list[str]:
    return [tool.name for tool in call.tools]


def read(path: str, call_id: str) -> list[Any]:
    return [function_call("read", {"file_path": path}, call_id=call_id)]


def patch(call_id: str, **operation: str) -> dict[str, Any]:
    return {"type": "apply_patch_call", "call_id": call_id, "operation": operation}


def outside_change(fs: Fs, then: list[Any]) -> ModelStep:
    """A step that has someone else change notes.txt, then makes the model's calls *then*."""

    async def respond(call: ModelCall) -> list[Any]:
        del call
        other = fs.context(owner="someone-else")
        await other.fs.read("notes.txt")
        await other.fs.edit("notes.txt", "hello", "hi")
        return then

    return ModelStep.respond(respond)


def patching(ctx: Context, toolset: FsToolset | None = None) -> list[Tool]:
    """The tools with the hosted apply_patch in place of the ``apply_patch`` function."""
    return list(tools(ctx, toolset, hosted_apply_patch=True))


STALE = (
    "Error [stale]: notes.txt has changed since it was last read;"
    " what changed since your version:\n"
    "--- a/notes.txt\n"
    "+++ b/notes.txt\n"
    "@@ -1 +1 @@\n"
    "-hello\n"
    "+hi\n"
    "Next: The diff shows what changed since your read; it counts as a read of the current"
    " version: redo your change against it (no read needed)."
)
"""What the model gets for a change of notes.txt made stale by ``outside_change``."""


async def test_an_edit_after_an_outside_change_is_stale_and_shows_the_diff(
    fs: Fs, ctx: Context
) -> None:
    edit = {"file_path": "notes.txt", "old_string": "hello", "new_string": "howdy"}
    model = await run(
        tools(ctx),
        read("notes.txt", "call-1"),
        outside_change(fs, [function_call("edit", edit, call_id="call-2")]),
    )
    seen = outputs(model)
    assert seen["call-1"].startswith("1 hello")
    assert seen["call-2"] == STALE
    assert (await ctx.fs.read("notes.txt")).text == "hi\n"


async def test_an_edit_of_what_was_read_is_applied(ctx: Context) -> None:
    edit = {"file_path": "notes.txt", "old_string": "hello", "new_string": "howdy"}
    model = await run(
        tools(ctx), read("notes.txt", "call-1"), [function_call("edit", edit, call_id="call-2")]
    )
    assert outputs(model)["call-2"].startswith("Edited notes.txt: 1 replacement, line 1.")
    assert (await ctx.fs.read("notes.txt")).text == "howdy\n"


async def test_the_apply_patch_tool_updates_creates_and_deletes(fs: Fs, ctx: Context) -> None:
    await fs.context(owner="setup").fs.write("old.txt", "bye\n")
    model = await run(
        patching(ctx),
        [*read("notes.txt", "call-1"), *read("old.txt", "call-2")],
        [
            patch("patch-1", type="update_file", path="notes.txt", diff="@@\n-hello\n+howdy\n"),
            patch("patch-2", type="create_file", path="new.txt", diff="+fresh\n"),
            patch("patch-3", type="delete_file", path="old.txt"),
        ],
    )
    seen = answers(model)
    assert {seen[f"patch-{n}"]["status"] for n in (1, 2, 3)} == {"completed"}
    assert offered(model.calls[0]).count("apply_patch") == 1  # the hosted tool alone
    assert seen["patch-2"]["type"] == "apply_patch_call_output"
    assert seen["patch-2"]["output"] == "Success. Updated the following files:\nA new.txt"
    assert (await ctx.fs.read("notes.txt")).text == "howdy\n"
    assert (await ctx.fs.read("new.txt")).text == "fresh\n"
    assert not await exists(ctx, "old.txt")
    assert "apply_patch" in offered(model.calls[0])


async def test_a_stale_patch_is_refused_and_changes_nothing(fs: Fs, ctx: Context) -> None:
    update = patch("patch-1", type="update_file", path="notes.txt", diff="@@\n-hello\n+howdy\n")
    model = await run(patching(ctx), read("notes.txt", "call-1"), outside_change(fs, [update]))
    refused = answers(model)["patch-1"]
    assert refused["status"] == "failed"
    assert refused["output"] == STALE
    assert (await ctx.fs.read("notes.txt")).text == "hi\n"


async def test_the_editor_moves_an_updated_file_to_move_to(ctx: Context) -> None:
    await ctx.fs.read("notes.txt")
    editor = CtxfsEditor(ctx, FsToolset())
    moved = ApplyPatchOperation(
        type="update_file", path="notes.txt", diff="@@\n-hello\n+howdy\n", move_to="moved.txt"
    )
    result = await editor.update_file(moved)
    assert result.status == "completed"
    assert (await ctx.fs.read("moved.txt")).text == "howdy\n"
    assert not await exists(ctx, "notes.txt")


async def test_an_image_read_reaches_the_model_as_an_input_image(ctx: Context) -> None:
    png = image((8, 6))
    await ctx.fs.write_bytes("dot.png", png)
    model = await run(tools(ctx), read("dot.png", "call-1"))
    text, picture = outputs(model)["call-1"]
    assert text["type"] == "input_text"
    assert "dot.png" in text["text"]
    assert picture["type"] == "input_image"
    assert picture["image_url"].startswith("data:image/png;base64,")


async def test_read_only_offers_no_tool_that_writes(ctx: Context) -> None:
    reading = FsToolset(ToolsetOptions(read_only=True))
    model = await run(patching(ctx, reading), read("notes.txt", "call-1"))
    assert offered(model.calls[0]) == [
        "read",
        "list_dir",
        "glob",
        "grep",
        "search_tools",
        "call_tool",
    ]  # no hosted patch; changes is deferred
    first = model.calls[0].tools[0]
    assert isinstance(first, FunctionTool)
    assert first.strict_json_schema
    refused = await CtxfsEditor(ctx, reading).delete_file(
        ApplyPatchOperation(type="delete_file", path="notes.txt")
    )
    assert refused.status == "failed"
    assert refused.output is not None
    assert refused.output.startswith(
        "Error [invalid_argument]: tool 'apply_patch_call' stands for apply_patch, which this "
        "step does not offer; the tools offered are: read, "
    )
    assert await exists(ctx, "notes.txt")


async def test_a_deferred_tool_runs_through_the_prefixed_call_tool(ctx: Context) -> None:
    options = ToolsetOptions(exposure={"grep": Exposure.DEFERRED}, tool_prefix="fs_")
    grep = {"name": "grep", "arguments": '{"pattern": "hel"}'}
    model = await run(
        tools(ctx, FsToolset(options)), [function_call("fs_call_tool", grep, call_id="call-1")]
    )
    assert "fs_grep" not in offered(model.calls[0])
    assert {"fs_read", "fs_search_tools", "fs_call_tool"} <= set(offered(model.calls[0]))
    assert "notes.txt" in outputs(model)["call-1"]


async def test_a_tool_a_plugin_defers_runs_through_call_tool_though_the_list_defers_none() -> None:
    fs = Fs(MemoryBackend(), plugins=[GrepDeferred()], load_entrypoints=False)
    await fs.context(owner="setup").fs.write("notes.txt", "hello\n")
    ctx = fs.context(owner="agent-1")
    none_deferred = ToolsetOptions(exposure={"undo": Exposure.DIRECT, "changes": Exposure.DIRECT})
    grep = {"name": "grep", "arguments": '{"pattern": "hel"}'}
    model = await run(
        tools(ctx, FsToolset(none_deferred)),
        [function_call("call_tool", grep, call_id="call-1")],
    )
    assert "grep" not in offered(model.calls[0])
    assert {"search_tools", "call_tool"} <= set(offered(model.calls[0]))
    assert "notes.txt" in outputs(model)["call-1"]


async def test_a_tool_a_plugin_hides_is_not_offered_in_that_step() -> None:
    switch = EditSwitch(hiding=True)
    fs = Fs(MemoryBackend(), plugins=[switch], load_entrypoints=False)
    await fs.context(owner="setup").fs.write("notes.txt", "hello\n")
    ctx = fs.context(owner="agent-1")

    async def switch_on(call: ModelCall) -> list[Any]:
        del call
        switch.hiding = False
        return read("notes.txt", "call-1")

    agent_tools = tools(ctx)
    assert "edit" in [tool.name for tool in agent_tools]
    model = await run(agent_tools, ModelStep.respond(switch_on))
    assert "edit" not in offered(model.calls[0])
    assert "read" in offered(model.calls[0])
    assert "edit" in offered(model.calls[1])


class CountedExposure:
    """A plugin that offers everything, counting how often it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    @hookimpl
    def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> object:
        del ctx, tool
        self.asked += 1
        return None


async def test_a_step_asks_the_exposure_plugins_once_per_listing_of_the_tools() -> None:
    # The SDK asks every tool's is_enabled each time it lists them (twice per model call): one
    # offer serves them all, as one serves each call.
    counted = CountedExposure()
    fs = Fs(MemoryBackend(), plugins=[counted], load_entrypoints=False)
    await fs.context(owner="setup").fs.write("notes.txt", "hello\n")
    ctx = fs.context(owner="agent-1")
    agent_tools = tools(ctx)
    offered_tools = len((await FsToolset().offer(ctx)).exposure)
    counted.asked = 0
    model = await run(agent_tools, read("notes.txt", "call-1"))
    offers = 2 * len(model.calls) + 1  # (the read's own)
    assert counted.asked <= offers * offered_tools


class HangingExposure:
    """A plugin whose first answer never comes; it answers at once afterwards."""

    def __init__(self) -> None:
        self.asked = 0

    @hookimpl
    async def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> object:
        del ctx, tool
        self.asked += 1
        if self.asked == 1:
            await asyncio.Event().wait()
        return None


async def test_a_listing_given_up_on_does_not_hold_up_the_next() -> None:
    fs = Fs(MemoryBackend(), plugins=[HangingExposure()], load_entrypoints=False)
    (read_tool,) = [tool for tool in tools(fs.context(owner="agent-1")) if tool.name == "read"]
    assert isinstance(read_tool, FunctionTool)
    assert callable(read_tool.is_enabled)
    enabled = read_tool.is_enabled

    async def listed() -> bool:
        answer = enabled(RunContextWrapper(context=None), Agent(name="agent"))
        assert not isinstance(answer, bool)
        return await answer

    with pytest.raises(TimeoutError):  # (the SDK's caller gave up on the listing)
        await asyncio.wait_for(listed(), 0.2)
    assert await asyncio.wait_for(listed(), 10)


def test_the_example_runs_offline(tmp_path: Path) -> None:
    printed = run_example("with_openai_agents.py", tmp_path)
    assert printed.splitlines() == [
        "1 # Helo, world",
        "(end of file; lines 1-1 of 1)",
        "Edited README.md: 1 replacement, line 1.",
        "@@ -1,1 +1,1 @@",
        "-# Helo, world",
        "+# Hello, world",
        "Fixed the typo.",
        "# Hello, world",
    ]
