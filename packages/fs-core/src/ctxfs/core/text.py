r"""Text semantics shared by every backend: decoding, line windows, literal edits.

This first version handles UTF-8 text with ``\n`` line endings; it refuses
what it cannot round-trip instead of damaging it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ctxfs.core.errors import (
    AmbiguousMatch,
    BinaryFile,
    EmptyOldString,
    EncodingError,
    InvalidArgument,
    NoChange,
    NoMatch,
)

__all__ = ["DEFAULT_LIMIT", "Edited", "Window", "apply_edit", "decode", "encode", "window"]

DEFAULT_LIMIT: Final = 2000
"""Lines returned by a read when no limit is given."""


def decode(data: bytes, *, path: str) -> str:
    """Decode file content as text, refusing binary content and invalid UTF-8."""
    if b"\x00" in data:
        raise BinaryFile(f"{path} holds binary data (NUL bytes)", path=path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EncodingError(f"{path} is not valid UTF-8 (byte {exc.start})", path=path) from None


def encode(text: str) -> bytes:
    """Encode text for storage."""
    return text.encode("utf-8")


@dataclass(frozen=True, kw_only=True)
class Window:
    """A run of lines cut out of a text."""

    text: str
    offset: int
    returned_lines: int
    total_lines: int
    next_offset: int | None


def window(text: str, *, offset: int, limit: int | None) -> Window:
    """Return lines ``offset .. offset + limit - 1`` (1-based) of *text*."""
    if offset < 1:
        raise InvalidArgument(f"offset must be 1 or more, got {offset}")
    limit = DEFAULT_LIMIT if limit is None else limit
    if limit < 1:
        raise InvalidArgument(f"limit must be 1 or more, got {limit}")
    lines = text.splitlines(keepends=True)
    chosen = lines[offset - 1 : offset - 1 + limit]
    end = offset - 1 + len(chosen)
    return Window(
        text="".join(chosen),
        offset=offset,
        returned_lines=len(chosen),
        total_lines=len(lines),
        next_offset=end + 1 if end < len(lines) else None,
    )


@dataclass(frozen=True, kw_only=True)
class Edited:
    """The result of applying an edit to a text."""

    text: str
    replacements: int
    first_line: int
    last_line: int


def apply_edit(text: str, old: str, new: str, *, replace_all: bool, path: str) -> Edited:
    """Replace *old* by *new* in *text*: exactly once, or everywhere with *replace_all*."""
    check_edit_strings(old, new)
    count = text.count(old)
    if count == 0:
        raise NoMatch(f"old_string was not found in {path}", path=path)
    if count > 1 and not replace_all:
        raise AmbiguousMatch(
            f"old_string occurs {count} times in {path}", path=path, details={"count": count}
        )
    first = text.index(old)
    last = text.rindex(old) if replace_all else first
    result = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    first_line = text.count("\n", 0, first) + 1
    shift = (len(new) - len(old)) * (count - 1 if replace_all else 0)
    last_line = result.count("\n", 0, last + shift + len(new)) + 1
    return Edited(
        text=result,
        replacements=count if replace_all else 1,
        first_line=first_line,
        last_line=max(first_line, last_line),
    )


def check_edit_strings(old: str, new: str) -> None:
    """Refuse an empty *old* and identical strings before anything is read."""
    if not old:
        raise EmptyOldString("old_string is empty")
    if old == new:
        raise NoChange("old_string and new_string are identical")
