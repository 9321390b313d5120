"""Replacing a whole document's text while keeping the lines that stay as they were."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, AnyStr, Final, TypeVar

from ctxfs.core.text.changes import (
    Change,
    count_replacement_chars,
    display,
    refuse_added_replacement_chars,
)
from ctxfs.core.text.diffs import MAX_DIFF_CHARS, MAX_DIFF_LINES, short_diff
from ctxfs.core.text.splicing import seal, slicer

if TYPE_CHECKING:
    from ctxfs.core.text.document import TextDocument

__all__ = ["common_ends", "rewrite_by_lines", "rewrite_whole"]

T = TypeVar("T")

_COMPARED: Final = 1 << 16
_MAX_DIFF_UNITS: Final = 4 * MAX_DIFF_CHARS + 2
"""Units beyond which a region's diff is surely too long to show: it is not decoded for one."""


def rewrite_whole(document: TextDocument[AnyStr], content: str) -> Change:
    """Return the change that replaces the whole text of *document* with *content*.

    Lines that *content* leaves as they were (a common head and tail) keep their
    own endings and bytes; the lines in between take the file's dominant ending,
    so writing back what was read is byte-identical. An empty file has no ending
    to follow: *content* keeps its own. Memory is a few copies of the file, never
    a list of its lines (but for a file with invalid bytes, whose lines compare
    as shown).

    Raises:
        EncodingError: *content* cannot be written in the file's encoding, or adds U+FFFD.

    """
    if not document.raw:
        return _written_whole(document, content)
    if document.encoding.keeps_invalid_bytes:
        return rewrite_by_lines(document, content)
    return _rewrite_folded(document, content)


def rewrite_by_lines(document: TextDocument[Any], content: str) -> Change:
    """:func:`rewrite_whole` line by line, lines shown with U+FFFD comparing equal to the file's."""
    endings, encoding = document.endings, document.encoding
    old_lines = endings.split_lines(document.raw)
    new_lines = endings.split_lines(document.units(content, what="content"))
    head, tail = common_ends(old_lines, new_lines, partial(_same_line, document))
    replaced = old_lines[head : len(old_lines) - tail]
    added = new_lines[head : len(new_lines) - tail]
    refuse_added_replacement_chars(
        sum(count_replacement_chars(line, encoding) for line, _ in added)
        - sum(count_replacement_chars(line, encoding) for line, _ in replaced),
        path=document.path,
    )
    ending, empty = endings.dominant(document.raw), endings.empty
    kept_head = empty.join(line + ending_ for line, ending_ in old_lines[:head])
    middle = empty.join(line + (ending if ending_ else ending_) for line, ending_ in added)
    kept_tail = empty.join(line + ending_ for line, ending_ in old_lines[len(old_lines) - tail :])
    middle = _sealed(document, kept_head[-1:], middle, kept_tail[:1])
    diff = None
    if len(replaced) + len(added) <= MAX_DIFF_LINES:
        before = "".join(document.text_of(line) + "\n" for line, _ in replaced)
        after = "".join(document.text_of(line) + "\n" for line, _ in added)
        diff = short_diff(before, after, first_line=head + 1)
    return Change(
        data=document.encode(kept_head + middle + kept_tail),
        replacements=0,
        first_line=head + 1,
        last_line=head + max(1, len(added)),
        diff=diff,
        total_lines=len(new_lines),
    )


def common_ends(
    old: Sequence[T], new: Sequence[T], same: Callable[[T, T], bool] = operator.eq
) -> tuple[int, int]:
    """How many leading, then trailing, items *old* and *new* share (*same* compares them)."""
    head, shortest = 0, min(len(old), len(new))
    while head < shortest and same(old[head], new[head]):
        head += 1
    tail = 0
    while tail < shortest - head and same(old[-1 - tail], new[-1 - tail]):
        tail += 1
    return head, tail


def _written_whole(document: TextDocument[AnyStr], content: str) -> Change:
    """:func:`rewrite_whole` of an empty file: *content* as it is, converted once."""
    own, endings = document.units(content, what="content", fold=False), document.endings
    refuse_added_replacement_chars(
        count_replacement_chars(own, document.encoding), path=document.path
    )
    lines = endings.count_lines(own)
    diff = None
    if lines <= MAX_DIFF_LINES and len(own) <= _MAX_DIFF_UNITS:
        diff = short_diff("", _whole_lines(document.text_of(endings.fold(own))), first_line=1)
    return Change(
        data=document.encode(own),
        replacements=0,
        first_line=1,
        last_line=max(1, lines),
        diff=diff,
        total_lines=lines,
    )


