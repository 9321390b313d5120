"""Replacements checked before anything is read, and several applied in turn, all or nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxfs.core.errors import EmptyOldString, FsError, InvalidArgument, NoChange, NoMatch
from ctxfs.core.text.changes import display
from ctxfs.core.text.diffs import short_diff
from ctxfs.core.text.document import AnyDocument, Change, decode_document
from ctxfs.core.text.lines import TEXT_ENDINGS
from ctxfs.core.text.options import TextOptions
from ctxfs.core.text.rewrite import common_ends

__all__ = ["Replacement", "check_edit_strings", "check_replacements", "replace_in_turn"]


@dataclass(frozen=True, kw_only=True)
class Replacement:
    """One edit: *old_string* becomes *new_string* (once, or everywhere with *replace_all*)."""

    old_string: str
    new_string: str
    replace_all: bool = False


def check_edit_strings(old_string: str, new_string: str) -> None:
    """Refuse an empty *old_string* and identical strings before anything is read."""
    if not old_string:
        raise EmptyOldString("old_string is empty")
    if old_string == new_string:
        raise NoChange("old_string and new_string are identical")


def check_replacements(edits: Sequence[Replacement]) -> None:
    """Refuse an empty list, or any edit :func:`check_edit_strings` refuses, naming it."""
    if not edits:
        raise InvalidArgument("edits is empty: give at least one edit")
    for index, edit in enumerate(edits):
        try:
            check_edit_strings(edit.old_string, edit.new_string)
        except FsError as error:
            raise _of_edit(error, index, len(edits)) from None


def replace_in_turn(
    document: AnyDocument, edits: Sequence[Replacement], options: TextOptions
) -> Change:
    """Apply *edits* in order, each to the text the one before left; all or nothing.

    The change's lines and diff span everything that differs in the end.

    Raises:
        NoMatch, AmbiguousMatch, NoChange, EncodingError: The first edit that fails,
            as :meth:`TextDocument.replace` says, its message naming it and
            ``details["edit"]`` its 0-based index.
        NoChange: The edits together leave the file as it was.

    """
    current, replacements = document, 0
    for index, edit in enumerate(edits):
        try:
            change = current.replace(edit.old_string, edit.new_string, replace_all=edit.replace_all)
        except NoMatch as error:
            if index and TEXT_ENDINGS.fold(edit.old_string) in document.logical_text:
                raise _consumed(error, index, len(edits)) from None
            raise _of_edit(error, index, len(edits)) from None
        except FsError as error:
            raise _of_edit(error, index, len(edits)) from None
        replacements += change.replacements
        current = decode_document(
            change.data, options, path=document.path, encoding=document.encoding
        )
    if current.raw == document.raw:
        raise NoChange(
            "the edits leave the file as it was: later ones undo earlier ones",
            path=document.path,
            hint="Nothing to do; give only the edits that change the file.",
        )
    if document.encoding.keeps_invalid_bytes:  # (its text carries them as escapes)
        first, last, diff = _changed_lines(document.logical_text, current.logical_text)
    else:
        whole = document.rewrite(current.logical_text)
        first, last, diff = whole.first_line, whole.last_line, whole.diff
    return Change(
        data=change.data, replacements=replacements, first_line=first, last_line=last, diff=diff
    )


def _changed_lines(before: str, after: str) -> tuple[int, int, str | None]:
    """The first and last changed lines of *after* (1-based), and the diff, invalid bytes shown."""
    old, new = before.split("\n"), after.split("\n")
    head, tail = common_ends(old, new)
    replaced, added = old[head : len(old) - tail], new[head : len(new) - tail]
    diff = short_diff(
        display("".join(line + "\n" for line in replaced)),
        display("".join(line + "\n" for line in added)),
        first_line=head + 1,
    )
    return head + 1, head + max(1, len(added)), diff


def _consumed(error: NoMatch, index: int, count: int) -> NoMatch:
    """*error* of edit *index*, whose old_string the file held before an earlier edit changed it."""
    return NoMatch(
        f"edit {index + 1} of {count} (index {index}): its old_string is in the file, but an "
        "earlier edit of this call changed it (each edit applies to the text the ones before "
        "left); nothing was changed",
        path=error.path,
        hint="Match the text as the earlier edits leave it, or make the two edits one.",
        details={"edit": index, "changed_by_an_earlier_edit": True},
    )


def _of_edit(error: FsError, index: int, count: int) -> FsError:
    """*error*, told of edit *index* (0-based) of *count*."""
    return error.retold(f"edit {index + 1} of {count} (index {index}): {error.message}", edit=index)
