r"""A whole text file in memory, and the changes that keep every other byte as it was.

Matching runs on the logical view (endings folded to ``\n``); splicing runs on
the file's own units (bytes for UTF-8 and single-byte encodings, text
otherwise), so bytes outside the changed spans, mixed line endings, a missing
final newline, a BOM and even invalid bytes come out exactly as they went in.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, AnyStr, Final, Generic, TypeAlias

from ctxfs.core.errors import (
    AmbiguousMatch,
    EncodingError,
    FsError,
    InvalidArgument,
    NoChange,
    NoMatch,
)
from ctxfs.core.text.changes import (
    FFFD,
    Change,
    display,
    has_lone_surrogates,
    refuse_added_replacement_chars,
    unencodable,
)
from ctxfs.core.text.diffs import MAX_DIFF_CHARS, short_diff
from ctxfs.core.text.encodings import TextEncoding, detect_encoding
from ctxfs.core.text.line_numbers import strip_line_numbers, strip_new_line_numbers
from ctxfs.core.text.lines import BYTE_ENDINGS, TEXT_ENDINGS, Endings
from ctxfs.core.text.mismatch import MAX_DIAGNOSED_CHARS, diagnose_no_match, undiagnosed
from ctxfs.core.text.options import TextOptions
from ctxfs.core.text.rewrite import rewrite_whole
from ctxfs.core.text.splicing import seal, splice

__all__ = [
    "AnyDocument",
    "Change",
    "TextDocument",
    "decode_document",
    "display",
    "has_lone_surrogates",
    "strip_line_numbers",
]

_BLOCK = 1 << 16
MAX_LISTED_LINES: Final = 20
"""Lines holding an ambiguous ``old_string`` an error names (it counts the others)."""


_NUL: Final[dict[type, Any]] = {str: "\0", bytes: b"\0"}


class TextDocument(Generic[AnyStr]):
    """One decoded file. Build it with :func:`decode_document`."""

    def __init__(
        self, *, path: str, encoding: TextEncoding, raw: AnyStr, endings: Endings[AnyStr]
    ) -> None:
        self.path = path
        self.encoding = encoding
        self.raw: AnyStr = raw
        """The content without its BOM, in the file's own line endings."""
        self.endings: Endings[AnyStr] = endings

    @functools.cached_property
    def logical(self) -> AnyStr:
        r"""The content with every line ending folded to ``\n``."""
        return self.endings.fold(self.raw)

    @property
    def raw_text(self) -> str:
        """The content as text, in the file's own line endings (invalid bytes as escapes)."""
        return self.text_of(self.raw)

    @functools.cached_property
    def logical_text(self) -> str:
        """The logical view as text (invalid bytes as escapes)."""
        return self.text_of(self.logical)

    def units(self, text: str, *, what: str, fold: bool = True) -> AnyStr:
        r"""Convert caller text to the document's units, line endings folded to ``\n``.

        With *fold* false, the text keeps its own line endings.

        Raises:
            InvalidArgument: *text* holds a lone surrogate, or a NUL where the document holds
                none (but for UTF-16 or UTF-32, and in *old_string*, which is not written).
            EncodingError: The encoding cannot hold *text*.

        """
        folded = TEXT_ENDINGS.fold(text) if fold else text
        if (
            "\0" in folded
            and what != "old_string"
            and not self.encoding.codec.startswith(("utf-16", "utf-32"))
            and not self._holds_nul()
        ):
            raise InvalidArgument(
                f"{what} holds a NUL character, which makes {self.path or 'a file'} binary "
                "to every reader",
                path=self.path,
                hint="Leave NUL characters out of text.",
                details={"field": what},
            )
        if isinstance(self.raw, str):
            self._refuse_lone_surrogates(folded, what)
            return folded
        try:  # every encoder refuses a lone surrogate: the text is encoded once
            return folded.encode(self.encoding.codec)
        except UnicodeEncodeError as exc:
            self._refuse_lone_surrogates(folded, what)
            raise unencodable(self.path, self.encoding, folded, exc) from None

    def _holds_nul(self) -> bool:
        """Whether the document holds a NUL already (past the bytes that tell binary files)."""
        return bool(_NUL[type(self.raw)] in self.raw)

    def _needle(self, old_string: str) -> AnyStr | None:
        """*old_string* in the document's units; None where the encoding cannot hold it."""
        try:
            return self.units(old_string, what="old_string")
        except EncodingError:
            return None

    def _refuse_lone_surrogates(self, text: str, what: str) -> None:
        if has_lone_surrogates(text):
            raise InvalidArgument(f"{what} holds lone surrogate code points", path=self.path)

    def text_of(self, units: AnyStr) -> str:
        """Decode units of this document to text."""
        if isinstance(units, str):
            return units
        return units.decode(self.encoding.codec, self.encoding.errors)

    def encode(self, raw: AnyStr) -> bytes:
        """Return the file bytes for new *raw* content."""
        if isinstance(raw, bytes):
            return self.encoding.bom + raw
        try:
            return self.encoding.bom + raw.encode(self.encoding.codec, self.encoding.errors)
        except UnicodeEncodeError as exc:
            raise unencodable(self.path, self.encoding, raw, exc) from None

    def occurrences(self, text: str) -> int:
        """How many times *text* occurs, without overlaps (0 if it cannot be in the file)."""
        try:
            return self.logical.count(self.units(text, what="text"))
        except FsError:
            return 0

    def find_all(self, needle: AnyStr) -> list[int]:
        """Return the logical start of every non-overlapping occurrence, left to right.

        An empty *needle* occurs nowhere (it would match between every two characters).
        """
        if not needle:
            return []
        found, start = [], self.logical.find(needle)
        while start != -1:
            found.append(start)
            start = self.logical.find(needle, start + len(needle))
        return found

    def replace(self, old_string: str, new_string: str, *, replace_all: bool) -> Change:
        """Replace *old_string* once (or everywhere with *replace_all*) on the logical view.

        Raises:
            NoMatch: *old_string* does not occur (nor can it, where the file's encoding
                cannot hold it); the error says what is closest.
            AmbiguousMatch: It occurs more than once and *replace_all* is false.
            EncodingError: *new_string* cannot be written in the file's encoding.

        """
        old = self._needle(old_string)
        new = self.units(new_string, what="new_string")
        if old == new:
            raise NoChange("old_string and new_string differ only in line endings", path=self.path)
        matches, stripped = [] if old is None else self.find_all(old), False
        if not matches and (pasted := strip_line_numbers(old_string)) is not None:
            bare, first_line = self._needle(pasted[0]), pasted[1]
            found = [] if bare is None else self.find_all(bare)
            if (
                bare is not None
                and 0 < first_line <= self.logical.count(self.endings.lf) + 1
                and (self._line_start(first_line) in found)
            ):
                bare_new = strip_new_line_numbers(new_string, first_line, path=self.path)
                old, new = bare, self.units(bare_new, what="new_string")
                matches, stripped = found, True
                if old == new:
                    raise NoChange(
                        "without their line numbers, old_string and new_string are the same",
                        path=self.path,
                    )
        if not matches or old is None:
            if max(len(self.logical), len(old_string)) > MAX_DIAGNOSED_CHARS:
                message, hint, details = undiagnosed(
                    self.path, "the file or old_string is too long to search for a near match"
                )
            else:
                message, hint, details = diagnose_no_match(self.logical_text, old_string, self.path)
            raise NoMatch(message, path=self.path, hint=hint, details=details)
        if len(matches) > 1 and not replace_all:
            every = list(dict.fromkeys(self._lines_of(matches)))
            lines, more = every[:MAX_LISTED_LINES], len(every) - MAX_LISTED_LINES
            raise AmbiguousMatch(
                f"old_string occurs {len(matches)} times in {self.path}, at lines "
                + ", ".join(map(str, lines))
                + (f" and {more} more lines" if more > 0 else ""),
                path=self.path,
                details={"count": len(matches), "lines": lines},
            )
        refuse_added_replacement_chars(
            len(matches) * (new_string.count(FFFD) - old_string.count(FFFD)), path=self.path
        )
        raw = self._splice([(match, match + len(old), new) for match in matches])
        starts, lf = self._lines_of(matches), self.endings.lf
        growth = new.count(lf) - old.count(lf)  # lines added by each replacement
        last_start = starts[-1] + growth * (len(matches) - 1)
        first, last = starts[0], last_start + new.count(lf) - (1 if new.endswith(lf) else 0)
        return Change(
            data=self.encode(raw),
            replacements=len(matches),
            first_line=first,
            last_line=max(first, last),
            stripped_line_numbers=stripped,
            diff=self._replacement_diff(matches, old, new, first),
        )

    def _replacement_diff(
        self, matches: list[int], old: AnyStr, new: AnyStr, first: int
    ) -> str | None:
        """The diff of the lines the matches touch, if they are few."""
        logical, lf = self.logical, self.endings.lf
        start = logical.rfind(lf, 0, matches[0]) + 1
        end = matches[-1] + len(old)
        if not old.endswith(lf):
            found = logical.find(lf, end)
            end = len(logical) if found == -1 else found + 1
        if end - start > MAX_DIFF_CHARS:
            return None
        before = self.text_of(logical[start:end])
        after = before.replace(self.text_of(old), self.text_of(new), len(matches))
        return short_diff(display(before), display(after), first_line=first)  # (as reads show)

    def insert(self, after_line: int, text: str) -> Change:
        """Insert *text* as whole lines after line *after_line* (0 inserts at the top).

        The inserted lines take the file's dominant line ending. At the end of a
        file without a final newline, the file keeps lacking one.

        Raises:
            InvalidArgument: *after_line* is outside ``0 .. total lines``.

        """
        total = self.endings.count_lines(self.raw)
        if not 0 <= after_line <= total:
            raise InvalidArgument(
                f"insert_line {after_line} is outside 0..{total} for {self.path}",
                path=self.path,
                hint=f"Give a line number from 0 (top of file) to {total} (end of file).",
                details={"total_lines": total},
            )
        raw, lf = self.raw, self.endings.lf
        refuse_added_replacement_chars(text.count(FFFD), path=self.path)
        body = self.units(text, what="the inserted text")
        body = body.removesuffix(lf)  # whole lines: the final break is implied
        breaks, ending = body.count(lf), self.endings.dominant(raw)
        body = body.replace(lf, ending)
        at = self._raw_line_start(after_line + 1) if after_line < total else len(raw)
        if after_line == total and raw and not self.endings.ending_at(raw, len(raw) - 1):
            block = ending + body  # the file keeps lacking a final line break
        else:
            block = body + ending
        new_raw = (
            raw[:at]
            + seal(self.endings, raw[at - 1 : at], block, raw[at : at + 1], path=self.path)
            + raw[at:]
        )
        inserted = TEXT_ENDINGS.fold(text).removesuffix("\n") + "\n"
        return Change(
            data=self.encode(new_raw),
            replacements=0,
            first_line=after_line + 1,
            last_line=after_line + 1 + breaks,
            diff=short_diff("", inserted, first_line=after_line + 1),
        )

    @functools.cached_property
    def lines(self) -> tuple[str, ...]:
        """The file's lines as text, without their line breaks (invalid bytes as escapes)."""
        parts = self.logical_text.split("\n")  # no codec here hides a "\n" in a character
        if not parts[-1]:
            parts.pop()  # the file ends with a line break (or is empty)
        return tuple(parts)

    def replace_lines(self, spans: Sequence[tuple[int, int, Sequence[str]]]) -> Change:
        """Replace lines ``[start, stop)`` (0-based) of each span by its new lines.

        The spans come in order and apart (an empty one inserts before line
        *start*). The new lines take the endings of the lines they replace (an
        insertion, those of the line after it); every other byte is kept. A file
        without a final line break keeps lacking one.

        Raises:
            InvalidArgument: A span is out of order or out of range.
            EncodingError: A new line cannot be written in the file's encoding.

        """
        logical, lf = self.logical, self.endings.lf
        starts = [0]  # logical start of each line, then of the end
        for part in logical.split(lf):
            starts.append(starts[-1] + len(part) + 1)
        total = len(starts) - 2 if logical.endswith(lf) or not logical else len(starts) - 1
        starts[total] = len(logical)
        spans = _joined(spans, total)  # what reaches the end is one change of the last line
        unterminated = bool(logical) and not logical.endswith(lf)
        units, previous, added_chars = [], 0, 0
        for start, stop, new_lines in spans:
            if not previous <= start <= stop <= total:
                raise InvalidArgument(
                    f"lines {start}..{stop} are not in {self.path}", path=self.path
                )
            previous = stop
            added_chars += sum(line.count(FFFD) for line in new_lines)
            block = self.units("".join(line + "\n" for line in new_lines), what="the new lines")
            if unterminated and stop == total:  # the file keeps lacking a final line break
                block = lf + block[: -len(lf)] if start == stop and block else block[: -len(lf)]
            units.append((starts[start], starts[stop], block))
        if unterminated and spans[-1][0] < spans[-1][1] == total and not spans[-1][2]:
            units = _break_before_removed(units, lf)  # (the new last line has none either)
        refuse_added_replacement_chars(added_chars, path=self.path)
        first, last, diff = self._lines_change(spans)
        return Change(
            data=self.encode(self._splice(units)),
            replacements=len(spans),
            first_line=first,
            last_line=last,
            diff=diff,
        )

    def _lines_change(
        self, spans: Sequence[tuple[int, int, Sequence[str]]]
    ) -> tuple[int, int, str | None]:
        """First and last changed lines (in the new text) of :meth:`replace_lines`; a diff."""
        old = self.lines
        top, bottom = spans[0][0], spans[-1][1]
        after: list[str] = []
        kept_from = top
        for start, stop, new_lines in spans:
            after += old[kept_from:start]
            after += new_lines
            kept_from = stop
        before = "".join(line + "\n" for line in old[top:bottom])
        diff = short_diff(before, "".join(line + "\n" for line in after), first_line=top + 1)
        return top + 1, top + max(1, len(after)), diff

    def rewrite(self, content: str) -> Change:
        """Return the change that replaces the whole text with *content*.

        See :func:`~ctxfs.core.text.rewrite.rewrite_whole`.
        """
        return rewrite_whole(self, content)

    def _raw_line_start(self, line: int) -> int:
        """Raw position where 1-based *line* starts (``line - 1`` endings precede it)."""
        return self.endings.to_raw(self.raw, self._line_start(line))

    def _line_start(self, line: int) -> int:
        """Logical position where 1-based *line* starts (it needs ``line - 1`` breaks)."""
        logical, lf = self.logical, self.endings.lf
        position, remaining = 0, line - 1
        while remaining:  # skip whole blocks by counting, then step through the last one
            block = logical.count(lf, position, position + _BLOCK)
            if block < remaining:
                position, remaining = position + _BLOCK, remaining - block
                continue
            for _ in range(remaining):
                position = logical.index(lf, position) + 1
            remaining = 0
        return position

    def _lines_of(self, logical_positions: list[int]) -> list[int]:
        lines, line, previous = [], 1, 0
        for position in logical_positions:
            line += self.logical.count(self.endings.lf, previous, position)
            lines.append(line)
            previous = position
        return lines

    def _splice(self, spans: Sequence[tuple[int, int, AnyStr]]) -> AnyStr:
        return splice(
            self.raw,
            self.endings,
            spans,
            folded=self.logical is not self.raw,
            path=self.path,
            keeps_invalid_bytes=self.encoding.keeps_invalid_bytes,
        )


