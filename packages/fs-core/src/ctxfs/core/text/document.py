r"""A whole text file in memory, and the changes that keep every other byte as it was.

Matching runs on the logical view (endings folded to ``\n``); splicing runs on
the file's own units (bytes for UTF-8 and single-byte encodings, text
otherwise), so bytes outside the changed spans, mixed line endings, a missing
final newline, a BOM and even invalid bytes come out exactly as they went in.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, AnyStr, Final, Generic, TypeAlias

from ctxfs.core.errors import (
    AmbiguousMatch,
    EncodingError,
    FsError,
    InvalidArgument,
    NoChange,
    NoMatch,
)
from ctxfs.core.text.diffs import MAX_DIFF_CHARS, MAX_DIFF_LINES, short_diff
from ctxfs.core.text.encodings import TextEncoding, detect_encoding
from ctxfs.core.text.lines import BYTE_ENDINGS, TEXT_ENDINGS, Endings
from ctxfs.core.text.mismatch import MAX_DIAGNOSED_CHARS, diagnose_no_match, undiagnosed
from ctxfs.core.text.options import LINE_NUMBER_PREFIX, TextOptions

__all__ = [
    "AnyDocument",
    "Change",
    "TextDocument",
    "display",
    "has_lone_surrogates",
    "strip_line_numbers",
]

_ESCAPED_BYTES_AS_FFFD = dict.fromkeys(range(56448, 56576), 65533)
_FFFD = "\ufffd"
_BLOCK = 1 << 16


def display(text: str) -> str:
    """Show invalid bytes (carried as escapes) as U+FFFD, one per byte."""
    return text.translate(_ESCAPED_BYTES_AS_FFFD)


def has_lone_surrogates(text: str) -> bool:
    """Whether *text* holds a lone surrogate (an invalid byte carried as an escape, say).

    No UTF-8 encoder takes one. The check runs in C (the UTF-8 encoder), several
    times faster than a regular expression on text beyond ASCII.
    """
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@dataclass(frozen=True, kw_only=True)
class Change:
    """New file content and where it differs from the old."""

    data: bytes
    replacements: int
    first_line: int
    """1-based first changed line, in the new text."""
    last_line: int
    """1-based last changed line, in the new text."""
    stripped_line_numbers: bool = False
    """Whether read-output line numbers were removed from old_string (and new_string)."""
    diff: str | None = None
    """A unified diff of the change when it is small (see :mod:`~ctxfs.core.text.diffs`)."""
    total_lines: int | None = None
    """Lines of the new text, where the change counts them (a whole rewrite)."""


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

    # -- conversions ----------------------------------------------------------------

    def units(self, text: str, *, what: str, fold: bool = True) -> AnyStr:
        r"""Convert caller text to the document's units, line endings folded to ``\n``.

        With *fold* false, the text keeps its own line endings.
        """
        folded = TEXT_ENDINGS.fold(text) if fold else text
        if isinstance(self.raw, str):
            self._refuse_lone_surrogates(folded, what)
            return folded
        try:  # every encoder refuses a lone surrogate: the text is encoded once
            return folded.encode(self.encoding.codec)
        except UnicodeEncodeError as exc:
            self._refuse_lone_surrogates(folded, what)
            raise _unencodable(self.path, self.encoding, folded, exc) from None

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
            raise _unencodable(self.path, self.encoding, raw, exc) from None

    def _replacement_chars(self, units: AnyStr, start: int = 0, end: int | None = None) -> int:
        """Real U+FFFD characters in *units* ``[start:end]`` (escaped invalid bytes are not)."""
        if isinstance(units, str):
            return units.count(_FFFD, start, end)
        return units.count(_FFFD.encode(), start, end) if self.encoding.codec == "utf-8" else 0

    def _refuse_added_replacement_chars(self, added: int) -> None:
        """Nothing ever writes U+FFFD: it marks data already lost, not text."""
        if added > 0:
            raise EncodingError(
                f"the new content of {self.path} would add U+FFFD replacement characters",
                path=self.path,
                hint="Do not copy '\ufffd' markers into new text; they stand for bytes "
                "that are not valid text and cannot be written back.",
            )

    # -- positions ------------------------------------------------------------------

    def occurrences(self, text: str) -> int:
        """How many times *text* occurs, without overlaps (0 if it cannot be in the file)."""
        try:
            return self.logical.count(self.units(text, what="text"))
        except FsError:
            return 0

    def find_all(self, needle: AnyStr) -> list[int]:
        """Return the logical start of every non-overlapping occurrence, left to right."""
        found, start = [], self.logical.find(needle)
        while start != -1:
            found.append(start)
            start = self.logical.find(needle, start + len(needle))
        return found

    # -- changes ----------------------------------------------------------------------

    def replace(self, old_string: str, new_string: str, *, replace_all: bool) -> Change:
        """Replace *old_string* once (or everywhere with *replace_all*) on the logical view.

        Raises:
            NoMatch: *old_string* does not occur; the error says what is closest.
            AmbiguousMatch: It occurs more than once and *replace_all* is false.
            EncodingError: *new_string* cannot be written in the file's encoding.

        """
        old = self.units(old_string, what="old_string")
        new = self.units(new_string, what="new_string")
        if old == new:
            raise NoChange("old_string and new_string differ only in line endings", path=self.path)
        matches, stripped = self.find_all(old), False
        if not matches and (pasted := strip_line_numbers(old_string)) is not None:
            bare, first_line = self.units(pasted[0], what="old_string"), pasted[1]
            found = self.find_all(bare)
            if 0 < first_line <= self.logical.count(self.endings.lf) + 1 and (
                self._line_start(first_line) in found
            ):
                bare_new = _strip_new_line_numbers(new_string, first_line, path=self.path)
                old, new = bare, self.units(bare_new, what="new_string")
                matches, stripped = found, True
                if old == new:
                    raise NoChange(
                        "without their line numbers, old_string and new_string are the same",
                        path=self.path,
                    )
        if not matches:
            if max(len(self.logical), len(old_string)) > MAX_DIAGNOSED_CHARS:
                message, hint, details = undiagnosed(
                    self.path, "the file or old_string is too long to search for a near match"
                )
            else:
                message, hint, details = diagnose_no_match(self.logical_text, old_string, self.path)
            raise NoMatch(message, path=self.path, hint=hint, details=details)
        if len(matches) > 1 and not replace_all:
            lines = self._lines_of(matches)
            raise AmbiguousMatch(
                f"old_string occurs {len(matches)} times in {self.path}, at lines "
                + ", ".join(map(str, lines)),
                path=self.path,
                details={"count": len(matches), "lines": lines},
            )
        self._refuse_added_replacement_chars(
            len(matches) * (new_string.count(_FFFD) - old_string.count(_FFFD))
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
        return short_diff(before, after, first_line=first)

    def insert(self, after_line: int, text: str) -> Change:
        """Insert *text* as whole lines after line *after_line* (0 inserts at the top).

        The inserted lines take the file's dominant line ending. At the end of a
        file without a final newline, the file keeps lacking one.

        Raises:
            InvalidArgument: *after_line* is outside ``0 .. total lines``.

        """
        total = self._total_lines()
        if not 0 <= after_line <= total:
            raise InvalidArgument(
                f"insert_line {after_line} is outside 0..{total} for {self.path}",
                path=self.path,
                hint=f"Give a line number from 0 (top of file) to {total} (end of file).",
                details={"total_lines": total},
            )
        raw, lf = self.raw, self.endings.lf
        self._refuse_added_replacement_chars(text.count(_FFFD))
        body = self.units(text, what="the inserted text")
        body = body.removesuffix(lf)  # whole lines: the final break is implied
        breaks, ending = body.count(lf), self.endings.dominant(raw)
        body = body.replace(lf, ending)
        at = self._raw_line_start(after_line + 1) if after_line < total else len(raw)
        if after_line == total and raw and not self.endings.ending_at(raw, len(raw) - 1):
            block = ending + body  # the file keeps lacking a final line break
        else:
            block = body + ending
        new_raw = raw[:at] + self._seal(raw[at - 1 : at], block, raw[at : at + 1]) + raw[at:]
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
        # a decoded "\n" is always a line feed of the file: no encoding here has it in a
        # multi-byte character, and invalid bytes decode to escapes
        parts = self.logical_text.split("\n")
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
            added_chars += sum(line.count(_FFFD) for line in new_lines)
            block = self.units("".join(line + "\n" for line in new_lines), what="the new lines")
            if unterminated and stop == total:  # the file keeps lacking a final line break
                block = lf + block[: -len(lf)] if start == stop and block else block[: -len(lf)]
            units.append((starts[start], starts[stop], block))
        self._refuse_added_replacement_chars(added_chars)
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

        Lines that *content* leaves as they were (a common head and tail) keep
        their own endings and bytes; the lines in between take the file's
        dominant ending. Writing back what was read is therefore byte-identical.
        An empty file has no ending to follow: *content* keeps its own.
        Memory is a few copies of the file, never a list of its lines (but for
        a file with invalid bytes, whose lines compare as shown).
        """
        if not self.raw:  # no ending to follow
            return self._written_whole(content)
        if self.encoding.keeps_invalid_bytes:
            return self._rewrite_by_lines(content)
        return self._rewrite_folded(content)

    def _written_whole(self, content: str) -> Change:
        """:meth:`rewrite` of an empty file: *content* as it is, converted once."""
        own, endings = self.units(content, what="content", fold=False), self.endings
        self._refuse_added_replacement_chars(self._replacement_chars(own))
        lines = endings.count_lines(own)
        diff = None
        if lines <= MAX_DIFF_LINES and len(own) <= _MAX_DIFF_UNITS:
            diff = short_diff("", _whole_lines(self.text_of(endings.fold(own))), first_line=1)
        return Change(
            data=self.encode(own),
            replacements=0,
            first_line=1,
            last_line=max(1, lines),
            diff=diff,
            total_lines=lines,
        )

    def _rewrite_folded(self, content: str) -> Change:
        """:meth:`rewrite`, the new lines taking the file's dominant ending.

        Each large intermediate (the folded file, the new text, its changed
        part) is let go once the next is made, and the kept parts are joined
        from views of the file, the byte-order mark with them.
        """
        lf, new = self.endings.lf, self.units(content, what="content")
        old = self.__dict__.get("logical") or self.endings.fold(self.raw)  # (not cached here)
        common = _common_prefix(old, new)
        head = len(old) if common == len(old) == len(new) else old.rfind(lf, 0, common) + 1
        tail = _common_suffix(old, new, most=min(len(old), len(new)) - head)
        old_end, new_end = len(old) - tail, len(new) - tail
        starts_lines = (old_end == 0 or old[old_end - 1 : old_end] == lf) and (
            new_end == 0 or new[new_end - 1 : new_end] == lf
        )
        if tail and not starts_lines:  # the common end starts inside a line: keep whole lines
            skip = old.find(lf, old_end, len(old)) + 1
            skip = len(old) if skip == 0 else skip
            old_end, new_end = skip, new_end + (skip - old_end)
        raw, ending = self.raw, self.endings.dominant(self.raw)
        raw_head = self.endings.to_raw(raw, head)
        raw_tail = self.endings.to_raw(raw, old_end, (head, raw_head))
        added, total_lines = new[head:new_end], _lines_in(new, lf)
        del new
        self._refuse_added_replacement_chars(
            self._replacement_chars(added) - self._replacement_chars(raw, raw_head, raw_tail)
        )
        head_lines = old.count(lf, 0, head) + (1 if head and old[head - 1 : head] != lf else 0)
        added_lines = _lines_in(added, lf)
        diff = None
        small = (old_end - head) + len(added) <= _MAX_DIFF_UNITS
        if small and _lines_in(old, lf, head, old_end) + added_lines <= MAX_DIFF_LINES:
            diff = short_diff(
                _whole_lines(self.text_of(old[head:old_end])),
                _whole_lines(self.text_of(added)),
                first_line=head_lines + 1,
            )
        del old
        middle = added.replace(lf, ending) if ending != lf else added
        del added
        return Change(
            data=self._spliced_whole(raw_head, middle, raw_tail),
            total_lines=total_lines,
            replacements=0,
            first_line=head_lines + 1,
            last_line=head_lines + max(1, added_lines),
            diff=diff,
        )

    def _spliced_whole(self, head: int, middle: Any, tail: int) -> bytes:
        """The file's bytes: its raw units up to *head*, *middle*, and its units from *tail*."""
        source: Any = _slicer(self.raw)  # a view of bytes: the kept parts are copied once
        if isinstance(source, str):
            return self.encode(source[:head] + middle + source[tail:])
        bom = self.encoding.bom
        if head == 0 and tail == len(source) and not bom:
            return bytes(middle)  # nothing kept: the new units are the file (no copy)
        return b"".join([bom, source[:head], middle, source[tail:]])

    def _rewrite_by_lines(self, content: str) -> Change:
        """:meth:`rewrite` line by line, for a file whose invalid bytes show as U+FFFD."""
        old_lines = self.endings.split_lines(self.raw)
        new_lines = self.endings.split_lines(self.units(content, what="content"))
        head, shortest = 0, min(len(old_lines), len(new_lines))
        while head < shortest and self._same_line(old_lines[head], new_lines[head]):
            head += 1
        tail = 0
        while tail < shortest - head and self._same_line(
            old_lines[-1 - tail], new_lines[-1 - tail]
        ):
            tail += 1
        replaced = old_lines[head : len(old_lines) - tail]
        added = new_lines[head : len(new_lines) - tail]
        self._refuse_added_replacement_chars(
            sum(self._replacement_chars(line) for line, _ in added)
            - sum(self._replacement_chars(line) for line, _ in replaced)
        )
        ending = self.endings.dominant(self.raw)
        units: list[AnyStr] = [line + ending_ for line, ending_ in old_lines[:head]]
        units += [line + (ending if ending_ else ending_) for line, ending_ in added]
        units += [line + ending_ for line, ending_ in old_lines[len(old_lines) - tail :]]
        return Change(
            data=self.encode(self.endings.empty.join(units)),
            replacements=0,
            first_line=head + 1,
            last_line=head + max(1, len(added)),
            diff=self._lines_diff(replaced, added, first_line=head + 1),
            total_lines=len(new_lines),
        )

    def _lines_diff(
        self,
        replaced: list[tuple[AnyStr, AnyStr]],
        added: list[tuple[AnyStr, AnyStr]],
        *,
        first_line: int,
    ) -> str | None:
        if len(replaced) + len(added) > MAX_DIFF_LINES:
            return None
        before = "".join(self.text_of(line) + "\n" for line, _ in replaced)
        after = "".join(self.text_of(line) + "\n" for line, _ in added)
        return short_diff(before, after, first_line=first_line)

    # -- helpers ------------------------------------------------------------------------

    def _same_line(self, old: tuple[AnyStr, AnyStr], new: tuple[AnyStr, AnyStr]) -> bool:
        if bool(old[1]) != bool(new[1]):
            return False
        if old[0] == new[0]:
            return True
        # a line shown with U+FFFD for invalid bytes, written back unchanged
        return self.encoding.keeps_invalid_bytes and display(self.text_of(old[0])) == self.text_of(
            new[0]
        )

    def _total_lines(self) -> int:
        raw = self.raw
        if not raw:
            return 0
        return self._terminators(raw) + (0 if self.endings.ending_at(raw, len(raw) - 1) else 1)

    def _terminators(self, raw: AnyStr) -> int:
        crlf = raw.count(self.endings.crlf)
        return raw.count(self.endings.lf) + raw.count(self.endings.cr) - crlf

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
        """Replace each logical span ``[start, end)`` by its new (folded) units, in the raw units.

        The spans come in order and apart; each replacement takes the line
        endings of the span it replaces.
        """
        raw, endings = self.raw, self.endings
        folded = self.logical is not raw  # else logical and raw positions coincide
        source: Any = _slicer(raw)  # slices of bytes are views: join copies the file once
        pieces: list[AnyStr] = []
        hint, kept_from = (0, 0), 0
        for position, stop, new in spans:
            start = endings.to_raw(raw, position, hint) if folded else position
            end = endings.to_raw(raw, stop, (position, start)) if folded else stop
            hint = (stop, end)
            pieces += [source[kept_from:start], self._with_endings(new, raw[start:end], end)]
            kept_from = end
        pieces.append(source[kept_from:])
        self._seal_replacements(pieces)
        joined = endings.empty.join(pieces)
        if self.encoding.keeps_invalid_bytes and isinstance(joined, bytes):
            self._refuse_fused_invalid_bytes(pieces, joined)
        return joined

    def _refuse_fused_invalid_bytes(self, pieces: list[Any], joined: bytes) -> None:
        """Invalid bytes kept on either side of a change must not join into a character."""
        whole = joined.decode("utf-8", "surrogateescape")
        if whole != "".join(bytes(piece).decode("utf-8", "surrogateescape") for piece in pieces):
            raise EncodingError(
                f"the change to {self.path} would join bytes that are not valid text "
                "into a character",
                path=self.path,
                hint="Keep at least one character between your change and each \ufffd "
                "marker next to it (so remove less), or leave that spot as it is.",
            )

    def _seal_replacements(self, pieces: list[Any]) -> None:
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
                pieces[index] = self._seal(preceding, pieces[index], following[index])
            if pieces[index]:
                preceding = pieces[index][-1:]

    def _seal(self, before: AnyStr | None, piece: AnyStr, after: AnyStr | None) -> AnyStr:
        r"""Keep *piece* from fusing a lone ``\r`` and a ``\n`` into one ``\r\n``.

        *before* and *after* are the units next to *piece* in the new content
        (None at either end).
        A break at either edge of *piece* is re-spelled so the line count stays
        what the literal edit says; bytes outside *piece* never change.

        Raises:
            InvalidArgument: *piece* is empty and its neighbours would fuse.

        """
        cr, lf = self.endings.cr, self.endings.lf
        if not piece:
            if before == cr and after == lf:
                raise InvalidArgument(
                    f"this edit of {self.path} would fuse a \\r line break with the \\n "
                    "after it into one line break",
                    path=self.path,
                    hint="Include one of the two line breaks in old_string.",
                )
            return piece
        if before == cr and piece.startswith(lf):
            piece = self.endings.crlf + piece[len(lf) :]  # a lone CR would pair with what follows
        if after == lf and piece.endswith(cr):
            piece += lf
        return piece

    def _with_endings(self, new: AnyStr, replaced: AnyStr, end: int) -> AnyStr:
        """Give *new* (folded) the line endings of the span it replaces."""
        lf, endings = self.endings.lf, self.endings
        if lf not in new:
            return new
        found = endings.endings_in(replaced)
        lines = new.split(lf)
        chosen: list[AnyStr]
        if len(found) == len(lines) - 1:
            chosen = found
        else:
            ending: AnyStr = (
                endings.majority(found) if found else endings.next_ending(self.raw, end)
            )
            if not ending:
                ending = endings.dominant(self.raw)
            chosen = [ending] * (len(lines) - 1)
        parts: list[AnyStr] = [lines[0]]
        for line_ending, line in zip(chosen, lines[1:], strict=True):
            after_empty_cr_line = len(parts) > 1 and parts[-1] == endings.empty
            if after_empty_cr_line and parts[-2] == endings.cr and line_ending.startswith(lf):
                parts[-2] = endings.crlf  # CR, empty line, LF would read as one CRLF
            parts += [line_ending, line]
        return endings.empty.join(parts)


