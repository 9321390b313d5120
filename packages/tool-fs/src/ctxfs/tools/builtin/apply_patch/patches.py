"""The patches OpenAI's models write: the Codex patch text and the Responses API's V4A diffs.

A Codex patch names its files between ``*** Begin Patch`` and ``*** End Patch``::

    *** Add File: path        each line of the new file after a "+"
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path     (optional)
    @@ an anchor line         (optional: the hunk is below a line holding this)
     a context line
    -a removed line
    +an added line
    *** End of File           (optional: the hunk ends at the end of the file)

The Responses API's ``apply_patch`` tool sends one operation at a time: a
``create_file`` or ``update_file`` with a V4A ``diff`` (the part of the above
below the ``*** ... File:`` line), or a ``delete_file``. :func:`parse_patch` and
:func:`parse_diff` turn both into :class:`~ctxfs.core.FilePatch` values, which
``ctx.fs.apply_patch`` applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ctxfs.core import FilePatch, Hunk, InvalidArgument, PatchAction

__all__ = ["parse_diff", "parse_patch"]

_BEGIN: Final = "*** Begin Patch"
_END: Final = "*** End Patch"
_ADD: Final = "*** Add File: "
_DELETE: Final = "*** Delete File: "
_UPDATE: Final = "*** Update File: "
_MOVE: Final = "*** Move to: "
_END_OF_FILE: Final = "*** End of File"
_FILE_HEADS: Final = (_ADD, _DELETE, _UPDATE)


def parse_patch(text: str) -> list[FilePatch]:
    """The files of a Codex patch (``*** Begin Patch`` ... ``*** End Patch``).

    Raises:
        InvalidArgument: The text is not such a patch; the message says which line.

    """
    lines = _lines(text.strip())
    if not lines or lines[0].strip() != _BEGIN:
        raise _bad(1, f"a patch starts with {_BEGIN!r}")
    if lines[-1].strip() != _END:
        raise _bad(len(lines), f"a patch ends with {_END!r}")
    patches: list[FilePatch] = []
    at, last = 1, len(lines) - 1
    while at < last:
        head = lines[at]
        body_start = at + 1
        at = body_start
        while at < last and not lines[at].startswith(_FILE_HEADS):
            at += 1
        body = lines[body_start:at]
        if head.startswith(_ADD):
            patches.append(_added(head.removeprefix(_ADD), body, first=body_start + 1))
        elif head.startswith(_DELETE):
            if any(line.strip() for line in body):
                raise _bad(body_start + 1, "a deleted file takes no lines")
            patches.append(FilePatch(action=PatchAction.DELETE, path=_path(head, _DELETE)))
        elif head.startswith(_UPDATE):
            patches.append(_updated(_path(head, _UPDATE), body, first=body_start + 1))
        else:
            raise _bad(body_start, f"expected {_ADD!r}, {_DELETE!r} or {_UPDATE!r}")
    if not patches:
        raise _bad(1, "the patch changes no file")
    return patches


def parse_diff(action: PatchAction, path: str, diff: str) -> FilePatch:
    """One file's V4A *diff*, as the Responses API's ``apply_patch`` operations carry it.

    Raises:
        InvalidArgument: The diff does not parse; the message says which line.

    """
    lines = _lines(diff)
    if action is PatchAction.ADD:
        return _added(path, lines, first=1)
    if action is PatchAction.UPDATE:
        return _updated(path, lines, first=1)
    return FilePatch(action=PatchAction.DELETE, path=path)


def _added(path: str, body: Sequence[str], *, first: int) -> FilePatch:
    for number, line in enumerate(body, first):
        if not line.startswith("+"):
            raise _bad(number, "each line of an added file starts with '+'")
    text = "".join(line[1:] + "\n" for line in body)
    return FilePatch(action=PatchAction.ADD, path=path.strip(), content=text)


def _updated(path: str, body: Sequence[str], *, first: int) -> FilePatch:
    move_to = None
    if body and body[0].startswith(_MOVE):
        move_to, body, first = body[0].removeprefix(_MOVE).strip(), body[1:], first + 1
    hunks = _Hunks()
    for number, line in enumerate(body, first):
        hunks.number = number
        if line.startswith("@@"):
            hunks.close()
            if anchor := line[2:].strip():
                hunks.anchors.append(anchor)
        elif line == _END_OF_FILE:
            hunks.close(at_end=True)
        elif line.startswith(("-", "+")):
            hunks.changed(line)
        elif line.startswith(" ") or not line:
            hunks.context(line[1:])
        else:
            raise _bad(number, "a hunk line starts with ' ', '-', '+' or '@@'")
    hunks.close()
    if not hunks.done and move_to is None:
        raise _bad(first, f"the update of {path} changes nothing")
    return FilePatch(action=PatchAction.UPDATE, path=path, move_to=move_to, hunks=hunks.done)


class _Hunks:
    """The hunks of an update, read line by line: each one's lines and its marked edits."""

    def __init__(self) -> None:
        self.done: tuple[Hunk, ...] = ()
        self.number = 0  # the patch line being read
        self.anchors: list[str] = []
        self.old: list[str] = []
        self.new: list[str] = []
        self.edits: list[tuple[int, int, int, int]] = []  # each run of '-' and '+' lines
        self.run: tuple[int, int] | None = None  # where the run being read began

    def changed(self, line: str) -> None:
        """A '-' or '+' *line*."""
        self.run = self.run or (len(self.old), len(self.new))
        (self.old if line.startswith("-") else self.new).append(line[1:])

    def context(self, text: str) -> None:
        self._end_run()
        self.old.append(text)
        self.new.append(text)

    def close(self, *, at_end: bool = False) -> None:
        """End the hunk being read (refused if it changes nothing and is not empty)."""
        self._end_run()
        if self.edits:
            hunk = Hunk(
                anchors=tuple(self.anchors),
                old=tuple(self.old),
                new=tuple(self.new),
                at_end=at_end,
                edits=tuple(self.edits),
            )
            self.done = (*self.done, hunk)
        elif self.old or at_end:
            raise _bad(self.number, "a hunk with no '-' or '+' line changes nothing")
        elif self.anchors and not at_end:
            return  # (an @@ line, then another: the anchors add up)
        self.anchors, self.old, self.new, self.edits = [], [], [], []

    def _end_run(self) -> None:
        if self.run is not None:
            self.edits.append((self.run[0], len(self.old), self.run[1], len(self.new)))
            self.run = None


def _lines(text: str) -> list[str]:
    r"""*text*'s lines: only ``\n`` and ``\r\n`` end one (a form feed or U+2028 is text)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _path(head: str, prefix: str) -> str:
    return head.removeprefix(prefix).strip()


def _bad(number: int, why: str) -> InvalidArgument:
    return InvalidArgument(
        f"the patch does not parse at line {number}: {why}",
        hint="Write the patch as '*** Begin Patch', then '*** Add File: ', '*** Update File: ' "
        "(with @@ hunks of ' ', '-', '+' lines) or '*** Delete File: ' sections, then "
        "'*** End Patch'.",
        details={"field": "patch", "line": number},
    )
