"""What the pages of a search learned of each file, so the next page reads only what it needs.

:class:`ScanMemos` keeps, per search (workspace, owner and arguments but the
page), each file searched to its end with its number of matches (or why it was
skipped) and its *stamp* (size, modification time, version) as listed. A file
whose stamp is unchanged is counted from the memo, any other read again; one
known by its modification time alone is not remembered while that time is
within :data:`SETTLE_SECONDS`. Memos are bounded in searches and in files.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final

from ctxfs.core import Context, Stat

__all__ = ["SETTLE_SECONDS", "Known", "ScanMemo", "ScanMemos", "stamp_of"]

SETTLE_SECONDS: Final = 2.0
"""A file modified more recently than this when searched is not remembered."""

Stamp = tuple[int | None, float | None, str | None]


def stamp_of(entry: Stat) -> Stamp | None:
    """What tells that *entry* has not changed, or None where the store gives too little.

    A version (a content hash, an ETag) is trusted as it is; a modification time
    only once it is :data:`SETTLE_SECONDS` old.
    """
    if entry.version is None and (
        entry.mtime is None or time.time() - entry.mtime < SETTLE_SECONDS
    ):
        return None
    return (entry.size, entry.mtime, entry.version)


@dataclass(frozen=True, kw_only=True, slots=True)
class Known:
    """A file searched to its end: how many items it held, or why it was skipped."""

    count: int = 0
    """Its matching lines (multiline: matches); in files mode, 1 if it holds a match."""
    skipped: str | None = None
    """The error code that stopped it (``binary_file``, ...), if it could not be searched."""


_COUNT_BITS: Final = 24
_STAMP_MASK: Final = (1 << 40) - 1


@dataclass(kw_only=True)
class ScanMemo:
    """What one search has learned, by path (at most *max_files* of them).

    A file is held as one integer, 40 bits of its stamp's hash and its count
    (a skipped one: the hash and the reason), so 200,000 files take about
    17 MB; a count of 2**24 or more is not remembered.
    """

    max_files: int = 500_000
    files: dict[str, int | tuple[int, str]] = field(default_factory=dict)

    def known(self, entry: Stat) -> Known | None:
        """What is known of *entry*, if it has not changed since."""
        held = self.files.get(entry.path)
        if held is None or (stamp := stamp_of(entry)) is None:
            return None
        stamp_hash = hash(stamp) & _STAMP_MASK
        if isinstance(held, tuple):
            return Known(skipped=held[1]) if held[0] == stamp_hash else None
        if held >> _COUNT_BITS != stamp_hash:
            return None
        return Known(count=held & ((1 << _COUNT_BITS) - 1))

    def learn(self, entry: Stat, *, count: int = 0, skipped: str | None = None) -> None:
        """Remember *entry* as searched to its end (nothing, if its stamp cannot be trusted)."""
        stamp = stamp_of(entry)
        if stamp is None or count >> _COUNT_BITS:
            return
        if len(self.files) < self.max_files or entry.path in self.files:
            stamp_hash = hash(stamp) & _STAMP_MASK
            packed = stamp_hash << _COUNT_BITS | count
            self.files[entry.path] = (stamp_hash, skipped) if skipped is not None else packed


@dataclass(frozen=True, kw_only=True)
class _Held:
    opened_fs: weakref.ref[object]
    memo: ScanMemo


class ScanMemos:
    """Memos of recent searches, at most *max_searches* of them and *max_files* files in all."""

    def __init__(self, *, max_searches: int = 32, max_files: int = 500_000) -> None:
        self.max_searches, self.max_files = max_searches, max_files
        self._held: OrderedDict[tuple[object, ...], _Held] = OrderedDict()

    def memo(self, ctx: Context, search: tuple[object, ...]) -> ScanMemo:
        """The memo of *search* (everything that decides its items, not its page) for *ctx*."""
        key = _key(ctx, search)
        held = self._held.get(key)
        if held is None or held.opened_fs() is not ctx.opened_fs:  # a new search, or a recycled id
            held = _Held(
                opened_fs=weakref.ref(ctx.opened_fs), memo=ScanMemo(max_files=self.max_files)
            )
        self._held[key] = held
        self._held.move_to_end(key)
        self._trim()
        return held.memo

    def forget(self, ctx: Context, search: tuple[object, ...]) -> None:
        """Drop the memo of *search* (it was answered whole: no page follows)."""
        self._held.pop(_key(ctx, search), None)

    def _trim(self) -> None:
        files = sum(len(held.memo.files) for held in self._held.values())
        while len(self._held) > self.max_searches or (files > self.max_files and self._held):
            _, oldest = self._held.popitem(last=False)
            files -= len(oldest.memo.files)


def _key(ctx: Context, search: tuple[object, ...]) -> tuple[object, ...]:
    """Whose memo of *search* this is: one workspace's, one owner's (policies may differ)."""
    return (id(ctx.opened_fs), ctx.workspace, ctx.owner, *search)
