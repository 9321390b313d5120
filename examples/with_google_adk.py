"""ctxfs's file tools in a Google ADK agent: ``python examples/with_google_adk.py``.

With GOOGLE_API_KEY set, Gemini fixes the typo. Without one, a scripted model reads the
file and edits it, and the run prints what each tool call returned to the model.
"""

import asyncio
import os
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from ctxfs.core import open_fs
from ctxfs.tools import google_adk

SCRIPT = [
    types.Part.from_function_call(name="read", args={"file_path": "README.md"}),
    types.Part.from_function_call(
        name="edit", args={"file_path": "README.md", "old_string": "Helo", "new_string": "Hello"}
    ),
    types.Part.from_text(text="Fixed the typo."),
]
USAGE = types.GenerateContentResponseUsageMetadata(prompt_token_count=0, candidates_token_count=0)


class ScriptedLlm(BaseLlm):
    """Plays the model offline: prints the tool's answer, then takes its next scripted turn."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One model turn: the next of SCRIPT, after the prompt and each call and answer."""
        answer = (llm_request.contents[-1].parts or [types.Part()])[0].function_response
        if answer is not None and answer.response is not None:
            print(f"{answer.name} -> {answer.response.get('result', answer.response)}")
        turn = SCRIPT[len(llm_request.contents) // 2]
        yield LlmResponse(content=types.ModelContent(turn), usage_metadata=USAGE)


async def main() -> None:
    """Fix the typo in a README.md held in memory, as the owner ``agent-1``."""
    model = "gemini-2.5-flash" if os.environ.get("GOOGLE_API_KEY") else ScriptedLlm(model="-")
    async with open_fs("memory://") as fs:
        ctx = fs.context(owner="agent-1")
        await ctx.fs.write("README.md", "# Helo, world\n")
        agent = LlmAgent(name="editor", model=model, tools=[google_adk.toolset(ctx)])
        async with InMemoryRunner(agent=agent) as runner:
            events = await runner.run_debug("Fix the typo in README.md", quiet=True)
        print(events[-1].content.parts[0].text if events[-1].content else "")
        print((await ctx.fs.read("README.md")).text, end="")


asyncio.run(main())
