"""PDFs for a model: the text of a range of pages, within an output budget.

A PDF is known by its first bytes (``%PDF-``). Its pages' text comes from
pypdf, page by page from the first asked for, until the next page would pass
the budget: the result says which pages it shows, of how many, and the page to
continue with. A single page larger than the budget is cut, and says so. A PDF
that needs a password, or that pypdf cannot parse, is refused.

pypdf's work is CPU-bound: callers run :func:`pdf_text` in a worker thread.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Final

from pypdf import PdfReader
from pypdf.errors import DependencyError

from ctxfs.core import BinaryFile, InvalidArgument

__all__ = ["PageRange", "PdfText", "is_pdf", "page_range", "pdf_text"]

_RANGE: Final = re.compile(r"\s*(\d+)\s*(?:(-)\s*(\d*)\s*)?")


def is_pdf(head: bytes) -> bool:
    """Whether a file starting with *head* is a PDF."""
    return head.startswith(b"%PDF-")


@dataclass(frozen=True, kw_only=True)
class PageRange:
    """Pages ``first`` to ``last`` (None: to the end), numbered from 1."""

    first: int
    last: int | None


def page_range(spec: str) -> PageRange:
    """The pages *spec* names: ``"3"``, ``"1-5"`` or ``"4-"`` (from 4 to the end).

    Raises:
        ValueError: *spec* is none of those, or a page number is below 1.

    """
    match = _RANGE.fullmatch(spec)
    if match is None:
        raise ValueError(f"{spec!r} is not a page range: write '3', '1-5' or '4-'")
    first = int(match[1])
    last = first if match[2] is None else int(match[3]) if match[3] else None
    if first < 1 or (last is not None and last < first):
        raise ValueError(f"{spec!r} is not a page range: pages count from 1, first to last")
    return PageRange(first=first, last=last)


@dataclass(frozen=True, kw_only=True)
class PdfText:
    """The text of the pages of a PDF that fit one read."""

    text: str
    """Each page shown, under a line naming it (``--- page 3 of 12 ---``)."""
    total_pages: int
    first_page: int
    last_page: int
    """The last page shown (less than ``first_page`` when the PDF has no pages)."""
    next_page: int | None
    """The page that continues the read; None after the last page."""
    budget_reached: bool
    """Whether the read stopped at the budget before the last page asked for."""
    cut_page: int | None
    """A page too large for the budget, shown only in part (its rest is not reachable)."""
    textless_pages: tuple[int, ...]
    """Pages shown with no text at all (a scan, a drawing)."""


def pdf_text(data: bytes, pages: PageRange | None, *, max_chars: int, path: str) -> PdfText:
    """The text of *pages* (default: all) of the PDF *data*, up to *max_chars* characters.

    Raises:
        BinaryFile: The PDF needs a password, or cannot be parsed.
        InvalidArgument: The first page asked for is past the last page.

    """
    reader = _opened(data, path)
    try:
        total = len(reader.pages)
    except Exception as bad:
        raise _unreadable(path, bad) from None
    first = pages.first if pages is not None else 1
    if first > max(total, 1):
        raise InvalidArgument(
            f"{path} has {total} page{'' if total == 1 else 's'}: there is no page {first}",
            path=path,
            hint=f"Ask for pages from 1 to {total}.",
            details={"field": "pages", "total_pages": total},
        )
    last = total if pages is None or pages.last is None else min(pages.last, total)
    shown: list[str] = []
    used = 0
    textless: list[int] = []
    cut_page = None
    for number in range(first, last + 1):
        text = _page_text(reader, number).rstrip()
        blank = not text.strip()
        if blank:
            text = "(no text on this page: it may be a scanned image or a drawing)"
        block = f"--- page {number} of {total} ---\n{text}\n"
        if used + len(block) > max_chars:
            if not shown:  # one page larger than the whole budget: what fits of it
                shown.append(_cut(block, max_chars))
                cut_page = number
            break
        shown.append(block)
        used += len(block)
        if blank:
            textless.append(number)
    last_shown = first + len(shown) - 1
    return PdfText(
        text="".join(shown),
        total_pages=total,
        first_page=first,
        last_page=last_shown,
        next_page=last_shown + 1 if last_shown < total else None,
        budget_reached=last_shown < last,
        cut_page=cut_page,
        textless_pages=tuple(textless),
    )


def _opened(data: bytes, path: str) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data))
        locked = reader.is_encrypted and not reader.decrypt("")  # many lock only permissions
    except DependencyError as missing:
        raise _encrypted(path, f"this installation cannot decrypt it ({missing})") from None
    except Exception as bad:  # pypdf raises many kinds on damaged files; none may leak
        raise _unreadable(path, bad) from None
    if locked:
        raise _encrypted(path, "its text cannot be read without its password")
    return reader


def _encrypted(path: str, why: str) -> BinaryFile:
    return BinaryFile(
        f"{path} is an encrypted PDF: {why}",
        path=path,
        hint="It cannot be read here; ask for a copy without a password.",
        details={"media_type": "application/pdf", "encrypted": True},
    )


def _unreadable(path: str, bad: Exception) -> BinaryFile:
    return BinaryFile(
        f"{path} starts like a PDF but cannot be parsed: {bad}",
        path=path,
        hint="The PDF is damaged or cut short; it cannot be read. "
        "Do not retry: the same bytes fail the same way.",
        details={"media_type": "application/pdf", "reason": str(bad)},
    )


def _page_text(reader: PdfReader, number: int) -> str:
    try:
        return reader.pages[number - 1].extract_text()
    except Exception as bad:  # one damaged page does not hide the others
        return f"(the text of this page could not be extracted: {bad})"


def _cut(block: str, max_chars: int) -> str:
    """*block* (one page) cut to fit *max_chars* with its note, at a line end where one is near."""
    room = max(0, max_chars - 120)
    kept = block[:room]
    line_end = kept.rfind("\n")
    if line_end > room // 2:
        kept = kept[: line_end + 1]
    hidden = len(block) - len(kept)
    return f"{kept.rstrip()}\n[page cut here: {hidden:,} more characters of it are not shown]\n"
