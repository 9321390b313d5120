"""Deprecated: Anthropic's text editor tool is :mod:`ctxfs.tools.builtin.text_editor`."""

import warnings
from collections.abc import Mapping
from typing import Any

from ctxfs.tools.builtin.text_editor import (
    EDITOR_NAME,
    EDITOR_TYPE,
    TEXT_EDITOR,
    Create,
    EditorCommand,
    Insert,
    StrReplace,
    View,
)

__all__ = [
    "EDITOR_NAME",
    "EDITOR_TYPE",
    "Create",
    "EditorCommand",
    "Insert",
    "StrReplace",
    "View",
    "parse_command",
]

warnings.warn(
    "ctxfs.tools.editor is deprecated: use ctxfs.tools.builtin.text_editor",
    DeprecationWarning,
    stacklevel=2,
)


def parse_command(arguments: Mapping[str, Any]) -> View | Create | StrReplace | Insert:
    """Validate one text-editor call (``TEXT_EDITOR.parse(arguments).root``)."""
    return TEXT_EDITOR.parse(arguments).root
