"""Lines too long to give whole (ripgrep omits them), cut around their first match.

From the byte offset of the match, :func:`cut_lines` finds the line's ends and its context lines and
decodes only the parts it gives, a chunk at a time, so a 500 MB line costs a few MB. Text that is
not UTF-8 leaves the file to be read instead.
"""

from __future__ import annotations

import codecs
import os
from typing import Final

from ctxfs.core import CutLine, LineSearch

__all__ = ["cut_lines"]

_CHUNK: Final = 1 << 20
_BOM: Final = codecs.BOM_UTF8
_UTF16: Final = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def cut_lines(fd: int, firsts: dict[int, int], search: LineSearch) -> list[tuple[int, str]] | None:
    """Matching lines *firsts* (number: byte offset of the first match) and their context.

    Lines longer than ``search.max_line_chars`` come as :class:`CutLine` holding at least
    ``search.cut_chars`` characters on either side of the match (context lines: from their
    start); the others whole. None if the text is not UTF-8 (or is UTF-16).
    """
    before, after, width, cap = search.before, search.after, search.cut_chars, search.max_line_chars
    head = os.pread(fd, len(_BOM), 0)
    if head[:2] in _UTF16:
        return None  # ripgrep's offsets count the text it decoded, not these bytes
    shift = len(_BOM) if head == _BOM else 0  # ripgrep counts from after a byte-order mark
    lines: dict[int, str] = {}
    size = os.fstat(fd).st_size
    try:
        for number, given in sorted(firsts.items()):
            offset = given + shift
            start, end = _start(fd, offset), _end(fd, offset, size)
            lines[number] = _line(fd, start, end, offset, width=width, cap=cap)
            earlier, at = number, start
            while earlier > 1 and earlier > number - before and at > 0:
                earlier, stop = earlier - 1, at - 1
                at = _start(fd, stop)
                if earlier not in lines:
                    lines[earlier] = _line(fd, at, stop, None, width=width, cap=cap)
            later, stop = number, end
            while later < number + after and stop + 1 < size:
                later, at = later + 1, stop + 1
                stop = _end(fd, at, size)
                if later not in lines:
                    lines[later] = _line(fd, at, stop, None, width=width, cap=cap)
    except UnicodeDecodeError:
        return None
    return sorted(lines.items())


def _start(fd: int, offset: int) -> int:
    """Where the line holding byte *offset* begins."""
    while offset > 0:
        begin = max(0, offset - _CHUNK)
        found = os.pread(fd, offset - begin, begin).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        offset = begin
    return 0


def _end(fd: int, offset: int, size: int) -> int:
    """Where the line holding byte *offset* ends (its line break, or the end of the file)."""
    while offset < size:
        chunk = os.pread(fd, _CHUNK, offset)
        if not chunk:
            break
        found = chunk.find(b"\n")
        if found >= 0:
            return offset + found
        offset += len(chunk)
    return size


def _line(fd: int, start: int, end: int, match: int | None, *, width: int, cap: int) -> str:
    """The line in bytes *start* to *end*, whole or cut around *match* (a byte offset)."""
    if start == 0 and os.pread(fd, len(_BOM), 0) == _BOM:
        start = min(len(_BOM), end)
    if end > start and os.pread(fd, 1, end - 1) == b"\r":
        end -= 1
    if end - start <= cap:  # short enough to decode whole (cap characters take more bytes)
        text = os.pread(fd, end - start, start).decode()
        if len(text) <= cap:
            return text
    at = start if match is None else match
    column = _chars(fd, start, at)
    length = column + _chars(fd, at, end)
    begin = _aligned(fd, max(start, at - 4 * width))
    part_start = _chars(fd, start, begin)
    part = _decoded(os.pread(fd, min(end, at + 4 * width) - begin, begin))
    return CutLine(part, start=part_start, length=length, column=None if match is None else column)


def _aligned(fd: int, offset: int) -> int:
    """*offset*, or the start of the next character if it falls inside one."""
    for byte in os.pread(fd, 3, offset):
        if byte & 0xC0 != 0x80:  # not a continuation byte
            break
        offset += 1
    return offset


def _chars(fd: int, start: int, end: int) -> int:
    """The characters in bytes *start* to *end* (whole characters both), checked as UTF-8."""
    decoder, count = codecs.getincrementaldecoder("utf-8")(), 0
    while start < end:
        chunk = os.pread(fd, min(_CHUNK, end - start), start)
        if not chunk:
            break
        count += len(decoder.decode(chunk))
        start += len(chunk)
    count += len(decoder.decode(b"", final=True))
    return count


def _decoded(data: bytes) -> str:
    """*data*, whose first byte begins a character, without a character cut off at its end."""
    return codecs.getincrementaldecoder("utf-8")().decode(data)
