"""The one line-number format of read output, and taking it back off pasted text."""

from __future__ import annotations

import functools
import operator
import re
from typing import Final

from ctxfs.core.errors import InvalidArgument

__all__ = [
    "LINE_NUMBER_PREFIX",
    "format_line_number",
    "number_lines",
    "strip_line_numbers",
    "strip_new_line_numbers",
]

LINE_NUMBER_PREFIX: Final = re.compile(r"^ *(\d{1,19})(?: |$)")
"""Matches the prefix :func:`format_line_number` puts before a line of a read window, also
when the space after the number of an empty line was trimmed away."""


def format_line_number(number: int) -> str:
    """Return the prefix shown before line *number* in read output: ``"12 "``.

    The number and one space; the line follows exactly as stored. A space is the
    cheapest separator in tokens: it usually merges into the line's first token.
    """
    return f"{number} "


def number_lines(text: str, first: int) -> str:
    r"""*text* (lines ending in ``\n``) with :func:`format_line_number` before each line.

    The result ends with a newline; numbering starts at *first*.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines:
        return ""
    end = first + len(lines)
    made = _made_prefixes()
    prefixes = made[first:end] if end <= len(made) else map(format_line_number, range(first, end))
    return "\n".join(map(operator.add, prefixes, lines)) + "\n"


@functools.cache
def _made_prefixes() -> tuple[str, ...]:
    """The prefixes of lines 0 to 4,095 (about 200 KB), for the windows read most."""
    return tuple(map(format_line_number, range(4096)))


def strip_line_numbers(old_string: str) -> tuple[str, int] | None:
    """Remove read-output line numbers pasted into *old_string*.

    Applies only when every line carries the prefix, with consecutive numbers.
    Returns the bare text and its first line number, or None when *old_string*
    does not qualify; the caller still checks that the text is at that line.
    """
    numbers, start = [], 0
    while start < len(old_string):  # a line at a time, no split: most texts fail on the first
        end = old_string.find("\n", start)
        end = len(old_string) if end == -1 else end
        prefix = LINE_NUMBER_PREFIX.match(old_string[start:end])
        if prefix is None:
            return None
        numbers.append(int(prefix.group(1)))
        start = end + 1
    if not numbers or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return None
    bare = _strip_prefixes(old_string)
    return (bare, numbers[0]) if bare else None  # "1" is text, not an empty numbered line


def strip_new_line_numbers(new_string: str, first_line: int, *, path: str) -> str:
    """*new_string* without the line numbers pasted with it, numbered from *first_line*.

    A new_string whose first line does not carry *first_line* is taken as
    written. One that starts numbered must number every non-empty line, upwards.

    Raises:
        InvalidArgument: The numbering stops or runs backwards part way.

    """
    lines = [line for line in new_string.split("\n") if line]
    prefixes = [LINE_NUMBER_PREFIX.match(line) for line in lines]
    if not prefixes or prefixes[0] is None or int(prefixes[0].group(1)) != first_line:
        return new_string
    numbers = [int(prefix.group(1)) for prefix in prefixes if prefix]
    if len(numbers) < len(lines) or numbers != sorted(set(numbers)):
        raise InvalidArgument(
            "new_string starts with the line numbers read shows, but not every line "
            "carries one in order",
            path=path,
            hint="Write new_string without line numbers, exactly as the text should read.",
            details={"field": "new_string"},
        )
    return _strip_prefixes(new_string)


def _strip_prefixes(text: str) -> str:
    return "\n".join(LINE_NUMBER_PREFIX.sub("", line, count=1) for line in text.split("\n"))
