"""Deprecated: each tool's arguments model lives in the tool's own module.

Import the models from :mod:`ctxfs.tools` (``from ctxfs.tools import ReadArgs``),
or ask a toolset (``FsToolset().tool("read").arguments``).
"""

import warnings

from ctxfs.tools.builtin import BUILTIN_TOOLS
from ctxfs.tools.builtin.call_tool import CallToolArgs
from ctxfs.tools.builtin.edit import EditArgs
from ctxfs.tools.builtin.glob import GlobArgs
from ctxfs.tools.builtin.grep import GrepArgs
from ctxfs.tools.builtin.list_dir import ListDirArgs
from ctxfs.tools.builtin.read import ReadArgs
from ctxfs.tools.builtin.search_tools import SearchToolsArgs
from ctxfs.tools.builtin.write import WriteArgs
from ctxfs.tools.tool import ToolArgs

__all__ = [
    "ARGUMENTS",
    "CallToolArgs",
    "EditArgs",
    "GlobArgs",
    "GrepArgs",
    "ListDirArgs",
    "ReadArgs",
    "SearchToolsArgs",
    "ToolArgs",
    "WriteArgs",
]

warnings.warn(
    "ctxfs.tools.arguments is deprecated: import the models from ctxfs.tools, or ask a "
    "toolset (FsToolset().tool(name).arguments)",
    DeprecationWarning,
    stacklevel=2,
)

ARGUMENTS = {tool.name: tool.arguments for tool in BUILTIN_TOOLS[:6]}
"""The file tools and their argument models, in the order they are offered."""
