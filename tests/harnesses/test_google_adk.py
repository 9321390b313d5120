"""The ctxfs tools in Google ADK: runs of its InMemoryRunner with a scripted model.

The model is a minimal ``BaseLlm`` that answers each request with the next scripted turn
and keeps the requests, so each test checks what the model got: the function responses
in the next request's contents, and the function declarations it was offered. Nothing
reaches Google: no API key is set and no telemetry exporter is configured.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import Field

from ctxfs.core import Context, Fs, MemoryBackend
from ctxfs.tools import FsToolset, ToolsetOptions
from ctxfs.tools.google_adk import CtxfsToolset, toolset
from tests.harnesses.common import EditSwitch, run_example
from tests.tools.media import dimensions, image

pytestmark = pytest.mark.anyio

KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT")
EXPORTERS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "GOOGLE_CLOUD_AGENT_ENGINE_ID")

Turn = list[types.Part] | Callable[[], Awaitable[list[types.Part]]]
"""One model turn: its parts, or what makes them (after setting the scene)."""


@pytest.fixture
def anyio_backend() -> str:
    """ADK runs on asyncio only."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key for Google's APIs, no telemetry exporter: a run cannot reach Google."""
    for name in (*KEYS, *EXPORTERS):
        monkeypatch.delenv(name, raising=False)


class ScriptedLlm(BaseLlm):
    """A model that answers each request with the next turn of its script, then "Done."."""

    script: list[Turn]
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        turn = self.script.pop(0) if self.script else [types.Part.from_text(text="Done.")]
        parts = turn if isinstance(turn, list) else await turn()
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def call(name: str, **args: Any) -> list[types.Part]:
    return [types.Part.from_function_call(name=name, args=args)]


async def run(tools: CtxfsToolset, *turns: Turn, runs: int = 1) -> ScriptedLlm:
    """Run an agent with *tools* whose model takes *turns* (*runs* user messages)."""
    model = ScriptedLlm(model="scripted", script=list(turns))
    agent = LlmAgent(name="coder", model=model, tools=[tools])
    async with InMemoryRunner(agent=agent) as runner:
        session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
        for _ in range(runs):
            message = types.Content(role="user", parts=[types.Part.from_text(text="Go.")])
            async for _event in runner.run_async(
                user_id="u", session_id=session.id, new_message=message
            ):
                pass
    assert not model.script
    return model


def responses(model: ScriptedLlm) -> list[types.FunctionResponse]:
    """Every function response the model got, in order, as the last request holds them."""
    return [
        part.function_response
        for content in model.requests[-1].contents
        for part in content.parts or ()
        if part.function_response is not None
    ]


def answers(model: ScriptedLlm) -> list[dict[str, Any]]:
    """The response dict of each function response the model got."""
    return [response.response or {} for response in responses(model)]


def declarations(request: LlmRequest) -> list[types.FunctionDeclaration]:
    """The functions *request* offers the model."""
    return [
        declaration
        for tool in request.config.tools or ()
        if isinstance(tool, types.Tool)
        for declaration in tool.function_declarations or ()
    ]


def declared(request: LlmRequest) -> list[str]:
    """The names of the functions *request* offers the model."""
    return [declaration.name or "" for declaration in declarations(request)]


async def test_an_edit_after_an_outside_change_is_stale_and_shows_the_diff(
    fs: Fs, ctx: Context
) -> None:
    async def outside_change() -> list[types.Part]:
        other = fs.context(owner="someone-else")
        await other.fs.read("notes.txt")
        await other.fs.edit("notes.txt", "hello", "hi")
        return call("edit", file_path="notes.txt", old_string="hello", new_string="howdy")

    model = await run(toolset(ctx), call("read", file_path="notes.txt"), outside_change)
    read, stale = answers(model)
    assert read["result"].startswith("1 hello")
    hint = (
        "The diff shows what changed since your read; it counts as a read of the current"
        " version: redo your change against it (no read needed)."
    )
    assert stale == {
        "error": (
            "Error [stale]: notes.txt has changed since it was last read;"
            " what changed since your version:\n"
            "--- a/notes.txt\n"
            "+++ b/notes.txt\n"
            "@@ -1 +1 @@\n"
            "-hello\n"
            "+hi\n"
            f"Next: {hint}"
        ),
        "code": "stale",
        "hint": hint,
    }
    assert [response.name for response in responses(model)] == ["read", "edit"]
    assert (await ctx.fs.read("notes.txt")).text == "hi\n"


