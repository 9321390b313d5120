"""ctxfs's file tools as LangChain tools, run offline: ``python examples/with_langchain.py``.

With a chat model, ``model.bind_tools(fs_tools)`` offers them and LangGraph's ``ToolNode``
runs its calls; here the calls are made by hand, as a model's tool calls.
"""

import tempfile
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

from ctxfs.core import open_fs
from ctxfs.tools.langchain import tools

with tempfile.TemporaryDirectory() as root:
    Path(root, "notes.md").write_text("alpha\nbeta\n")
    fs_tools = tools(open_fs(root).context(owner="agent-1"))
    by_name = {tool.name: tool for tool in fs_tools}
    print("tools:", ", ".join(by_name))

    def call(name: str, **args: Any) -> ToolMessage:
        """Run a tool call as a model makes it; the reply is what the model reads next."""
        tool_call = {"type": "tool_call", "id": f"call-{name}", "name": name, "args": args}
        reply: ToolMessage = by_name[name].invoke(tool_call)
        return reply

    print(call("read", file_path="notes.md").content)
    Path(root, "notes.md").write_text("alpha\nBETA\n")  # someone else changes the file
    stale = call("edit", file_path="notes.md", old_string="beta", new_string="gamma")
    print(f"[{stale.status}]", stale.content)
    # The diff counts as a read of the current version: the change is redone against it,
    # with no read in between.
    redone = call("edit", file_path="notes.md", old_string="BETA", new_string="gamma")
    print(f"[{redone.status}]", redone.content)
    print(Path(root, "notes.md").read_text(), end="")
