"""The model's projection of each result: short, exact, and saying what to do next.

Read windows use the one line-number format of ``ctxfs.core.text``
(``<number><space><line>``) and end with a footer in parentheses that gives the
exact offset to continue from. Changes are one line, plus a short diff when the
change is small. Errors give the code, the message and the next action.
"""

from __future__ import annotations

from typing import Final

from ctxfs.core import EditOutcome, FsError, InsertOutcome, ReadOutcome, Stat, WriteOutcome
from ctxfs.core.backend import FileKind
from ctxfs.core.text import format_line_number, number_lines

__all__ = [
    "edit_text",
    "error_text",
    "escape",
    "glob_text",
    "grep_text",
    "insert_text",
    "list_text",
    "read_text",
    "write_text",
]

_BIDI: Final = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ESCAPES: Final = {
    **{code: f"\\x{code:02x}" for code in (*range(0x09), *range(0x0A, 0x20), 0x7F)},
    **{code: f"\\x{code:02x}" for code in range(0x80, 0xA0)},
    **{code: f"\\u{code:04x}" for code in _BIDI},
}
_MAX_SHOWN_MATCH: Final = 300


def escape(text: str) -> str:
    """Show control characters and bidirectional overrides as escapes (tabs stay)."""
    return text.translate(_ESCAPES)


def read_text(outcome: ReadOutcome) -> str:
    """The numbered window and its footer."""
    if outcome.total_lines == 0:
        return f"({outcome.path} is empty)"
    if outcome.returned_lines == 0:
        return (
            f"(no lines at offset {outcome.offset}: {outcome.path} has {outcome.total_lines} "
            f"lines; use an offset from 1 to {outcome.total_lines})"
        )
    body = number_lines(outcome.text, outcome.offset)
    return body + "\n".join(_read_notes(outcome))


def _read_notes(outcome: ReadOutcome) -> list[str]:
    last = outcome.offset + outcome.returned_lines - 1
    shown = f"lines {outcome.offset}-{last} of {outcome.total_lines}"
    if outcome.next_offset is None:
        notes = [f"(end of file; {shown})"]
    elif outcome.output_capped:
        notes = [f"(output limit reached; {shown}; continue with offset={outcome.next_offset})"]
    else:
        notes = [f"({shown}; continue with offset={outcome.next_offset})"]
    if outcome.truncated_lines:
        cut = ", ".join(map(str, outcome.truncated_lines))
        notes.append(f"(line {cut} cut where marked: too long to show whole)")
    if "invalid bytes" in outcome.encoding:
        notes.append("(bytes that are not valid text show as \ufffd; keep them out of old_string)")
    elif outcome.encoding != "utf-8":
        notes.append(f"(decoded as {outcome.encoding}; changes keep that encoding)")
    return notes


def write_text(outcome: WriteOutcome, *, lines: int) -> str:
    """One line on what the write did, and the diff of a small update."""
    if outcome.created:
        return f"Created {outcome.path} ({_count(lines, 'line')}, {outcome.size} bytes)."
    if outcome.previous_version == outcome.version:
        return f"Wrote {outcome.path}: the content was already identical; nothing changed."
    span = _span(outcome.first_line, outcome.last_line)
    now = _count(lines, "line")
    return _with_diff(f"Updated {outcome.path}: {span} changed ({now} now).", outcome.diff)


def edit_text(outcome: EditOutcome) -> str:
    """One line on what the edit did, and the diff when it is small."""
    count = _count(outcome.replacements, "replacement")
    head = f"Edited {outcome.path}: {count}, {_span(outcome.first_line, outcome.last_line)}."
    if outcome.stripped_line_numbers:
        head += " (The line numbers pasted into old_string were ignored.)"
    return _with_diff(head, outcome.diff)


def insert_text(outcome: InsertOutcome) -> str:
    """One line on the inserted lines, and their diff when small."""
    count = _count(outcome.last_line - outcome.first_line + 1, "line")
    where = _span(outcome.first_line, outcome.last_line)
    head = f"Inserted {count} into {outcome.path} ({where})."
    return _with_diff(head, outcome.diff)


def _count(number: int, noun: str) -> str:
    """``1 line``, ``2 lines``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


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


def list_text(
    path: str, entries: list[Stat], *, total: int, first: int, next_offset: int | None
) -> str:
    """One entry per line (directories end with ``/``), then a footer."""
    if total == 0:
        return f"({path or 'the workspace root'} is empty)"
    lines = [_entry(entry) for entry in entries]
    if next_offset is None and first == 1:
        lines.append(f"({total} entr{'y' if total == 1 else 'ies'})")
    else:
        lines.append(_page("entries", first, len(entries), f"{total}", next_offset))
    return "\n".join(lines)


_WALK_TRUNCATED = "(the walk stopped at its size limit: give a narrower path)"


def _page(noun: str, first: int, shown: int, of: str, next_offset: int | None) -> str:
    """The footer of one page of a longer list: which items, of how many, how to go on."""
    more = f"; continue with offset={next_offset}" if next_offset else ""
    return f"({noun} {first}-{first + shown - 1} of {of}{more})"


def _entry(entry: Stat) -> str:
    name = escape(entry.name)
    if entry.kind is FileKind.DIRECTORY:
        return name + "/"
    if entry.kind is FileKind.SYMLINK:
        return name + "  (symbolic link)"
    if entry.kind is FileKind.OTHER:
        return name + "  (special file)"
    return f"{name}  ({_size(entry.size or 0)})"


def glob_text(paths: list[str], *, total: int, first: int, next_offset: int | None,
              walk_truncated: bool) -> str:  # fmt: skip
    """Matching paths, one per line, then a footer."""
    lines = [escape(path) for path in paths]
    if total == 0:
        lines.append("(no file matches)")
    elif next_offset is None and first == 1:
        lines.append(f"({_count(total, 'file')} match)")
    else:
        lines.append(_page("files", first, len(paths), f"{total} matching", next_offset))
    if walk_truncated:
        lines.append(_WALK_TRUNCATED)
    return "\n".join(lines)


def grep_text(hits: list[tuple[str, int, str]], *, total: int, files: int, first: int,
              next_offset: int | None, skipped: int, walk_truncated: bool) -> str:  # fmt: skip
    """``path:line: text`` per hit, then a footer."""
    lines = [f"{escape(path)}:{number}: {escape(_cut(text))}" for path, number, text in hits]
    if total == 0:
        lines.append(f"(no match in {_count(files, 'file')})")
    elif next_offset is None and first == 1:
        lines.append(f"({total} match{'es' if total != 1 else ''} in {files} files searched)")
    else:
        of = f"{total} in {files} files searched"
        lines.append(_page("matches", first, len(hits), of, next_offset))
    if skipped:
        lines.append(f"({skipped} binary, undecodable or unreadable files skipped)")
    if walk_truncated:
        lines.append(_WALK_TRUNCATED)
    return "\n".join(lines)


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN_MATCH else text[:_MAX_SHOWN_MATCH] + " …"


def _span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _with_diff(head: str, diff: str | None) -> str:
    return head if diff is None else f"{head}\n{diff}"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