AnyDocument: TypeAlias = TextDocument[bytes] | TextDocument[str]


def _break_before_removed(
    units: list[tuple[int, int, AnyStr]], lf: AnyStr
) -> list[tuple[int, int, AnyStr]]:
    """*units*, the last of which removes the last lines, made to remove the break before them."""
    start, stop, block = units.pop()
    while units and units[-1][1] == start:  # (what an adjacent unit writes ends with the break)
        start, _, earlier = units.pop()
        block = earlier + block
    if block:
        block = block[: -len(lf)]
    elif start:
        start -= len(lf)
    units.append((start, stop, block))
    return units


def _joined(
    spans: Sequence[tuple[int, int, Sequence[str]]], end: int
) -> list[tuple[int, int, Sequence[str]]]:
    """*spans*, those that meet at line *end* (the end of the file) joined into one."""
    joined: list[tuple[int, int, Sequence[str]]] = []
    for start, stop, lines in spans:
        if joined and joined[-1][1] == start == end:
            first, _, before = joined[-1]
            joined[-1] = (first, stop, [*before, *lines])
        else:
            joined.append((start, stop, lines))
    return joined


def decode_document(
    data: bytes, options: TextOptions, *, path: str, encoding: TextEncoding | None = None
) -> AnyDocument:
    """Decode a whole file, in *encoding* if it is already known, else as detected.

    Raises:
        BinaryFile: The content is binary.
        EncodingError: No encoding round-trips the content exactly.

    """
    if encoding is None:
        encoding = detect_encoding(data, options, path=path, complete=True)
    body = data[len(encoding.bom) :]
    if encoding.byte_safe:
        return TextDocument(path=path, encoding=encoding, raw=body, endings=BYTE_ENDINGS)
    text = body.decode(encoding.codec, encoding.errors)
    return TextDocument(path=path, encoding=encoding, raw=text, endings=TEXT_ENDINGS)
