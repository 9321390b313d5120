"""The tools ctxfs offers, one module each, in the order they are offered.

``read``, ``write``, ``edit``, ``multi_edit``, ``apply_patch``, ``notebook_edit``,
``delete``, ``move``, ``create_directory``, ``list_dir``, ``glob`` and ``grep`` work on files;
``search_tools`` and ``call_tool`` appear while some tool is deferred; the
Anthropic text editor stands for read, write, edit and list_dir for that
provider, and the Responses API's ``apply_patch`` for the ``apply_patch``
function on OpenAI's Responses API.
"""

from typing import Any

from ctxfs.tools.builtin.apply_patch import APPLY_PATCH
from ctxfs.tools.builtin.call_tool import CALL_TOOL
from ctxfs.tools.builtin.create_directory import CREATE_DIRECTORY
from ctxfs.tools.builtin.delete import DELETE
from ctxfs.tools.builtin.edit import EDIT
from ctxfs.tools.builtin.glob import GLOB
from ctxfs.tools.builtin.grep import GREP
from ctxfs.tools.builtin.list_dir import LIST_DIR
from ctxfs.tools.builtin.move import MOVE
from ctxfs.tools.builtin.multi_edit import MULTI_EDIT
from ctxfs.tools.builtin.notebook_edit import NOTEBOOK_EDIT
from ctxfs.tools.builtin.patch_call import PATCH_CALL
from ctxfs.tools.builtin.read import READ
from ctxfs.tools.builtin.search_tools import SEARCH_TOOLS
from ctxfs.tools.builtin.text_editor import TEXT_EDITOR
from ctxfs.tools.builtin.write import WRITE
from ctxfs.tools.tool import Tool

__all__ = ["BUILTIN_TOOLS"]

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
    SEARCH_TOOLS,
    CALL_TOOL,
    TEXT_EDITOR,
    PATCH_CALL,
)
"""The tools every :class:`~ctxfs.tools.FsToolset` starts with."""
