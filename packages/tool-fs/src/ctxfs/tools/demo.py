"""``ctxfs demo``: two scripted agents on a throw-away workspace, through the real tools.

Alice and Bob both read ``app.py`` (a CRLF file). Bob edits it first, so Alice's edit fails
``stale``, showing her what changed; that counts as her read, so she redoes it at once. Every
call goes through :meth:`FsToolset.execute` on the local backend, exactly as a model's would,
and the demo prints each call and the text the model would see.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Final, TextIO

from ctxfs.core import Context, open_fs
from ctxfs.tools.toolset import FsToolset

__all__ = ["SCRIPT", "run_demo"]

FILES: Final = {
    "app.py": (
        b'def greet(name):\r\n    return "Hello, " + name\r\n\r\n\r\nprint(greet("world"))\r\n'
    ),
    "README.md": b"# demo\n\nA throw-away workspace made by `ctxfs demo`.\n",
}

_TYPED: Final = {
    "file_path": "app.py",
    "old_string": "def greet(name):",
    "new_string": "def greet(name: str) -> str:",
}
SCRIPT: Final[list[tuple[str, str, dict[str, Any], str]]] = [
    ("alice", "list_dir", {"path": ""}, "looks around"),
    ("alice", "read", {"file_path": "app.py"}, "reads app.py"),
    ("bob", "read", {"file_path": "app.py"}, "reads it too"),
    (
        "bob",
        "edit",
        {"file_path": "app.py", "old_string": '"Hello, "', "new_string": '"Hi, "'},
        "changes the greeting first",
    ),
    ("alice", "edit", _TYPED, "edits what she read: refused, the file changed"),
    ("alice", "edit", _TYPED, "redoes her edit on Bob's version (the diff she was shown: a read)"),
    ("alice", "grep", {"pattern": "greet"}, "checks every use"),
    ("bob", "write", {"file_path": "NOTES.md", "content": "Reviewed app.py.\n"}, "adds a note"),
]
"""(agent, tool, arguments, what the step shows)."""


async def run_demo(*, keep: bool = False, out: TextIO) -> int:
    """Run :data:`SCRIPT` on a new temporary workspace, printing to *out*; return 0."""
    root = Path(tempfile.mkdtemp(prefix="ctxfs-demo-"))
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    print(f"Workspace: {root}\n", file=out)
    tools = FsToolset()
    try:
        async with open_fs(root) as fs:
            agents: dict[str, Context] = {}
            for step, (agent, tool, arguments, what) in enumerate(SCRIPT, 1):
                ctx = agents.setdefault(agent, fs.context(owner=agent))
                print(f"[{step}/{len(SCRIPT)}] {agent} {what}", file=out)
                print(f"  {agent} -> {tool} {json.dumps(arguments)}", file=out)
                result = await tools.execute(ctx, tool, arguments)
                marker = f"error [{result.error_code}]" if result.is_error else "ok"
                print(f"  <- {marker}", file=out)
                for line in result.text.splitlines():
                    print(f"     {line}", file=out)
                print(file=out, flush=True)
        app = (root / "app.py").read_bytes()
        endings, lines = app.count(b"\r\n"), app.count(b"\n")
        print(f"app.py kept its CRLF line endings ({endings} of {lines} lines).", file=out)
        print("Both changes are in; neither agent overwrote what it had not seen.", file=out)
    finally:
        if keep:
            print(f"Kept the workspace: {root}", file=out)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0
