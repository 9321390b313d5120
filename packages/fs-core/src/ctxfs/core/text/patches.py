"""Patches over several files: what each file gets, and where a hunk applies in its lines.

A :class:`FilePatch` adds, deletes or updates (and may move) one file;
:func:`patch_document` changes only the lines its hunks mark added or removed, so
a context line matched loosely keeps its bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from ctxfs.core.errors import AmbiguousMatch, NoChange, NoMatch
from ctxfs.core.text.diffs import shared_ends
from ctxfs.core.text.document import AnyDocument, Change

__all__ = ["FilePatch", "Hunk", "PatchAction", "locate_hunks", "patch_document"]


class PatchAction(StrEnum):
    """What a patch does to one file."""

    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True, kw_only=True)
class Hunk:
    """One change to a file's lines: *old* (context and removed) becomes *new*.

    A hunk without old lines adds its lines at the end of the file.
    """

    anchors: tuple[str, ...] = ()
    """Lines (from ``@@`` headers) the change is below, found in turn before it."""
    old: tuple[str, ...]
    new: tuple[str, ...]
    at_end: bool = False
    """The change ends at the end of the file (``*** End of File``)."""
    edits: tuple[tuple[int, int, int, int], ...] = ()
    """Where *old* becomes *new*, as the patch marks it: ``(old_from, old_to, new_from,
    new_to)`` each, in order; the lines between are context. Empty: the lines *old* and *new*
    do not share at their start and their end."""


@dataclass(frozen=True, kw_only=True)
class FilePatch:
    """What a patch does to one file."""

    action: PatchAction
    path: str
    move_to: str | None = None
    """Where an updated file goes."""
    content: str | None = None
    """The whole text of an added file."""
    hunks: tuple[Hunk, ...] = ()


def locate_hunks(lines: Sequence[str], patch: FilePatch) -> list[int]:
    """The line (0-based) where each hunk of *patch* applies in *lines* (a file's, unbroken).

    Hunks are found in order, each below the one before: its anchors first,
    then its old lines, compared exactly, then without trailing whitespace,
    then without surrounding whitespace. A hunk without anchors must match once
    below the hunk before it (or at one place only that lets the hunks after it apply); one
    with anchors applies at the first match below them.

    Raises:
        NoMatch: A hunk's anchor or old lines are not found; ``details["hunk"]``
            (0-based) names it, and the message shows its first lines.
        AmbiguousMatch: A hunk without anchors matches twice; ``details["hunk"]``
            names it, ``details["lines"]`` where (1-based).

    """

    @functools.cache  # the file's lines under each fold, made once, when first needed
    def file(fold: _Fold) -> Sequence[str]:
        return lines if fold is None else [fold(line) for line in lines]

    return _located(file, len(lines), patch, 0, 0, unique=True)


def _located(
    file: Callable[[_Fold], Sequence[str]],
    count: int,
    patch: FilePatch,
    first: int,
    cursor: int,
    *,
    unique: bool,
) -> list[int]:
    """Where hunks *first* on of *patch* apply, from line *cursor* on (see :func:`locate_hunks`).

    With *unique*, a hunk without anchors that matches twice is ambiguous, unless only one
    of the two places lets the hunks after it apply.
    """
    starts: list[int] = []
    for index in range(first, len(patch.hunks)):
        hunk = patch.hunks[index]
        for anchor in hunk.anchors:
            after, _ = _find(file, (anchor,), cursor, at_end=False)
            if after is None:
                raise _not_found(patch, index, f"its @@ line {anchor!r} is")
            cursor = after + 1
        if not hunk.old:  # lines added at the end (below its anchors), as the models are taught
            starts.append(count)
            cursor = count
            continue
        start, fold = _find(file, hunk.old, cursor, at_end=hunk.at_end)
        if start is None:
            what = "its context and removed lines are"
            if hunk.at_end:
                what += " not the file's last lines ('*** End of File'), or"
            raise _not_found(patch, index, what)
        if unique and not hunk.anchors and not hunk.at_end:
            folded = hunk.old if fold is None else [fold(line) for line in hunk.old]
            again = _index(file(fold), folded, start + 1)
            if again is not None:
                start = _one_of(file, count, patch, index, (start, again))
        starts.append(start)
        cursor = start + len(hunk.old)
    return starts


def _one_of(
    file: Callable[[_Fold], Sequence[str]],
    count: int,
    patch: FilePatch,
    index: int,
    places: tuple[int, int],
) -> int:
    """The first of hunk *index*'s two *places*, unless the hunks after it apply below the second.

    Hunks apply at their first match, so what applies below the second place applies below
    the first too: only the second needs trying. Past :data:`_PINNED_HUNKS` hunks after it,
    none is tried (the work would grow with every pair).

    Raises:
        AmbiguousMatch: The hunks after it apply below the second place too.

    """
    hunk = patch.hunks[index]
    if len(patch.hunks) - index - 1 <= _PINNED_HUNKS:
        try:
            _located(file, count, patch, index + 1, places[1] + len(hunk.old), unique=False)
        except NoMatch:
            return places[0]
    raise _ambiguous(patch, index, (places[0] + 1, places[1] + 1))


def patch_document(document: AnyDocument, patch: FilePatch) -> Change:
    """The change *patch*'s hunks make to *document*; only added and removed lines change.

    Raises:
        NoMatch: As :func:`locate_hunks`.
        NoChange: The hunks add and remove the same lines.
        EncodingError: An added line cannot be written in the file's encoding.

    """
    spans: list[tuple[int, int, tuple[str, ...]]] = []
    for start, hunk in zip(locate_hunks(document.lines, patch), patch.hunks, strict=True):
        for old_from, old_to, new_from, new_to in hunk.edits or _edits(hunk.old, hunk.new):
            if hunk.old[old_from:old_to] != hunk.new[new_from:new_to]:  # (else: as they are)
                spans.append((start + old_from, start + old_to, hunk.new[new_from:new_to]))
    if not spans:
        raise NoChange(
            f"the hunks for {patch.path} change nothing: the lines they remove are the lines "
            "they add",
            path=patch.path,
            hint="Mark with - the lines as they are and with + the lines as they should be.",
        )
    return document.replace_lines(spans)


def _edits(old: Sequence[str], new: Sequence[str]) -> tuple[tuple[int, int, int, int], ...]:
    """The one edit that makes *old* into *new*: what lies between the lines they share.

    Those at their start and at their end are context.
    """
    shared, tail = shared_ends(old, new)
    return ((shared, len(old) - tail, shared, len(new) - tail),)


_PINNED_HUNKS: Final = 16
"""Hunks after an ambiguous one that may still single out its place (see :func:`_one_of`)."""

_Fold = Callable[[str], str] | None
_FOLDS: Final[tuple[_Fold, ...]] = (None, str.rstrip, str.strip)
"""How lines compare, loosest last (None: exactly)."""


def _find(
    file: Callable[[_Fold], Sequence[str]], wanted: Sequence[str], cursor: int, *, at_end: bool
) -> tuple[int | None, _Fold]:
    """The first line from *cursor* where *wanted* lines follow (at the end, if *at_end*).

    With the fold they matched under (the last tried where none did).
    """
    for fold in _FOLDS:
        lines = file(fold)
        folded = list(wanted) if fold is None else [fold(line) for line in wanted]
        if at_end:
            last = len(lines) - len(folded)
            if last >= cursor and list(lines[last:]) == folded:
                return last, fold
        elif (start := _index(lines, folded, cursor)) is not None:
            return start, fold
    return None, None


def _index(haystack: Sequence[str], needle: Sequence[str], start: int) -> int | None:
    """Where *needle* first occurs in *haystack* from *start*: linear (Knuth-Morris-Pratt)."""
    failure, matched = [0] * len(needle), 0
    for at in range(1, len(needle)):
        while matched and needle[at] != needle[matched]:
            matched = failure[matched - 1]
        if needle[at] == needle[matched]:
            matched += 1
        failure[at] = matched
    matched = 0
    for at in range(start, len(haystack)):
        while matched and haystack[at] != needle[matched]:
            matched = failure[matched - 1]
        if haystack[at] == needle[matched]:
            matched += 1
            if matched == len(needle):
                return at - matched + 1
    return None


def _ambiguous(patch: FilePatch, index: int, lines: tuple[int, int]) -> AmbiguousMatch:
    hunk = patch.hunks[index]
    return AmbiguousMatch(
        f"hunk {index + 1} of {len(patch.hunks)} matches {patch.path} at lines {lines[0]} and "
        f"{lines[1]} (below the hunks before it); nothing was changed",
        path=patch.path,
        hint="Add an @@ line naming the function or class the change is in (the first "
        "match below it applies), or more context lines.",
        details={"hunk": index, "lines": list(lines), "first_lines": list(hunk.old[:3])},
    )


def _not_found(patch: FilePatch, index: int, what: str) -> NoMatch:
    hunk = patch.hunks[index]
    shown = "\n".join((*hunk.anchors, *hunk.old)[:5])
    return NoMatch(
        f"hunk {index + 1} of {len(patch.hunks)} does not apply to {patch.path}: "
        f"{what} not in the file (below the hunks before it):\n{shown}",
        path=patch.path,
        hint="Read the file again and copy the context lines exactly; hunks apply in order.",
        details={"hunk": index},
    )
