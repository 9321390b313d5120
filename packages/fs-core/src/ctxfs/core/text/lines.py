r"""Line endings, on bytes or on text alike.

A line ends at ``\r\n``, ``\r`` or ``\n`` and nowhere else (unlike
``str.splitlines``); the *logical* view folds every ending to ``\n``.
:class:`Endings` holds the literals of one unit type (``bytes`` or ``str``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import AnyStr, Generic

__all__ = ["BYTE_ENDINGS", "TEXT_ENDINGS", "Endings", "count_terminators"]


@dataclass(frozen=True)
class Endings(Generic[AnyStr]):
    """The line-ending literals for one unit type, and operations over them."""

    lf: AnyStr
    cr: AnyStr
    crlf: AnyStr
    empty: AnyStr
    splitter: re.Pattern[AnyStr]

    def fold(self, units: AnyStr) -> AnyStr:
        r"""Return *units* with every ending folded to ``\n``."""
        if self.cr not in units:
            return units
        return units.replace(self.crlf, self.lf).replace(self.cr, self.lf)

    def dominant(self, units: AnyStr) -> AnyStr:
        r"""Return the most frequent ending of *units* (``\n`` on a tie or when there is none)."""
        crlf = units.count(self.crlf)
        counts = {
            self.lf: units.count(self.lf) - crlf,
            self.crlf: crlf,
            self.cr: units.count(self.cr) - crlf,
        }
        return max(counts, key=lambda ending: (counts[ending], ending == self.lf))

    def majority(self, endings: list[AnyStr]) -> AnyStr:
        """Return the most frequent of *endings*, the first on a tie."""
        counts = Counter(endings)
        return max(endings, key=lambda ending: counts[ending])

    def ending_at(self, units: AnyStr, position: int) -> AnyStr:
        """Return the ending that starts at *position* (empty if none starts there)."""
        match = self.splitter.match(units, position)
        return match.group() if match else self.empty

    def next_ending(self, units: AnyStr, start: int) -> AnyStr:
        """Return the first ending at or after *start*, or empty at the end of *units*."""
        match = self.splitter.search(units, start)
        return match.group() if match else self.empty

    def endings_in(self, units: AnyStr) -> list[AnyStr]:
        """Return every ending in *units*, in order."""
        return self.splitter.findall(units)

    def count_lines(self, units: AnyStr) -> int:
        """How many lines *units* holds: one per ending, and a last one without an ending."""
        last = 1 if units and not units.endswith((self.lf, self.cr)) else 0
        return count_terminators(units, self, after_cr=False) + last

    def split_lines(self, units: AnyStr) -> list[tuple[AnyStr, AnyStr]]:
        """Split *units* into ``(content, ending)`` pairs; the last ending may be empty."""
        parts = self.splitter.split(units)
        lines = [(parts[index], parts[index + 1]) for index in range(0, len(parts) - 1, 2)]
        if parts[-1]:
            lines.append((parts[-1], self.empty))
        return lines

    def to_raw(self, raw: AnyStr, logical_position: int, hint: tuple[int, int] = (0, 0)) -> int:
        r"""Map a position in the logical view of *raw* to the position in *raw* itself.

        Only ``\r\n`` changes length when folded. *hint* is a previous
        ``(logical, raw)`` pair at or before *logical_position*, so mapping
        positions in increasing order scans *raw* once.
        """
        base_logical, base_raw = hint
        distance = logical_position - base_logical
        pairs, counted_to, end = 0, base_raw, base_raw + distance
        while counted_to < end:  # each \r\n found pushes the end one unit further
            pairs += raw.count(self.crlf, max(base_raw, counted_to - 1), end)
            counted_to, end = end, base_raw + distance + pairs
        if end > base_raw and raw.startswith(self.crlf, end - 1):
            end += 1  # the position follows a folded \r\n, not the middle of it
        return end


BYTE_ENDINGS: Endings[bytes] = Endings(b"\n", b"\r", b"\r\n", b"", re.compile(rb"(\r\n|\r|\n)"))
TEXT_ENDINGS: Endings[str] = Endings("\n", "\r", "\r\n", "", re.compile(r"(\r\n|\r|\n)"))


def count_terminators(units: AnyStr, endings: Endings[AnyStr], *, after_cr: bool) -> int:
    r"""Count line endings in *units*; *after_cr* says the previous piece ended with ``\r``.

    Pieces of one stream can be counted one by one: a ``\r\n`` split between
    two pieces is counted once.
    """
    count = units.count(endings.lf)
    if endings.cr in units:
        count += units.count(endings.cr) - units.count(endings.crlf)
    if after_cr and units.startswith(endings.lf):
        count -= 1
    return count