AnyDocument: TypeAlias = TextDocument[bytes] | TextDocument[str]


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


def _slicer(units: bytes | str) -> Any:
    """What to slice kept spans from: a zero-copy view of bytes, the text itself otherwise."""
    return memoryview(units) if isinstance(units, bytes) else units


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


def strip_line_numbers(old_string: str) -> tuple[str, int] | None:
    """Remove read-output line numbers pasted into *old_string*.

    Applies only when every line carries the prefix, with consecutive numbers.
    Returns the bare text and its first line number, or None when *old_string*
    does not qualify; the caller still checks that the text is at that line.
    """
    numbers = _prefix_numbers(old_string)
    if not numbers or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return None
    return _strip_prefixes(old_string), numbers[0]


def _strip_new_line_numbers(new_string: str, first_line: int, *, path: str) -> str:
    """*new_string* without the line numbers pasted with it, numbered from *first_line*.

    A new_string whose first line does not carry *first_line* is taken as
    written. One that starts numbered must number every non-empty line,
    upwards: anything else mixes numbers with text and is refused, since
    either reading could be wrong.

    Raises:
        InvalidArgument: The numbering stops or runs backwards part way.

    """
    lines = [line for line in new_string.split("\n") if line]
    prefixes = [LINE_NUMBER_PREFIX.match(line) for line in lines]
    if not prefixes or prefixes[0] is None or int(prefixes[0].group(1)) != first_line:
        return new_string
    numbers = [int(prefix.group(1)) for prefix in prefixes if prefix]
    if len(numbers) < len(lines) or numbers != sorted(set(numbers)):
        raise InvalidArgument(
            "new_string starts with the line numbers read shows, but not every line "
            "carries one in order",
            path=path,
            hint="Write new_string without line numbers, exactly as the text should read.",
            details={"field": "new_string"},
        )
    return _strip_prefixes(new_string)


