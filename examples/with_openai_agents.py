"""ctxfs's file tools in an OpenAI Agents SDK agent: ``python examples/with_openai_agents.py``.

With OPENAI_API_KEY set, gpt-5 fixes the typo. Without one, the SDK's scripted model reads
the file and edits it, and the run prints what each tool call returned to the model.
"""

import asyncio
import os

from agents import Agent, Model, RunConfig, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

from ctxfs.core import open_fs
from ctxfs.tools.openai_agents import tools

EDIT = {"file_path": "README.md", "old_string": "Helo", "new_string": "Hello"}
SCRIPT = [
    [function_call("read", {"file_path": "README.md"}, call_id="call-1")],
    [function_call("edit", EDIT, call_id="call-2")],
    [assistant_message("Fixed the typo.")],
]


async def main() -> None:
    """Run the agent over a README with a typo; print what the tools returned."""
    online = bool(os.environ.get("OPENAI_API_KEY"))
    model: str | Model = "gpt-5" if online else ScriptedModel(SCRIPT)
    async with open_fs("memory://") as fs:
        ctx = fs.context(owner="agent-1")
        await ctx.fs.write("README.md", "# Helo, world\n")
        agent = Agent(name="editor", model=model, tools=tools(ctx))
        run = await Runner.run(
            agent, "Fix the typo in README.md", run_config=RunConfig(tracing_disabled=not online)
        )
        for item in run.new_items:
            if item.type == "tool_call_output_item":
                print(item.output)
        print(run.final_output)
        print((await ctx.fs.read("README.md")).text, end="")


asyncio.run(main())
