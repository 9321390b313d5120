r"""Splicing new units into a file's raw units, every byte outside the spans kept.

New units arrive folded (endings as ``\n``) and take the endings of what they
replace; a splice never lets a lone ``\r`` and a ``\n`` fuse into one break,
nor invalid bytes on either side of a change join into a character.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, AnyStr

from ctxfs.core.errors import EncodingError, InvalidArgument
from ctxfs.core.text.lines import Endings

__all__ = ["seal", "slicer", "splice"]


def splice(
    raw: AnyStr,
    endings: Endings[AnyStr],
    spans: Sequence[tuple[int, int, AnyStr]],
    *,
    folded: bool,
    path: str,
    keeps_invalid_bytes: bool,
) -> AnyStr:
    r"""Replace each logical span ``[start, end)`` of *raw* by its new (folded) units.

    The spans come in order and apart; each replacement takes the line endings
    of the span it replaces. *folded* says whether logical and raw positions differ.

    Raises:
        InvalidArgument: An empty replacement would fuse a ``\r`` and a ``\n``.
        EncodingError: Invalid bytes on both sides of a change would join.

    """
    source: Any = slicer(raw)  # slices of bytes are views: join copies the file once
    pieces: list[AnyStr] = []
    hint, kept_from = (0, 0), 0
    for position, stop, new in spans:
        start = endings.to_raw(raw, position, hint) if folded else position
        end = endings.to_raw(raw, stop, (position, start)) if folded else stop
        hint = (stop, end)
        pieces += [source[kept_from:start], _with_endings(raw, endings, new, raw[start:end], end)]
        kept_from = end
    pieces.append(source[kept_from:])
    _seal_replacements(endings, pieces, path=path)
    joined = endings.empty.join(pieces)
    if keeps_invalid_bytes and isinstance(joined, bytes):
        _refuse_fused_invalid_bytes(pieces, joined, path=path)
    return joined


def slicer(units: bytes | str) -> Any:
    """What to slice kept spans from: a zero-copy view of bytes, the text itself otherwise."""
    return memoryview(units) if isinstance(units, bytes) else units


def seal(
    endings: Endings[AnyStr],
    before: AnyStr | None,
    piece: AnyStr,
    after: AnyStr | None,
    *,
    path: str,
    hint: str = "Include one of the two line breaks in old_string.",
) -> AnyStr:
    r"""Keep *piece* from fusing a lone ``\r`` and a ``\n`` into one ``\r\n``.

    *before* and *after* are the units next to *piece* in the new content (None
    at either end). A break at an edge of *piece* is re-spelled so the line
    count stays what the literal edit says; bytes outside *piece* never change.

    Raises:
        InvalidArgument: *piece* is empty and its neighbours would fuse.

    """
    cr, lf = endings.cr, endings.lf
    if not piece:
        if before == cr and after == lf:
            raise InvalidArgument(
                f"this edit of {path} would fuse a \\r line break with the \\n "
                "after it into one line break",
                path=path,
                hint=hint,
            )
        return piece
    if before == cr and piece.startswith(lf):
        piece = endings.crlf + piece[len(lf) :]
    if after == lf and piece.endswith(cr):
        piece += lf
    return piece


def _seal_replacements(endings: Endings[Any], pieces: list[Any], *, path: str) -> None:
    """Seal each replacement (odd index) against its new neighbours, in linear time."""
    following: list[Any] = [None] * len(pieces)  # first unit of what follows each piece
    upcoming = None
    for index in range(len(pieces) - 1, -1, -1):
        following[index] = upcoming
        if pieces[index]:
            upcoming = pieces[index][:1]
    preceding = None  # last unit of the new content so far, replacements sealed
    for index in range(len(pieces)):
        if index % 2:
            pieces[index] = seal(endings, preceding, pieces[index], following[index], path=path)
        if pieces[index]:
            preceding = pieces[index][-1:]


def _refuse_fused_invalid_bytes(pieces: list[Any], joined: bytes, *, path: str) -> None:
    whole = joined.decode("utf-8", "surrogateescape")
    if whole != "".join(bytes(piece).decode("utf-8", "surrogateescape") for piece in pieces):
        raise EncodingError(
            f"the change to {path} would join bytes that are not valid text into a character",
            path=path,
            hint="Keep at least one character between your change and each \ufffd "
            "marker next to it (so remove less), or leave that spot as it is.",
        )


def _with_endings(
    raw: AnyStr, endings: Endings[AnyStr], new: AnyStr, replaced: AnyStr, end: int
) -> AnyStr:
    """Give *new* (folded) the line endings of *replaced*, the span of *raw* ending at *end*."""
    lf = endings.lf
    if lf not in new:
        return new
    found = endings.endings_in(replaced)
    lines = new.split(lf)
    chosen: list[AnyStr]
    if len(found) == len(lines) - 1:
        chosen = found
    else:
        ending: AnyStr = endings.majority(found) if found else endings.next_ending(raw, end)
        if not ending:
            ending = endings.dominant(raw)
        chosen = [ending] * (len(lines) - 1)
    parts: list[AnyStr] = [lines[0]]
    for line_ending, line in zip(chosen, lines[1:], strict=True):
        after_empty_cr_line = len(parts) > 1 and parts[-1] == endings.empty
        if after_empty_cr_line and parts[-2] == endings.cr and line_ending.startswith(lf):
            parts[-2] = endings.crlf  # CR, empty line, LF would read as one CRLF
        parts += [line_ending, line]
    return endings.empty.join(parts)
