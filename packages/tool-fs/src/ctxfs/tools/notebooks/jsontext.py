"""Where the values of a JSON text are, and how the text is laid out.

An edit of one part of a JSON document can then replace exactly that part's
characters, and write the new part in the layout of the rest (indent unit,
separators, line ending, escaping), so every other byte stays as it was. The
values themselves are parsed by :mod:`json`; only the structure between them is
walked here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from ctxfs.core import InvalidArgument

__all__ = [
    "Layout",
    "Member",
    "Span",
    "array_elements",
    "dumps_at",
    "layout_of",
    "line_prefix",
    "object_members",
    "skip_space",
]

_SPACE: Final = re.compile(r"[ \t\n\r]*")
_DECODER: Final = json.JSONDecoder()
_HEX4: Final = re.compile("[0-9a-fA-F]{4}")


@dataclass(frozen=True, kw_only=True)
class Span:
    """The characters ``text[start:end]`` of one value."""

    start: int
    end: int


@dataclass(frozen=True, kw_only=True)
class Member:
    """One member of an object: its key, where the key's quote opens, and its value."""

    key: str
    key_start: int
    value: Span


@dataclass(frozen=True, kw_only=True)
class Layout:
    """How a JSON text is written, as :func:`json.dumps` would be asked to write it."""

    indent: str | None
    """One level of indentation (``" "``, ``"    "``, ``"\\t"``); None on one line."""
    item_separator: str
    """Between items, before the line break when indented (``","`` or ``", "``)."""
    key_separator: str
    """Between a key and its value (``": "``)."""
    newline: str
    """The line break (``"\\n"`` or ``"\\r\\n"``)."""
    ensure_ascii: bool
    """Whether characters beyond ASCII are written as ``\\u`` escapes."""


def skip_space(text: str, at: int) -> int:
    """The index of the first character at or after *at* that is not JSON whitespace."""
    found = _SPACE.match(text, at)
    return at if found is None else found.end()


def _expect(text: str, at: int, chars: str, what: str) -> str:
    char = text[at : at + 1]
    if not char or char not in chars:
        raise json.JSONDecodeError(f"Expecting {what}", text, at)
    return char


def _value_end(text: str, at: int) -> int:
    end: int = _DECODER.raw_decode(text, at)[1]
    return end


def object_members(text: str, start: int) -> tuple[list[Member], int]:
    """The members of the object whose ``{`` is at *start*, and the index after its ``}``.

    Raises:
        json.JSONDecodeError: The text there is not a JSON object.

    """
    _expect(text, start, "{", "'{'")
    members: list[Member] = []
    at = skip_space(text, start + 1)
    if text.startswith("}", at):
        return members, at + 1
    while True:
        _expect(text, at, '"', "property name enclosed in double quotes")
        key, after = _DECODER.raw_decode(text, at)
        colon = skip_space(text, after)
        _expect(text, colon, ":", "':' delimiter")
        value = skip_space(text, colon + 1)
        end = _value_end(text, value)
        members.append(Member(key=key, key_start=at, value=Span(start=value, end=end)))
        at = skip_space(text, end)
        if _expect(text, at, ",}", "',' delimiter") == "}":
            return members, at + 1
        at = skip_space(text, at + 1)


def array_elements(text: str, start: int) -> tuple[list[Span], int]:
    """The elements of the array whose ``[`` is at *start*, and the index after its ``]``.

    Raises:
        json.JSONDecodeError: The text there is not a JSON array.

    """
    _expect(text, start, "[", "'['")
    elements: list[Span] = []
    at = skip_space(text, start + 1)
    if text.startswith("]", at):
        return elements, at + 1
    while True:
        end = _value_end(text, at)
        elements.append(Span(start=at, end=end))
        at = skip_space(text, end)
        if _expect(text, at, ",]", "',' delimiter") == "]":
            return elements, at + 1
        at = skip_space(text, at + 1)


def line_prefix(text: str, at: int) -> str | None:
    """The whitespace between the line break before *at* and *at*; None if there is more."""
    begin = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
    prefix = text[begin:at]
    return prefix if begin > 0 and not prefix.strip(" \t") else None


def layout_of(text: str, start: int, members: list[Member]) -> Layout:
    """The layout of the object at *start* with *members* (the top of a document)."""
    newline = "\r\n" if "\r\n" in text else "\r" if "\r" in text and "\n" not in text else "\n"
    ensure_ascii = text.isascii() and "\\u" in text and _escapes_beyond_ascii(text)
    indent: str | None = " "
    item_separator, key_separator = ",", ": "
    if members:
        first = members[0]
        lead = text[start + 1 : first.key_start]
        line_break = max(lead.rfind("\n"), lead.rfind("\r"))
        indent = lead[line_break + 1 :] if line_break >= 0 else None
        _, key_end = _DECODER.raw_decode(text, first.key_start)
        key_separator = text[key_end : first.value.start]
        if len(members) > 1:
            between = text[first.value.end : members[1].key_start]
            item_separator = between if indent is None else between.split("\n")[0].split("\r")[0]
    return Layout(
        indent=indent,
        item_separator=item_separator,
        key_separator=key_separator,
        newline=newline,
        ensure_ascii=ensure_ascii,
    )


def _escapes_beyond_ascii(text: str) -> bool:
    r"""Whether *text* escapes a character beyond ASCII (``\u00e9``), in linear time.

    Each ``\u`` is found with ``str.find``: a regular expression over the whole
    text holds the GIL for the search, which on a large notebook stalls every
    other thread for seconds.
    """
    at = text.find("\\u")
    while at != -1:
        before = at
        while before and text[before - 1] == "\\":
            before -= 1
        digits = text[at + 2 : at + 6]
        if (at - before) % 2 == 0 and _HEX4.fullmatch(digits) and int(digits, 16) > 0x7F:
            return True
        at = text.find("\\u", at + 2)
    return False


def dumps_at(value: Any, layout: Layout, prefix: str) -> str:
    """*value* as JSON in *layout*, for a place whose line starts with *prefix*.

    Keys come in the order of *value*'s dicts. Lines after the first are
    indented by *prefix*, so the value nests where it is put as
    :func:`json.dumps` would have nested it there.
    """
    try:
        written = json.dumps(
            value,
            indent=layout.indent,
            separators=(layout.item_separator, layout.key_separator),
            ensure_ascii=layout.ensure_ascii,
            allow_nan=False,  # Infinity and NaN are no JSON
        )
    except ValueError as error:  # a number out of JSON's range (1e400 was read as inf)
        raise InvalidArgument(
            f"the notebook holds a value JSON cannot write back exactly ({error})",
            hint="Change only the cell's source (keep its type), or fix that value first.",
        ) from None
    if layout.indent is None:
        return written
    return (layout.newline + prefix).join(written.split("\n"))
