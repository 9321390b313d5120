"""A pydantic-ai agent fixes a typo with the ctxfs tools; a scripted model plays the LLM.

Run ``python examples/with_pydantic_ai.py`` (offline, no API key; needs
``ctxfs-tools[pydantic-ai]``). For a real model, pass ``"openai:gpt-5"`` (or any model
pydantic-ai knows) to ``Agent`` in place of ``FunctionModel(script)``.
"""

import tempfile
from pathlib import Path

import anyio
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxfs.core import Context, open_fs
from ctxfs.tools.pydanticai import CtxfsToolset

CALLS = [  # what the scripted model asks for, one call a step
    ToolCallPart("read", {"file_path": "hello.py"}),
    ToolCallPart("edit", {"file_path": "hello.py", "old_string": "Helo", "new_string": "Hello"}),
]


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model's turn: it reads what its last call returned, then makes the next, or stops."""
    for part in messages[-1].parts:
        if isinstance(part, ToolReturnPart):
            print(f"{part.tool_name} -> {part.content}")  # the text the model reads
    step = len(messages) // 2  # the prompt, then a response and its tool return each step
    return ModelResponse(parts=[CALLS[step] if step < len(CALLS) else TextPart("Fixed it.")])


async def main(root: str) -> None:
    """Run the agent on the directory *root*, as the owner ``agent-1``."""
    agent = Agent(FunctionModel(script), deps_type=Context, toolsets=[CtxfsToolset()])
    async with open_fs(root) as fs:
        run = await agent.run("Fix the typo in hello.py", deps=fs.context(owner="agent-1"))
    print(run.output)


with tempfile.TemporaryDirectory() as root:
    Path(root, "hello.py").write_text('print("Helo, world")\n')
    anyio.run(main, root)
    print(Path(root, "hello.py").read_text(), end="")
