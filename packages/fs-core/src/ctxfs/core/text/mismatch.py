"""Why an ``old_string`` did not match, told so that a model can fix it in one try.

Each lens forgives one kind of difference on both sides; if the text matches
through a lens, that difference is reported, else the closest lines are offered.
Matching itself stays exact. The search is linear per step and stops at a deadline.
"""

from __future__ import annotations

import difflib
import functools
import heapq
import itertools
import re
import time
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any, Final

from ctxfs.core.text.changes import display

__all__ = ["DIAGNOSIS_SECONDS", "MAX_DIAGNOSED_CHARS", "diagnose_no_match", "undiagnosed"]

DIAGNOSIS_SECONDS: Final = 1.0
"""How long the search for why an ``old_string`` did not match may take."""
MAX_DIAGNOSED_CHARS: Final = 16 << 20
"""Files and ``old_string`` values longer than this are not searched for a near match:
each lens would copy them, and the search would run out of time anyway."""

_MAX_CANDIDATES: Final = 3
_MAX_SHOWN_CHARS: Final = 200
_MAX_FUZZY_LINES: Final = 20_000
_MAX_COMPARED_CHARS: Final = 400
_CLOSE_ENOUGH: Final = 0.6

_QUOTES: Final = dict.fromkeys("\u2018\u2019\u201a\u201b", "'") | dict.fromkeys(
    "\u201c\u201d\u201e\u201f", '"'
)
_SPACES: Final = dict.fromkeys("\u00a0\u2007\u2009\u202f\u3000", " ")
_TRAILING = re.compile(r"(?<![ \t])[ \t]++(?=\n|\Z)")  # each run tried once: linear
_strip_trailing = functools.partial(_TRAILING.sub, "")
_LEADING = re.compile(r"^[ \t]+", re.MULTILINE)
_ANY_LINE_NUMBER = re.compile(r"^[ \t]*\d+(?:[ \t]*(?:│|→|\||:)[ \t]?|[ \t]|$)", re.MULTILINE)
_CUT_MARK = re.compile(r" … \[line cut here; it holds \d+ \w+\]")  # (window.truncation_marker)
_SHOWN_ESCAPE = re.compile(r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})")  # (how reads show a character)
_INVISIBLE: Final = dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff\u00ad", "")


def _unescaped(old: str) -> str:
    r"""*old* with each ``\xNN`` and ``\uNNNN`` a tool showed as the character it stands for."""
    return _SHOWN_ESCAPE.sub(lambda match: chr(int(match.group(1) or match.group(2), 16)), old)


def _lines(text: str) -> Iterator[str]:
    """The lines of *text*, one at a time (a list of them can be many times its size)."""
    start = 0
    while (end := text.find("\n", start)) != -1:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def _replace(text: str, characters: dict[str, str]) -> str:
    """*text* with each of *characters* replaced (``str.translate`` is ten times slower)."""
    for character, replacement in characters.items():
        text = text.replace(character, replacement)
    return text


Lens = tuple[str, Callable[[str], str], Callable[[str], str]]
"""(name of the difference, transform of the file text, transform of old_string)."""