async def test_an_edit_of_what_was_read_is_applied(ctx: Context) -> None:
    model = await run(
        toolset(ctx),
        call("read", file_path="notes.txt"),
        call("edit", file_path="notes.txt", old_string="hello", new_string="howdy"),
    )
    edited = answers(model)[1]
    assert list(edited) == ["result"]
    assert edited["result"].startswith("Edited notes.txt: 1 replacement, line 1.")
    assert (await ctx.fs.read("notes.txt")).text == "howdy\n"


async def test_each_tool_declares_its_json_schema(ctx: Context) -> None:
    model = await run(toolset(ctx))
    offered = declarations(model.requests[0])
    definitions = await FsToolset().tools(ctx)
    assert [d.name for d in offered] == [d.name for d in definitions]
    assert offered[0].parameters_json_schema == definitions[0].input_schema
    assert offered[0].description == definitions[0].description


async def test_an_image_read_reaches_the_model_as_a_function_response_part(ctx: Context) -> None:
    await ctx.fs.write_bytes("dot.png", image((8, 6)))
    model = await run(toolset(ctx), call("read", file_path="dot.png"))
    (response,) = responses(model)
    assert list(response.response or {}) == ["result"]
    assert "dot.png" in (response.response or {})["result"]
    (part,) = response.parts or []
    assert part.inline_data is not None
    assert part.inline_data.mime_type == "image/png"
    assert dimensions(part.inline_data.data or b"") == ("PNG", (8, 6))


async def test_read_only_offers_no_tool_that_writes(ctx: Context) -> None:
    reading = FsToolset(ToolsetOptions(read_only=True))
    model = await run(
        toolset(ctx, reading),
        call("edit", file_path="notes.txt", old_string="hello", new_string="howdy"),
    )
    assert declared(model.requests[0]) == [
        "read",
        "list_dir",
        "glob",
        "grep",
        "search_tools",
        "call_tool",
    ]  # changes: deferred
    (refused,) = answers(model)
    assert "no tool with that name" in refused["error"]  # ADK's answer to an unknown name
    assert (await ctx.fs.read("notes.txt")).text == "hello\n"


async def test_a_tool_a_plugin_hides_is_not_offered_in_that_step() -> None:
    switch = EditSwitch(hiding=False)
    fs = Fs(MemoryBackend(), plugins=[switch], load_entrypoints=False)
    await fs.context(owner="setup").fs.write("notes.txt", "hello\n")
    ctx = fs.context(owner="agent-1")

    async def hide_edit() -> list[types.Part]:
        switch.hiding = True
        return call("read", file_path="notes.txt")

    # ADK lists a toolset once per invocation (one user message): that is the step.
    model = await run(toolset(ctx), hide_edit, [types.Part.from_text(text="Read it.")], runs=2)
    first, same_invocation, next_invocation = (declared(r) for r in model.requests)
    assert "edit" in first
    assert same_invocation == first
    assert "edit" not in next_invocation
    assert "read" in next_invocation


def test_the_example_runs_offline(tmp_path: Path) -> None:
    printed = run_example("with_google_adk.py", tmp_path)
    assert printed.splitlines() == [
        "read -> 1 # Helo, world",
        "(end of file; lines 1-1 of 1)",
        "edit -> Edited README.md: 1 replacement, line 1.",
        "@@ -1,1 +1,1 @@",
        "-# Helo, world",
        "+# Hello, world",
        "Fixed the typo.",
        "# Hello, world",
    ]
