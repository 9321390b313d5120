"""ctxfs tools: the model-facing file tools over ``ctx.fs``.

::

    from ctxfs.core import open_fs
    from ctxfs.tools import FsToolset

    tools = FsToolset()
    async with open_fs("/srv/workspace") as fs:
        ctx = fs.context(owner="agent-1")
        offered = await tools.definitions(ctx, provider="openai")
        result = await tools.execute(ctx, "read", {"file_path": "README.md"})
        result.text, result.data, result.is_error, result.error_code, result.media

Tools: ``read``, ``write``, ``edit``, ``multi_edit``, ``apply_patch``, ``notebook_edit``,
``delete``, ``move``, ``create_directory``, ``list_dir``, ``glob``, ``grep`` (and, when some are
deferred, ``search_tools`` and ``call_tool``). Each is one module of
:mod:`ctxfs.tools.builtin`; a tool of your own is a :class:`Tool` subclass and
one :meth:`FsToolset.register` call.
"""

from importlib.metadata import version
from typing import Any

from ctxfs.tools.builtin import BUILTIN_TOOLS
from ctxfs.tools.builtin.apply_patch import ApplyPatchArgs, PatchData, PatchedFileData
from ctxfs.tools.builtin.call_tool import CallToolArgs
from ctxfs.tools.builtin.edit import EditArgs
from ctxfs.tools.builtin.glob import GlobArgs, GlobData
from ctxfs.tools.builtin.grep import GrepArgs, GrepData, GrepMatch
from ctxfs.tools.builtin.list_dir import EntryData, ListData, ListDirArgs
from ctxfs.tools.builtin.patch_call import answer_patch_call
from ctxfs.tools.builtin.read import ReadArgs, ReadData
from ctxfs.tools.builtin.search_tools import SearchToolsArgs, SearchToolsData, ToolSummary
from ctxfs.tools.builtin.text_editor import InsertData
from ctxfs.tools.builtin.write import WriteArgs, WriteData
from ctxfs.tools.definitions import DEFAULT_IGNORE, Exposure, ToolDefinition, ToolsetOptions
from ctxfs.tools.readers import ImageInfo, NotebookInfo, PdfInfo
from ctxfs.tools.replies import (
    anthropic_tool_result,
    openai_chat_messages,
    openai_function_call_output,
)
from ctxfs.tools.results import EditData, ErrorInfo, MediaPart, ResultData, ToolResult
from ctxfs.tools.tool import Annotations, Limits, Offering, Progress, Step, Tool, ToolArgs
from ctxfs.tools.toolset import FsToolset, Offer, Provider

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_IGNORE",
    "Annotations",
    "ApplyPatchArgs",
    "CallToolArgs",
    "EditArgs",
    "EditData",
    "EntryData",
    "ErrorInfo",
    "Exposure",
    "FsToolset",
    "GlobArgs",
    "GlobData",
    "GrepArgs",
    "GrepData",
    "GrepMatch",
    "ImageInfo",
    "InsertData",
    "Limits",
    "ListData",
    "ListDirArgs",
    "MediaPart",
    "NotebookInfo",
    "Offer",
    "Offering",
    "PatchData",
    "PatchedFileData",
    "PdfInfo",
    "Progress",
    "Provider",
    "ReadArgs",
    "ReadData",
    "ResultData",
    "SearchToolsArgs",
    "SearchToolsData",
    "Step",
    "Tool",
    "ToolArgs",
    "ToolDefinition",
    "ToolResult",
    "ToolSummary",
    "ToolsetOptions",
    "WriteArgs",
    "WriteData",
    "__version__",
    "answer_patch_call",
    "anthropic_tool_result",
    "openai_chat_messages",
    "openai_function_call_output",
]

__version__ = version("ctxfs-tools")


def __getattr__(name: str) -> Any:
    if name == "ARGUMENTS":  # the table of argument models this module used to export
        import warnings  # noqa: PLC0415

        warnings.warn(
            "ctxfs.tools.ARGUMENTS is deprecated: each tool holds its arguments model "
            "(FsToolset().tool(name).arguments)",
            DeprecationWarning,
            stacklevel=2,
        )
        return {tool.name: tool.arguments for tool in BUILTIN_TOOLS[:6]}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