def _rewrite_folded(document: TextDocument[AnyStr], content: str) -> Change:
    """:func:`rewrite_whole`, the new lines taking the file's dominant ending.

    Each large intermediate is let go once the next is made, and the kept parts
    are joined from views of the file.
    """
    endings, raw = document.endings, document.raw
    lf, new = endings.lf, document.units(content, what="content")
    old = document.__dict__.get("logical") or endings.fold(raw)  # not cached for one use
    common = _common_length(old, new, most=min(len(old), len(new)))
    head = len(old) if common == len(old) == len(new) else old.rfind(lf, 0, common) + 1
    tail = _common_length(old, new, most=min(len(old), len(new)) - head, from_end=True)
    old_end, new_end = len(old) - tail, len(new) - tail
    starts_lines = (old_end == 0 or old[old_end - 1 : old_end] == lf) and (
        new_end == 0 or new[new_end - 1 : new_end] == lf
    )
    if tail and not starts_lines:  # the common end starts inside a line: keep whole lines
        skip = old.find(lf, old_end, len(old)) + 1
        skip = len(old) if skip == 0 else skip
        old_end, new_end = skip, new_end + (skip - old_end)
    ending = endings.dominant(raw)
    raw_head = endings.to_raw(raw, head)
    raw_tail = endings.to_raw(raw, old_end, (head, raw_head))
    added, total_lines = new[head:new_end], _lines_in(new, lf)
    del new
    refuse_added_replacement_chars(
        count_replacement_chars(added, document.encoding)
        - count_replacement_chars(raw, document.encoding, raw_head, raw_tail),
        path=document.path,
    )
    head_lines = old.count(lf, 0, head) + (1 if head and old[head - 1 : head] != lf else 0)
    added_lines = _lines_in(added, lf)
    diff = None
    small = (old_end - head) + len(added) <= _MAX_DIFF_UNITS
    if small and _lines_in(old, lf, head, old_end) + added_lines <= MAX_DIFF_LINES:
        diff = short_diff(
            _whole_lines(document.text_of(old[head:old_end])),
            _whole_lines(document.text_of(added)),
            first_line=head_lines + 1,
        )
    del old
    middle = added.replace(lf, ending) if ending != lf else added
    del added
    middle = _sealed(document, raw[raw_head - 1 : raw_head], middle, raw[raw_tail : raw_tail + 1])
    return Change(
        data=_spliced_whole(document, raw_head, middle, raw_tail),
        total_lines=total_lines,
        replacements=0,
        first_line=head_lines + 1,
        last_line=head_lines + max(1, added_lines),
        diff=diff,
    )


def _sealed(
    document: TextDocument[AnyStr], before: AnyStr, middle: AnyStr, after: AnyStr
) -> AnyStr:
    r"""*middle*, kept from fusing with a lone ``\r`` before it or a ``\n`` after it."""
    return seal(
        document.endings,
        before or None,
        middle,
        after or None,
        path=document.path,
        hint="Change this spot with edit: the line breaks on either side of it do not combine.",
    )


def _spliced_whole(document: TextDocument[Any], head: int, middle: Any, tail: int) -> bytes:
    """The file's bytes: its raw units up to *head*, *middle*, and its units from *tail*."""
    source: Any = slicer(document.raw)
    if isinstance(source, str):
        return document.encode(source[:head] + middle + source[tail:])
    bom = document.encoding.bom
    if head == 0 and tail == len(source) and not bom:
        return bytes(middle)  # nothing kept: the new units are the file (no copy)
    return b"".join([bom, source[:head], middle, source[tail:]])


def _same_line(
    document: TextDocument[AnyStr], old: tuple[AnyStr, AnyStr], new: tuple[AnyStr, AnyStr]
) -> bool:
    if bool(old[1]) != bool(new[1]):
        return False
    if old[0] == new[0]:
        return True
    # a line shown with U+FFFD for invalid bytes, written back unchanged
    return document.encoding.keeps_invalid_bytes and display(
        document.text_of(old[0])
    ) == document.text_of(new[0])


def _common_length(a: AnyStr, b: AnyStr, *, most: int, from_end: bool = False) -> int:
    """How many leading (*from_end*: trailing) units *a* and *b* share, at most *most*."""
    at, block = 0, _COMPARED
    while at < most:
        step = min(block, most - at)
        if from_end:
            same = a[len(a) - at - step : len(a) - at] == b[len(b) - at - step : len(b) - at]
        else:
            same = a[at : at + step] == b[at : at + step]
        if same:
            at += step
        elif block > 1:
            block //= 16
        else:
            return at
    return most


def _lines_in(units: AnyStr, lf: AnyStr, start: int = 0, end: int | None = None) -> int:
    """How many lines *units* ``[start:end]`` holds (a last one without an ending counts)."""
    end = len(units) if end is None else end
    return units.count(lf, start, end) + (
        1 if end > start and not units.endswith(lf, start, end) else 0
    )


def _whole_lines(text: str) -> str:
    """*text* with a final line break, as the diff of whole lines shows it."""
    return text if not text or text.endswith("\n") else text + "\n"
