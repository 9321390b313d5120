"""Anthropic's text editor tool (``text_editor_20250728``), run as ctx.fs operations.

Claude models are trained on this client-executed tool. ctxfs advertises it in
place of ``read``, ``write``, ``edit`` and ``list_dir`` for the ``anthropic``
provider, and translates each of its commands into the same ``ctx.fs`` call,
with the same checks, as the generic tools: ``view`` is a read (or a listing for
a directory), ``create`` a write, ``str_replace`` an edit, ``insert`` an insert.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Final, Literal

from pydantic import Field, NonNegativeInt, TypeAdapter

from ctxfs.core import InvalidArgument
from ctxfs.tools.arguments import ToolArgs

__all__ = ["EDITOR_NAME", "EDITOR_TYPE", "EditorCommand", "parse_command"]

EDITOR_NAME: Final = "str_replace_based_edit_tool"
EDITOR_TYPE: Final = "text_editor_20250728"


class View(ToolArgs):
    """``view``: a file's lines (``[start, end]``, end -1 for the last) or a directory."""

    command: Literal["view"]
    path: str
    view_range: tuple[int, int] | None = None


class Create(ToolArgs):
    """``create``: write a whole file."""

    command: Literal["create"]
    path: str
    file_text: str


class StrReplace(ToolArgs):
    """``str_replace``: replace the one occurrence of ``old_str``."""

    command: Literal["str_replace"]
    path: str
    old_str: str
    new_str: str = ""


class Insert(ToolArgs):
    """``insert``: add lines after line ``insert_line`` (0: at the top).

    Models send the text as ``insert_text`` (observed) or ``new_str`` (documented):
    both are accepted.
    """

    command: Literal["insert"]
    path: str
    insert_line: NonNegativeInt
    insert_text: str | None = None
    new_str: str | None = None

    @property
    def text(self) -> str | None:
        """The lines to insert, whichever field carried them."""
        return self.insert_text if self.insert_text is not None else self.new_str


EditorCommand = Annotated[View | Create | StrReplace | Insert, Field(discriminator="command")]
_ADAPTER: Final[TypeAdapter[View | Create | StrReplace | Insert]] = TypeAdapter(EditorCommand)


def parse_command(arguments: object) -> View | Create | StrReplace | Insert:
    """Validate one text-editor call.

    Raises:
        InvalidArgument: ``undo_edit``, which ``text_editor_20250728`` no longer has.
        pydantic.ValidationError: Unknown command, missing or extra fields.

    """
    if isinstance(arguments, Mapping) and arguments.get("command") == "undo_edit":
        raise InvalidArgument(
            "undo_edit is not available: this text editor keeps no edit history",
            hint="Undo a change with str_replace, putting back the text you replaced.",
            details={"field": "command"},
        )
    return _ADAPTER.validate_python(arguments)