def _prefix_numbers(text: str) -> list[int] | None:
    """The pasted line number of each line of *text*, or None if a line has none."""
    numbers, start = [], 0
    while start < len(text):  # line by line: most texts fail on the first
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        prefix = LINE_NUMBER_PREFIX.match(text[start:end])
        if prefix is None:
            return None
        numbers.append(int(prefix.group(1)))
        start = end + 1
    return numbers


def _strip_prefixes(text: str) -> str:
    return "\n".join(LINE_NUMBER_PREFIX.sub("", line, count=1) for line in text.split("\n"))


def _unencodable(
    path: str, encoding: TextEncoding, text: str, exc: UnicodeEncodeError
) -> EncodingError:
    char = text[exc.start]
    return EncodingError(
        f"{path} is {encoding.label}, which cannot hold {char!r} (U+{ord(char):04X})",
        path=path,
        hint=f"Use only characters that {encoding.codec} can encode; the file was not changed.",
        details={"encoding": encoding.codec, "character": char},
    )


_COMPARED: Final = 1 << 16


def _common_prefix(a: AnyStr, b: AnyStr) -> int:
    """The length of the longest common prefix of *a* and *b*, comparing in blocks."""
    shortest, at = min(len(a), len(b)), 0
    block = _COMPARED
    while at < shortest:
        end = min(at + block, shortest)
        if a[at:end] == b[at:end]:
            at = end
        elif block > 1:
            block //= 16
        else:
            return at
    return shortest


def _common_suffix(a: AnyStr, b: AnyStr, *, most: int) -> int:
    """The length of the longest common suffix of *a* and *b*, at most *most*."""
    at, block = 0, _COMPARED
    while at < most:
        step = min(block, most - at)
        if a[len(a) - at - step : len(a) - at] == b[len(b) - at - step : len(b) - at]:
            at += step
        elif block > 1:
            block //= 16
        else:
            return at
    return most


_MAX_DIFF_UNITS: Final = 4 * MAX_DIFF_CHARS + 2
"""Units (bytes of up to four a character, or characters) beyond which a region's diff
is surely too long to show: it is not decoded for one."""


def _lines_in(units: AnyStr, lf: AnyStr, start: int = 0, end: int | None = None) -> int:
    """How many lines *units* ``[start:end]`` holds (a last one without an ending counts)."""
    end = len(units) if end is None else end
    return units.count(lf, start, end) + (
        1 if end > start and not units.endswith(lf, start, end) else 0
    )


def _whole_lines(text: str) -> str:
    """*text* with a final line break, as the diff of whole lines shows it."""
    return text if not text or text.endswith("\n") else text + "\n"
