"""Pages of a longer list (entries, paths, matches): exact totals and the offset to go on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import Field

from ctxfs.tools.results import ResultData

__all__ = ["Page", "PageData"]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Page:
    """Which items of a list a call returns: ``count`` of them from the 1-based ``first``."""

    first: int
    count: int

    @classmethod
    def of(cls, offset: int | None, limit: int | None, most: int) -> Page:
        """The page a model asked for with *offset* and *limit*, at most *most* items."""
        return cls(first=offset or 1, count=min(limit or most, most))

    def cut(self, items: Sequence[T]) -> list[T]:
        """The items of this page."""
        return list(items[self.first - 1 : self.first - 1 + self.count])

    def holds(self, number: int) -> bool:
        """Whether the item *number* (1-based) is on this page."""
        return self.first <= number < self.first + self.count

    def next_offset(self, shown: int, total: int) -> int | None:
        """The offset that continues after *shown* items of *total*, or None at the end."""
        following = self.first + shown
        return following if following <= total else None


class PageData(ResultData):
    """Fields every paged result has."""

    total: int = Field(description="Items in the whole list, not just this page.")
    offset: int = Field(description="1-based number of the first item of this page.")
    next_offset: int | None = Field(description="The offset that continues; None at the end.")
    truncated: bool = Field(description="Whether items follow this page.")
