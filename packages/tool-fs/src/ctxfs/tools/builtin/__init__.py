"""The built-in tools, in the order they are offered, and the options of them all.

A tool is a package of :mod:`ctxfs.tools.builtin` and one entry of
:data:`BUILTIN_TOOLS`; a tool with options of its own adds its options model to
the bases of :class:`ToolsetOptions`.
"""

from dataclasses import dataclass
from typing import Any

from ctxfs.tools.builtin.apply_patch import APPLY_PATCH
from ctxfs.tools.builtin.call_tool import CALL_TOOL
from ctxfs.tools.builtin.changes import CHANGES
from ctxfs.tools.builtin.create_directory import CREATE_DIRECTORY
from ctxfs.tools.builtin.delete import DELETE
from ctxfs.tools.builtin.edit import EDIT
from ctxfs.tools.builtin.glob import GLOB, GlobOptions
from ctxfs.tools.builtin.grep import GREP, GrepOptions
from ctxfs.tools.builtin.list_dir import LIST_DIR, ListDirOptions
from ctxfs.tools.builtin.move import MOVE
from ctxfs.tools.builtin.multi_edit import MULTI_EDIT
from ctxfs.tools.builtin.notebook_edit import NOTEBOOK_EDIT
from ctxfs.tools.builtin.patch_call import PATCH_CALL
from ctxfs.tools.builtin.read import READ, ReadOptions
from ctxfs.tools.builtin.search_tools import SEARCH_TOOLS
from ctxfs.tools.builtin.text_editor import TEXT_EDITOR, TextEditorOptions
from ctxfs.tools.builtin.undo import UNDO
from ctxfs.tools.builtin.write import WRITE
from ctxfs.tools.definitions import CommonOptions
from ctxfs.tools.tool import Tool
from ctxfs.tools.walk import WalkOptions

__all__ = ["BUILTIN_TOOLS", "ToolsetOptions"]

BUILTIN_TOOLS: tuple[Tool[Any, Any], ...] = (
    READ,
    WRITE,
    EDIT,
    MULTI_EDIT,
    APPLY_PATCH,
    NOTEBOOK_EDIT,
    DELETE,
    MOVE,
    CREATE_DIRECTORY,
    LIST_DIR,
    GLOB,
    GREP,
    UNDO,
    CHANGES,
    SEARCH_TOOLS,
    CALL_TOOL,
    TEXT_EDITOR,
    PATCH_CALL,
)
"""The tools every :class:`~ctxfs.tools.FsToolset` starts with."""


@dataclass(frozen=True, kw_only=True)
class ToolsetOptions(
    TextEditorOptions,
    ReadOptions,
    GrepOptions,
    GlobOptions,
    WalkOptions,
    ListDirOptions,
    CommonOptions,
):
    """Limits and exposure of the tools of one :class:`~ctxfs.tools.FsToolset`.

    The toolset's own (:class:`~ctxfs.tools.definitions.CommonOptions`), and each tool's.
    """
