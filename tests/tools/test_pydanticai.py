"""The pydantic-ai toolset, driven by pydantic-ai's own agent loop with a scripted model."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext, models
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxfs.core import ABSENT, Context, Fs, MemoryBackend
from ctxfs.core.policies import IntegrationSwitch, StaticIntegrations
from ctxfs.tools.pydanticai import CtxfsToolset
from tests.tools.conftest import DEFAULT_TOOLS
from tests.tools.media import image

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # pydantic-ai runs on asyncio only


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    allowed, models.ALLOW_MODEL_REQUESTS = models.ALLOW_MODEL_REQUESTS, False
    yield
    models.ALLOW_MODEL_REQUESTS = allowed


@dataclass
class Step:
    """What the scripted model saw in one request."""

    tools: list[str]
    returns: list[ToolReturnPart]


def text(part: ToolReturnPart) -> str:
    assert isinstance(part.content, str)
    return part.content


def scripted(*turns: list[ToolCallPart], seen: list[Step]) -> FunctionModel:
    """A model that makes the calls of each turn in order, then answers "done"."""
    queue = list(turns)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts
        returns = [part for part in last if isinstance(part, ToolReturnPart)]
        seen.append(Step(sorted(tool.name for tool in info.function_tools), returns))
        if queue:
            return ModelResponse(parts=list(queue.pop(0)))
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


async def seeded() -> Fs:
    backend = MemoryBackend()
    await backend.write("notes.md", b"alpha\r\nbeta\r\n", expect=ABSENT)
    await backend.write("docs/guide.md", b"# guide\n", expect=ABSENT)
    return Fs(backend, load_entrypoints=False)


async def test_an_agent_reads_edits_and_writes_through_the_toolset() -> None:
    fs = await seeded()
    seen: list[Step] = []
    model = scripted(
        [ToolCallPart("read", {"file_path": "notes.md"}, tool_call_id="r1")],
        [ToolCallPart("edit", {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}, tool_call_id="e1")],
        [ToolCallPart("write", {"file_path": "summary.md", "content": "one\ntwo\n"}, tool_call_id="w1"),
         ToolCallPart("write", {"file_path": "notes.md", "content": "x\n", "mode": "bad"}, tool_call_id="w2")],
        seen=seen,
    )  # fmt: skip
    agent = Agent(model, deps_type=Context, toolsets=[CtxfsToolset()])
    result = await agent.run("tidy the notes", deps=fs.context(owner="agent"))

    assert result.output == "done"
    read, edit, (created, refused) = (step.returns for step in seen[1:4])
    assert text(read[0]).startswith("1 alpha\n2 beta\n")
    assert read[0].metadata["content"] == "alpha\nbeta\n"
    assert text(edit[0]).startswith("Edited notes.md: 1 replacement")
    assert text(created) == "Created summary.md (2 lines, 8 bytes)."
    assert text(refused).startswith("Error [invalid_argument]")
    assert refused.metadata["error"]["code"] == "invalid_argument"
    assert (await fs.backend.read("notes.md")).data == b"alpha\r\ngamma\r\n"
    assert (await fs.backend.read("summary.md")).data == b"one\ntwo\n"
    assert seen[0].tools == sorted(DEFAULT_TOOLS)


async def test_with_the_switch_off_the_model_never_sees_the_write_tools() -> None:
    integrations = StaticIntegrations(off={"w1": ["docs"]})
    switch = IntegrationSwitch(
        integrations,
        key_of=lambda path: "docs" if path.startswith("docs/") else None,
        keys=["docs"],
    )
    fs = await seeded()
    fs.plugin_manager.register(switch)
    seen: list[Step] = []
    model = scripted(
        [ToolCallPart("read", {"file_path": "docs/guide.md"})],
        [
            ToolCallPart(
                "edit", {"file_path": "docs/guide.md", "old_string": "guide", "new_string": "x"}
            )
        ],
        seen=seen,
    )
    agent = Agent(model, deps_type=Context, toolsets=[CtxfsToolset()])
    await agent.run("edit the guide", deps=fs.context(owner="agent", workspace="w1"))
    assert all("write" not in step.tools and "edit" not in step.tools for step in seen)
    assert text(seen[2].returns[0]).startswith("Unknown tool name: 'edit'")  # pydantic-ai's
    assert (await fs.backend.read("docs/guide.md")).data == b"# guide\n"

    integrations.switch("docs", on=True, workspace="w1")
    seen.clear()
    model = scripted(seen=seen)
    await Agent(model, deps_type=Context, toolsets=[CtxfsToolset()]).run(
        "look", deps=fs.context(owner="agent", workspace="w1")
    )
    assert "write" in seen[0].tools


async def test_the_context_can_come_from_richer_deps() -> None:
    @dataclass
    class Deps:
        user: str
        ctx: Context

    fs = await seeded()
    seen: list[Step] = []
    model = scripted([ToolCallPart("list_dir", {"path": ""})], seen=seen)

    def context(run: RunContext[Any]) -> Context:
        return run.deps.ctx  # type: ignore[no-any-return]

    agent = Agent(model, deps_type=Deps, toolsets=[CtxfsToolset(context=context)])
    await agent.run("look", deps=Deps(user="ann", ctx=fs.context(owner="ann")))
    assert text(seen[1].returns[0]).splitlines()[:2] == ["docs/", "notes.md  (13 B)"]


async def test_deps_that_are_not_a_context_are_a_clear_error() -> None:
    seen: list[Step] = []
    agent = Agent(scripted(seen=seen), toolsets=[CtxfsToolset()])
    with pytest.raises(TypeError, match="deps to be a ctxfs Context"):
        await agent.run("look")


async def test_an_image_read_reaches_the_model_as_binary_content() -> None:
    fs = await seeded()
    png = image((40, 30))
    await fs.backend.write("logo.png", png, expect=ABSENT)
    seen: list[Step] = []
    model = scripted(
        [ToolCallPart("read", {"file_path": "logo.png"}, tool_call_id="r1")], seen=seen
    )
    agent = Agent(model, deps_type=Context, toolsets=[CtxfsToolset()])
    await agent.run("look at the logo", deps=fs.context(owner="agent"))

    (returned,) = seen[1].returns
    assert isinstance(returned.content, list)
    text, picture = returned.content
    assert isinstance(text, str)
    assert text.startswith("Returned the image logo.png (image/png, 40x30 px,")
    assert isinstance(picture, BinaryContent)
    assert (picture.media_type, picture.data) == ("image/png", png)
    assert returned.metadata["kind"] == "image"
    assert returned.metadata["image"]["width"] == 40