_LENSES: Final[list[Lens]] = [
    ("pasted line-number prefixes", lambda text: text,
     lambda old: _ANY_LINE_NUMBER.sub("", old)),
    ("escaped line breaks ('\\n' written as two characters)", lambda text: text,
     lambda old: old.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\t", "\t")),
    ("line endings (the file's last line has no line break)", lambda text: text,
     lambda old: old.removesuffix("\n")),
    ("trailing whitespace", _strip_trailing, _strip_trailing),
    ("indentation", lambda text: _LEADING.sub("", text), lambda old: _LEADING.sub("", old)),
    ("curly vs straight quotes", lambda text: _replace(text, _QUOTES),
     lambda old: _replace(old, _QUOTES)),
    ("non-breaking or unusual spaces", lambda text: _replace(text, _SPACES),
     lambda old: _replace(old, _SPACES)),
    ("Unicode normalization (composed vs decomposed accents)",
     lambda text: unicodedata.normalize("NFC", text),
     lambda old: unicodedata.normalize("NFC", old)),
    ("invisible characters in the file (zero-width spaces or joiners, soft hyphens)",
     lambda text: _replace(text, _INVISIBLE), lambda old: _replace(old, _INVISIBLE)),
    ("characters shown escaped (each \\xNN or \\uNNNN stands for one character)",
     lambda text: text, _unescaped),
    ("a cut line's mark (match only the text before it)",
     lambda text: text, lambda old: _CUT_MARK.sub("", old)),
]  # fmt: skip


def undiagnosed(path: str, why: str) -> tuple[str, str, dict[str, Any]]:
    """The message, hint and details of a ``NoMatch`` whose cause was not searched for."""
    return (
        f"old_string was not found in {path}; {why}",
        "Read the file again around the text you mean to change and copy old_string "
        "exactly; a shorter old_string is found faster.",
        {"differences": [], "lines": [], "candidates": [], "complete": False},
    )


class _OutOfTime(Exception):
    """The diagnosis reached its deadline."""


def diagnose_no_match(
    text: str, old_string: str, path: str, *, seconds: float = DIAGNOSIS_SECONDS
) -> tuple[str, str, dict[str, Any]]:
    """Explain why *old_string* is absent from *text* (the file's logical text).

    Returns the message, the hint and the details of a ``NoMatch`` error. A
    search cut short by its deadline (*seconds*) says so and reports what it
    found until then (``details["complete"]`` is false).
    """
    deadline = time.monotonic() + seconds
    old = old_string.replace("\r\n", "\n").replace("\r", "\n")
    if "\ufffd" in old:
        shown = display(text)
        if old in shown:
            line = shown.count("\n", 0, shown.index(old)) + 1
            return (
                f"old_string was not found in {path}: around line {line} it spans bytes that are "
                "not valid text (shown as \ufffd), which cannot be matched",
                "Choose an old_string that stays clear of the \ufffd markers.",
                {"differences": ["invalid bytes"], "lines": [line]},
            )
    try:
        differences, lines = _differences(text, old, deadline)
    except _OutOfTime:
        return undiagnosed(path, f"the search for a near match stopped after {seconds:g} s")
    if differences:
        where = ", ".join(map(str, lines))
        return (
            f"old_string was not found in {path}; it would match at line {where} "
            f"but differs in {' and '.join(differences)}",
            "Copy old_string exactly from the latest read of the file "
            f"(mind the {' and '.join(differences)}), without line numbers.",
            {"differences": differences, "lines": lines, "candidates": _show(text, lines, old)},
        )
    closest, complete = _closest_lines(text, old, deadline)
    details = {"differences": [], "lines": closest, "candidates": _show(text, closest, old)}
    cut = "" if complete else f" (the search stopped after {seconds:g} s)"
    if not complete:
        details["complete"] = False
    if closest:
        return (
            f"old_string was not found in {path}; the closest lines are "
            + ", ".join(map(str, closest))
            + cut,
            "Read the file around those lines again and copy old_string exactly.",
            details,
        )
    return (
        f"old_string was not found in {path}, and no line resembles it{cut}",
        "Read the file again: the text you expect may not be there.",
        details,
    )


def _differences(text: str, old: str, deadline: float) -> tuple[list[str], list[int]]:
    def through(lenses: list[Lens]) -> list[int]:
        text_, old_ = text, old
        for _, on_text, on_old in lenses:
            if time.monotonic() > deadline:
                raise _OutOfTime
            text_, old_ = on_text(text_), on_old(old_)
        return _lines_matching(text_, old_)

    for name, on_text, on_old in _LENSES:
        lines = through([(name, on_text, on_old)])
        if lines:
            return [_tabs_or_spaces(text, old, lines[0]) if name == "indentation" else name], lines
    lines = through(_LENSES)
    if not lines:
        return [], []
    # the lenses the combined match cannot do without
    needed = [
        name
        for skipped, (name, _, _) in enumerate(_LENSES)
        if not through([lens for index, lens in enumerate(_LENSES) if index != skipped])
    ]
    return needed or ["whitespace"], lines


def _tabs_or_spaces(text: str, old: str, line: int) -> str:
    """Name an indentation difference more precisely when tabs meet spaces."""
    file_line = next(itertools.islice(_lines(text), line - 1, None), "")
    old_line = next((part for part in _lines(old) if part.strip()), "")
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


def _closest_lines(text: str, old: str, deadline: float) -> tuple[list[int], bool]:
    """The lines most like *old*'s first line, in file order, and whether all were compared."""
    wanted = next((line.strip() for line in _lines(old) if line.strip()), "")
    if not wanted:
        return [], True
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(wanted[:_MAX_COMPARED_CHARS])
    scored: list[tuple[float, int]] = []
    complete = True
    for number, line in enumerate(itertools.islice(_lines(text), _MAX_FUZZY_LINES), 1):
        if time.monotonic() > deadline:
            complete = False
            break
        matcher.set_seq1(line.strip()[:_MAX_COMPARED_CHARS])
        if (
            matcher.real_quick_ratio() >= _CLOSE_ENOUGH
            and matcher.quick_ratio() >= _CLOSE_ENOUGH
            and (score := matcher.ratio()) >= _CLOSE_ENOUGH
        ):
            scored.append((score, -number))
    best = heapq.nlargest(_MAX_CANDIDATES, scored)
    return sorted(-number for _, number in best), complete


def _show(text: str, lines: list[int], old: str) -> list[dict[str, Any]]:
    """The file lines at each candidate, as many as old_string has, each cut to a length."""
    span = max(1, old.count("\n") + (0 if old.endswith("\n") else 1))
    shown = []
    for line in lines:
        chunk = itertools.islice(_lines(text), line - 1, line - 1 + span)
        shown.append({"line": line, "text": "\n".join(part[:_MAX_SHOWN_CHARS] for part in chunk)})
    return shown
