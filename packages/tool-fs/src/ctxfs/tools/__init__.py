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
deferred, ``search_tools`` and ``call_tool``). Each is one package of :mod:`ctxfs.tools.builtin`; a
tool of your own is a :class:`Tool` subclass and one line:
``FsToolset(tools=(*BUILTIN_TOOLS, MyTool()))``.

Each name loads its module on first use, so that a program that needs a few (``ctxfs --version``, a
harness of its own tools) does not pay for them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ctxfs.tools.builtin import BUILTIN_TOOLS, ToolsetOptions
    from ctxfs.tools.builtin.apply_patch import ApplyPatchArgs, PatchData, PatchedFileData
    from ctxfs.tools.builtin.call_tool import CallToolArgs
    from ctxfs.tools.builtin.edit import EditArgs
    from ctxfs.tools.builtin.glob import GlobArgs, GlobData
    from ctxfs.tools.builtin.grep import GrepArgs, GrepData, GrepMatch
    from ctxfs.tools.builtin.list_dir import EntryData, ListData, ListDirArgs
    from ctxfs.tools.builtin.patch_call import answer_patch_call
    from ctxfs.tools.builtin.read import ReadArgs, ReadData
    from ctxfs.tools.builtin.read.media import ImageInfo, NotebookInfo, PdfInfo
    from ctxfs.tools.builtin.search_tools import SearchToolsArgs, SearchToolsData, ToolSummary
    from ctxfs.tools.builtin.text_editor import InsertData
    from ctxfs.tools.builtin.write import WriteArgs, WriteData
    from ctxfs.tools.definitions import Exposure, ToolDefinition
    from ctxfs.tools.offers import Offer
    from ctxfs.tools.providers import Provider
    from ctxfs.tools.results import (
        EditData,
        ErrorInfo,
        MediaPart,
        ResultData,
        ToolResult,
        anthropic_tool_result,
        openai_chat_messages,
        openai_function_call_output,
    )
    from ctxfs.tools.tool import Annotations, Limits, Offering, Progress, Step, Tool, ToolArgs
    from ctxfs.tools.toolset import FsToolset
    from ctxfs.tools.walk import DEFAULT_IGNORE

    __version__: str

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

_EXPORTS: Final = {
    "builtin": ("BUILTIN_TOOLS", "ToolsetOptions"),
    "builtin.apply_patch": ("ApplyPatchArgs", "PatchData", "PatchedFileData"),
    "builtin.call_tool": ("CallToolArgs",),
    "builtin.edit": ("EditArgs",),
    "builtin.glob": ("GlobArgs", "GlobData"),
    "builtin.grep": ("GrepArgs", "GrepData", "GrepMatch"),
    "builtin.list_dir": ("EntryData", "ListData", "ListDirArgs"),
    "builtin.patch_call": ("answer_patch_call",),
    "builtin.read": ("ReadArgs", "ReadData"),
    "builtin.search_tools": ("SearchToolsArgs", "SearchToolsData", "ToolSummary"),
    "builtin.text_editor": ("InsertData",),
    "builtin.write": ("WriteArgs", "WriteData"),
    "walk": ("DEFAULT_IGNORE",),
    "definitions": ("Exposure", "ToolDefinition"),
    "builtin.read.media": ("ImageInfo", "NotebookInfo", "PdfInfo"),
    "results": (
        "anthropic_tool_result",
        "openai_chat_messages",
        "openai_function_call_output",
        "EditData",
        "ErrorInfo",
        "MediaPart",
        "ResultData",
        "ToolResult",
    ),
    "tool": ("Annotations", "Limits", "Offering", "Progress", "Step", "Tool", "ToolArgs"),
    "toolset": ("FsToolset",),
    "offers": ("Offer",),
    "providers": ("Provider",),
}
"""The public names, by the module (under ``ctxfs.tools``) each comes from."""
_HOMES: Final = {name: home for home, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version  # noqa: PLC0415

        value: Any = version("ctxfs-tools")
    elif name in _HOMES:
        value = getattr(importlib.import_module(f"ctxfs.tools.{_HOMES[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
