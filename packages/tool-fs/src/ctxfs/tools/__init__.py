"""ctxfs tools: the model-facing file tools over ``ctx.fs``.

::

    from ctxfs.core import open_fs
    from ctxfs.tools import FsToolset

    tools = FsToolset()
    async with open_fs("/srv/workspace") as fs:
        ctx = fs.context(owner="agent-1")
        offered = await tools.definitions(ctx, provider="openai")
        result = await tools.execute(ctx, "read", {"file_path": "README.md"})
        result.text, result.data, result.is_error, result.error_code

Tools: ``read``, ``write``, ``edit``, ``list_dir``, ``glob``, ``grep`` (and, when
some are deferred, ``search_tools`` and ``call_tool``).
"""

from importlib.metadata import version

from ctxfs.tools.arguments import (
    ARGUMENTS,
    CallToolArgs,
    EditArgs,
    GlobArgs,
    GrepArgs,
    ListDirArgs,
    ReadArgs,
    SearchToolsArgs,
    ToolArgs,
    WriteArgs,
)
from ctxfs.tools.definitions import DEFAULT_IGNORE, Exposure, ToolDefinition, ToolsetOptions
from ctxfs.tools.results import ToolResult
from ctxfs.tools.toolset import FsToolset, Provider

__all__ = [
    "ARGUMENTS",
    "DEFAULT_IGNORE",
    "CallToolArgs",
    "EditArgs",
    "Exposure",
    "FsToolset",
    "GlobArgs",
    "GrepArgs",
    "ListDirArgs",
    "Provider",
    "ReadArgs",
    "SearchToolsArgs",
    "ToolArgs",
    "ToolDefinition",
    "ToolResult",
    "ToolsetOptions",
    "WriteArgs",
    "__version__",
]

__version__ = version("ctxfs-tools")
