"""The change an edit produces, and the checks new content passes before it becomes one."""

from __future__ import annotations

from dataclasses import dataclass

from ctxfs.core.errors import EncodingError
from ctxfs.core.text.encodings import TextEncoding

__all__ = [
    "FFFD",
    "Change",
    "count_replacement_chars",
    "display",
    "has_lone_surrogates",
    "refuse_added_replacement_chars",
    "unencodable",
]

_ESCAPED_BYTES_AS_FFFD = dict.fromkeys(range(56448, 56576), 65533)
FFFD = "\ufffd"
"""The replacement character: it marks data already lost, so no change may add one."""


@dataclass(frozen=True, kw_only=True)
class Change:
    """New file content and where it differs from the old."""

    data: bytes
    replacements: int
    first_line: int
    """1-based first changed line, in the new text."""
    last_line: int
    """1-based last changed line, in the new text."""
    stripped_line_numbers: bool = False
    """Whether read-output line numbers were removed from old_string (and new_string)."""
    diff: str | None = None
    """A unified diff of the change when it is small (see :mod:`~ctxfs.core.text.diffs`)."""
    total_lines: int | None = None
    """Lines of the new text, where the change counts them (a whole rewrite)."""


def display(text: str) -> str:
    """Show invalid bytes (carried as escapes) as U+FFFD, one per byte."""
    return text.translate(_ESCAPED_BYTES_AS_FFFD)


def has_lone_surrogates(text: str) -> bool:
    """Whether *text* holds a lone surrogate (an invalid byte carried as an escape, say)."""
    if text.isascii():
        return False
    try:  # the C encoder beats a regular expression on text beyond ASCII
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def count_replacement_chars(
    units: bytes | str, encoding: TextEncoding, start: int = 0, end: int | None = None
) -> int:
    """Real U+FFFD characters in *units* ``[start:end]`` (escaped invalid bytes are not)."""
    if isinstance(units, str):
        return units.count(FFFD, start, end)
    return units.count(FFFD.encode(), start, end) if encoding.codec == "utf-8" else 0


def refuse_added_replacement_chars(added: int, *, path: str) -> None:
    """Refuse new content that adds U+FFFD: it marks data already lost, not text.

    Raises:
        EncodingError: *added* is positive.

    """
    if added > 0:
        raise EncodingError(
            f"the new content of {path} would add U+FFFD replacement characters",
            path=path,
            hint="Do not copy '\ufffd' markers into new text; they stand for bytes "
            "that are not valid text and cannot be written back.",
        )


def unencodable(
    path: str, encoding: TextEncoding, text: str, exc: UnicodeEncodeError
) -> EncodingError:
    """The error for *text* that *encoding* cannot hold, naming the first such character."""
    char = text[exc.start]
    return EncodingError(
        f"{path} is {encoding.label}, which cannot hold {char!r} (U+{ord(char):04X})",
        path=path,
        hint=f"Use only characters that {encoding.codec} can encode; the file was not changed.",
        details={"encoding": encoding.codec, "character": char},
    )
