"""Why an ``old_string`` did not match, told so that a model can fix it in one try.

Each lens below forgives one kind of difference on both sides (the file and
``old_string``); if the text matches through a lens, that difference is the
cause and its lines are reported. Otherwise the closest lines are offered.
Nothing here ever makes an edit apply: matching stays exact.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Final

__all__ = ["diagnose_no_match"]

_MAX_CANDIDATES: Final = 3
_MAX_SHOWN_CHARS: Final = 200
_MAX_FUZZY_LINES: Final = 20_000

_QUOTES: Final = str.maketrans(
    dict.fromkeys("\u2018\u2019\u201a\u201b", "'") | dict.fromkeys("\u201c\u201d\u201e\u201f", '"')
)
_SPACES: Final = str.maketrans(dict.fromkeys("\u00a0\u2007\u2009\u202f\u3000", " "))
_TRAILING = re.compile(r"[ \t]+$", re.MULTILINE)
_LEADING = re.compile(r"^[ \t]+", re.MULTILINE)
_ANY_LINE_NUMBER = re.compile(r"^[ \t]*\d+(?:[ \t]*(?:│|→|\||:)[ \t]?|[ \t]|$)", re.MULTILINE)

Lens = tuple[str, Callable[[str], str], Callable[[str], str]]
"""(name of the difference, transform of the file text, transform of old_string)."""

_LENSES: Final[list[Lens]] = [
    ("pasted line-number prefixes", lambda text: text,
     lambda old: _ANY_LINE_NUMBER.sub("", old)),
    ("escaped line breaks ('\\n' written as two characters)", lambda text: text,
     lambda old: old.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\t", "\t")),
    ("line endings (the file's last line has no line break)", lambda text: text,
     lambda old: old.removesuffix("\n")),
    ("trailing whitespace", lambda text: _TRAILING.sub("", text),
     lambda old: _TRAILING.sub("", old)),
    ("indentation", lambda text: _LEADING.sub("", text), lambda old: _LEADING.sub("", old)),
    ("curly vs straight quotes", lambda text: text.translate(_QUOTES),
     lambda old: old.translate(_QUOTES)),
    ("non-breaking or unusual spaces", lambda text: text.translate(_SPACES),
     lambda old: old.translate(_SPACES)),
    ("Unicode normalization (composed vs decomposed accents)",
     lambda text: unicodedata.normalize("NFC", text),
     lambda old: unicodedata.normalize("NFC", old)),
]  # fmt: skip


def diagnose_no_match(text: str, old_string: str, path: str) -> tuple[str, str, dict[str, Any]]:
    """Explain why *old_string* is absent from *text* (the file's logical text).

    Returns the message, the hint and the details of a ``NoMatch`` error.
    """
    old = old_string.replace("\r\n", "\n").replace("\r", "\n")
    if "\ufffd" in old:
        shown = text.translate(dict.fromkeys(range(56448, 56576), 65533))
        if old in shown:
            line = shown.count("\n", 0, shown.index(old)) + 1
            return (
                f"old_string was not found in {path}: around line {line} it spans bytes that are "
                "not valid text (shown as \ufffd), which cannot be matched",
                "Choose an old_string that stays clear of the \ufffd markers.",
                {"differences": ["invalid bytes"], "lines": [line]},
            )
    differences, lines = _differences(text, old)
    if differences:
        where = ", ".join(map(str, lines))
        return (
            f"old_string was not found in {path}; it would match at line {where} "
            f"but differs in {' and '.join(differences)}",
            "Copy old_string exactly from the latest read of the file "
            f"(mind the {' and '.join(differences)}), without line numbers.",
            {"differences": differences, "lines": lines, "candidates": _show(text, lines, old)},
        )
    closest = _closest_lines(text, old)
    if closest:
        return (
            f"old_string was not found in {path}; the closest lines are "
            + ", ".join(map(str, closest)),
            "Read the file around those lines again and copy old_string exactly.",
            {"differences": [], "lines": closest, "candidates": _show(text, closest, old)},
        )
    return (
        f"old_string was not found in {path}, and no line resembles it",
        "Read the file again: the text you expect may not be there.",
        {"differences": [], "lines": [], "candidates": []},
    )


def _differences(text: str, old: str) -> tuple[list[str], list[int]]:
    for name, on_text, on_old in _LENSES:
        lines = _lines_matching(on_text(text), on_old(old))
        if lines:
            return [_tabs_or_spaces(text, old, lines[0]) if name == "indentation" else name], lines
    everything_text, everything_old = text, old
    for _, on_text, on_old in _LENSES:
        everything_text, everything_old = on_text(everything_text), on_old(everything_old)
    lines = _lines_matching(everything_text, everything_old)
    if not lines:
        return [], []
    needed = []  # the lenses the combined match cannot do without
    for skipped, (name, _, _) in enumerate(_LENSES):
        partial_text, partial_old = text, old
        for index, (_, on_text, on_old) in enumerate(_LENSES):
            if index != skipped:
                partial_text, partial_old = on_text(partial_text), on_old(partial_old)
        if not _lines_matching(partial_text, partial_old):
            needed.append(name)
    return needed or ["whitespace"], lines


def _tabs_or_spaces(text: str, old: str, line: int) -> str:
    """Name an indentation difference more precisely when tabs meet spaces."""
    file_line = text.split("\n", line)[line - 1]
    old_line = next((part for part in old.split("\n") if part.strip()), "")
    file_indent = file_line[: len(file_line) - len(file_line.lstrip(" \t"))]
    old_indent = old_line[: len(old_line) - len(old_line.lstrip(" \t"))]
    if ("\t" in file_indent) != ("\t" in old_indent):
        return "indentation (tabs vs spaces)"
    return "indentation"


def _lines_matching(text: str, old: str) -> list[int]:
    if not old.strip():
        return []
    lines: list[int] = []
    start = text.find(old)
    while start != -1 and len(lines) < _MAX_CANDIDATES:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(old, start + max(1, len(old)))
    return lines


def _closest_lines(text: str, old: str) -> list[int]:
    wanted = next((line.strip() for line in old.split("\n") if line.strip()), "")
    if not wanted:
        return []
    lines = text.split("\n", _MAX_FUZZY_LINES)[:_MAX_FUZZY_LINES]
    stripped = [line.strip() for line in lines]
    close = set(difflib.get_close_matches(wanted, stripped, n=_MAX_CANDIDATES, cutoff=0.6))
    return [index + 1 for index, line in enumerate(stripped) if line in close][:_MAX_CANDIDATES]


def _show(text: str, lines: list[int], old: str) -> list[dict[str, Any]]:
    """The file lines at each candidate, as many as old_string has, each cut to a length."""
    span = max(1, old.count("\n") + (0 if old.endswith("\n") else 1))
    all_lines = text.split("\n")
    shown = []
    for line in lines:
        chunk = all_lines[line - 1 : line - 1 + span]
        shown.append({"line": line, "text": "\n".join(part[:_MAX_SHOWN_CHARS] for part in chunk)})
    return shown
