"""What every tool's text for the model shares: short, exact, and saying what to do next.

Each tool renders its own result (in its module) with these pieces: escapes for
control characters, counts with their plurals, sizes, line spans, diffs, the
footer of a page of a longer list, and the text of an error (its code, the
message and the next action).
"""

from __future__ import annotations

from typing import Final

from ctxfs.core import CutLine, FsError, format_line_number

__all__ = [
    "SHOWN_CHARS",
    "STRIPPED_NOTE",
    "WALK_TRUNCATED",
    "around",
    "count",
    "cut",
    "edited",
    "error_text",
    "escape",
    "left_out",
    "page_footer",
    "size",
    "span",
    "unnamed",
    "walk_stopped",
    "with_diff",
]

WALK_TRUNCATED: Final = "(the walk stopped at its size limit: give a narrower path)"


def walk_stopped(not_listed: list[str]) -> str:
    """The line saying where a walk stopped at its size limit and how to search the rest."""
    if not not_listed:
        return WALK_TRUNCATED
    shown = ", ".join(escape(path or ".") for path in not_listed[:5])
    more = f" and {len(not_listed) - 5:,} more" if len(not_listed) > 5 else ""
    return (
        "(the walk stopped at its size limit; these directories were not searched, or "
        f"only in part: {shown}{more}; search them with `path`)"
    )


def left_out(hidden: int, ignored: int) -> str | None:
    """The line saying which entries a walk left out and how to include them, if any."""
    parts = []
    if hidden:
        parts.append(
            f"{count(hidden, 'hidden entry', 'hidden entries')} (hidden=true includes them)"
        )
    if ignored:
        parts.append(
            f"{count(ignored, 'ignored entry', 'ignored entries')} "
            "(include_ignored=true includes them)"
        )
    return f"(left out: {'; '.join(parts)})" if parts else None


def unnamed(number: int) -> str:
    """The line saying that *number* entries of the store could not be listed."""
    return (
        f"({count(number, 'entry', 'entries')} not listed: no path can name "
        f"{'it' if number == 1 else 'them'} (a key with an empty, '.' or '..' segment))"
    )


_BIDI: Final = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ESCAPES: Final = {
    **{code: f"\\x{code:02x}" for code in (*range(0x09), *range(0x0A, 0x20), 0x7F)},
    **{code: f"\\u{code:04x}" for code in range(0x80, 0xA0)},  # \xNN is a raw byte
    **{code: f"\\u{code:04x}" for code in _BIDI},
}
SHOWN_CHARS: Final = 300
"""How much of a long line a listing shows."""


def escape(text: str) -> str:
    """Show control characters and bidirectional overrides as escapes (tabs stay)."""
    return text.translate(_ESCAPES)


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``1 line``, ``2 lines``; ``1 entry``, ``2 entries`` with *plural*."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def cut(text: str) -> str:
    """*text*, cut to a few hundred characters for a one-line listing."""
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + " …"


def around(text: str, start: int, width: int) -> tuple[str, int]:
    """The part of a line, at most *width* long, that shows position *start*.

    Returns the part, with some of what leads up to *start*, and where it begins.
    *text* is the line, or a :class:`~ctxfs.core.CutLine` of it holding the part.
    """
    given, length = (text.start, text.length) if isinstance(text, CutLine) else (0, len(text))
    if length <= width:
        return text, 0
    begin = max(0, min(start - width // 4, length - width))
    offset = max(0, begin - given)  # a cut line holds at least width around start
    return text[offset : offset + width], begin


def span(first: int, last: int) -> str:
    """``line 3`` or ``lines 3-5``."""
    return f"line {first}" if first == last else f"lines {first}-{last}"


STRIPPED_NOTE: Final = "(The line numbers pasted into old_string were ignored.)"


def edited(
    target: str | None,
    *,
    written: bool,
    changes: str,
    first_line: int,
    last_line: int,
    diff: str | None,
    note: str = "",
) -> str:
    """What an edit changed (or, not *written*, would change): *changes*, the lines, the diff."""
    what = f"{target}: {changes}, {span(first_line, last_line)}"
    head = f"Edited {what}." if written else f"Dry run, nothing written: would edit {what}."
    return with_diff(f"{head} {note}" if note else head, diff)


def with_diff(head: str, diff: str | None) -> str:
    """*head*, then the diff of the change when there is one."""
    return head if diff is None else f"{head}\n{diff}"


def size(number: int) -> str:
    """A size in bytes, as people read it (``1 B``, ``2.5 KB``)."""
    if number < 1024:
        return f"{number} B"
    value = number / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def page_footer(noun: str, first: int, shown: int, of: str, next_offset: int | None) -> str:
    """The footer of one page of a longer list: which items, of how many, how to go on."""
    more = f"; continue with offset={next_offset}" if next_offset else ""
    return f"({noun} {first}-{first + shown - 1} of {of}{more})"


def error_text(error: FsError) -> str:
    """The code, the message, the next action, and whatever helps take it."""
    parts = [f"Error [{error.code.value}]: {error.message}"]
    if error.hint:
        parts.append(f"Next: {error.hint}")
    candidates = error.details.get("candidates")
    if candidates:
        parts.append("Closest text in the file:")
        parts += [
            format_line_number(candidate["line"]) + line
            for candidate in candidates
            for line in candidate["text"].split("\n")[:1]
        ]
    holder = error.details.get("holder")
    if holder:
        until = error.details.get("until")
        parts.append(f"Checked out by {holder}" + (f" until {until}." if until else "."))
    return "\n".join(parts)
