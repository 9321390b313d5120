"""PDFs for a model: the text of a range of pages, within an output budget.

A PDF is known by its first bytes (``%PDF-``). pypdf extracts page after page
until the next would pass the budget or the time is up; the result says which
pages it shows, of how many, and where to go on. A page larger than the budget
is cut; one whose content passes :data:`MAX_CONTENT_TOKENS` is shown without
text; both say so. A PDF that needs a password, or that pypdf cannot parse, is
refused. Callers run :func:`pdf_text` in a worker thread; it watches its
deadline while the PDF opens, before each page and at each operation. pypdf loads
with the first PDF.
"""

from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ctxfs.core import BinaryFile, InvalidArgument, NotEnabled, TooLarge
from ctxfs.core.kit import require

if TYPE_CHECKING:
    from pypdf import PdfReader

__all__ = ["MAX_CONTENT_TOKENS", "PageRange", "PdfText", "is_pdf", "page_range", "pdf_text"]

MAX_CONTENT_TOKENS: Final = 200_000
"""Operators and operands of one content stream (a page's, a form's) that pypdf parses, in
about half a second and 30 MiB (its own bound, 2,000,000, takes ten times that)."""
_TEXT_OPERATOR: Final = re.compile(rb"T[jJ]|Do|['\"]")
"""What can show text in a content stream, or call a form that does (pypdf's own test)."""
_RANGE: Final = re.compile(r"\s*(\d+)\s*(?:(-)\s*(\d*)\s*)?")
_READS_PER_LOOK: Final = 1024
"""Reads pypdf makes of the file between two looks at the clock (a few milliseconds)."""


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
    time_limit_reached: bool
    """Whether the read stopped at its deadline before the last page asked for."""
    cut_page: int | None
    """A page too large for the budget, shown only in part (its rest is not reachable)."""
    textless_pages: tuple[int, ...]
    """Pages shown with no text at all (a scan, a drawing)."""
    skipped_pages: tuple[int, ...]
    """Pages shown without their text: content larger than :data:`MAX_CONTENT_TOKENS`, or
    (the first page of a read only) more work than the whole deadline."""


def pdf_text(
    data: bytes, pages: PageRange | None, *, max_chars: int, seconds: float, path: str
) -> PdfText:
    """The text of *pages* (default: all) of the PDF *data*, in *max_chars* and *seconds*.

    Opening the PDF (reading its cross-reference table and page tree) may take
    *seconds*. Pages are shown whole while they fit *max_chars* characters and
    extraction stays within *seconds* from when the PDF is open. A page the deadline
    interrupts is left for the next read, unless it is the first page of this one:
    that is shown without its text, so that every read moves on.

    Raises:
        BinaryFile: The PDF needs a password, or cannot be parsed.
        InvalidArgument: The first page asked for is past the last page.
        NotEnabled: pypdf is not installed (the ``pdf`` extra).
        TooLarge: Opening it takes longer than *seconds*.

    """
    file = _TimedFile(data, seconds=seconds)
    reader, total = _opened(file, path)
    deadline = file.restart()  # the pages', from here
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
    skipped: list[int] = []
    cut_page = None
    out_of_time = False
    for number in range(first, last + 1):
        if shown and time.monotonic() > deadline:
            out_of_time = True
            break
        text, stopped = _page_text(reader, number, file)
        if stopped == "time" and shown:
            out_of_time = True
            break  # the page is the next read's
        text = _STOPPED[stopped] if stopped is not None else text.rstrip()
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
        if stopped is not None:
            skipped.append(number)
        elif blank:
            textless.append(number)
    last_shown = first + len(shown) - 1
    return PdfText(
        text="".join(shown),
        total_pages=total,
        first_page=first,
        last_page=last_shown,
        next_page=last_shown + 1 if last_shown < total else None,
        budget_reached=last_shown < last and not out_of_time,
        time_limit_reached=out_of_time,
        cut_page=cut_page,
        textless_pages=tuple(textless),
        skipped_pages=tuple(skipped),
    )


_STOPPED: Final = {
    "size": "(its text is not extracted: its content is too large to parse here)",
    "time": "(its text is not extracted: the page alone takes longer than a read may)",
}


def _opened(file: _TimedFile, path: str) -> tuple[PdfReader, int]:
    """The PDF in *file*, open, and its number of pages; by *file*'s deadline."""
    require("pypdf", install="ctxfs-tools[pdf]", needed_by="reading a PDF", error=NotEnabled)
    from pypdf import PdfReader  # noqa: PLC0415 - loaded by the first PDF read
    from pypdf.errors import DependencyError  # noqa: PLC0415

    try:
        reader = PdfReader(file)
        locked = reader.is_encrypted and not reader.decrypt("")  # many lock only permissions
        total = 0 if locked else len(reader.pages)
        file.raise_if_late()  # (pypdf goes on past many errors, on what it could read)
    except DependencyError as missing:
        raise _encrypted(path, f"this installation cannot decrypt it ({missing})") from None
    except _Stopped:
        raise TooLarge(
            f"{path}: opening this PDF takes longer than a read may ({file.seconds:g} s)",
            path=path,
            hint="It cannot be read here; ask for a smaller or repaired copy.",
            details={"media_type": "application/pdf", "seconds": file.seconds},
        ) from None
    except Exception as bad:  # pypdf raises many kinds on damaged files; none may leak
        raise _unreadable(path, bad) from None
    if locked:
        raise _encrypted(path, "its text cannot be read without its password")
    return reader, total


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


def _page_text(reader: PdfReader, number: int, file: _TimedFile) -> tuple[str, str | None]:
    """The text of page *number*; or none, and why (``"size"`` or ``"time"``)."""
    from pypdf import apply_configuration  # noqa: PLC0415 - loaded by the first PDF read
    from pypdf.errors import LimitReachedError  # noqa: PLC0415

    try:
        with apply_configuration(stream_parsing_work_maximum_count=MAX_CONTENT_TOKENS):
            page = reader.pages[number - 1]
            contents = page.get_contents()
            # a drawing or a scan (no text operator): nothing to parse
            drawn = contents is None or _TEXT_OPERATOR.search(contents.get_data()) is None
            text = "" if drawn else page.extract_text(visitor_operand_before=file.meter)
    except _Stopped:
        return "", "time"
    except LimitReachedError:  # (in a form, pypdf leaves the form out and goes on)
        return "", "size"
    except Exception as bad:  # one damaged page does not hide the others
        if file.late:  # (what pypdf read before it went on past a stop)
            return "", "time"
        return f"(the text of this page could not be extracted: {bad})", None
    finally:  # what pypdf decoded for the page (its content, inflated) goes with it
        reader.resolved_objects.clear()
    # pypdf goes on past a stopped read, with what it had read
    return ("", "time") if file.late else (text, None)


class _Stopped(Exception):
    """A page's extraction, or the opening, ran past the deadline."""


class _TimedFile(io.BytesIO):
    """The PDF's bytes, as pypdf reads them: past :attr:`deadline`, a read raises ``_Stopped``.

    pypdf reads them to open the PDF, then to load each page's objects. The clock is
    looked at every :data:`_READS_PER_LOOK` reads, at each copy of the whole (pypdf's
    search of a damaged file), and at each operation of a page's text (:meth:`meter`).
    Once stopped, every read and operation is (pypdf goes on past many errors: a form's
    extraction swallows the exception), and :attr:`late` says so.
    """

    def __init__(self, data: bytes, *, seconds: float) -> None:
        super().__init__(data)
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.late = False
        self._reads = 0

    def restart(self) -> float:
        """Give the reads *seconds* more from now; the new deadline."""
        self.deadline, self.late = time.monotonic() + self.seconds, False
        return self.deadline

    def raise_if_late(self) -> None:
        """Raise ``_Stopped`` (again) if a read was stopped."""
        if self.late:
            raise _Stopped

    def read(self, size: int | None = -1, /) -> bytes:
        self._reads += 1
        if not self._reads % _READS_PER_LOOK or self.late:
            self._look()
        return super().read(size)

    def getbuffer(self) -> memoryview:
        self._look()
        return super().getbuffer()

    def meter(self, operator: object, operands: object, cm: object, tm: object) -> None:
        """Stop a page once past the deadline (pypdf's visitor of its operations)."""
        self._look()

    def _look(self) -> None:
        self.late = self.late or time.monotonic() > self.deadline
        self.raise_if_late()


def _cut(block: str, max_chars: int) -> str:
    """*block* (one page) cut to fit *max_chars* with its note, at a line end where one is near."""
    room = max(0, max_chars - 120)
    kept = block[:room]
    line_end = kept.rfind("\n")
    if line_end > room // 2:
        kept = kept[: line_end + 1]
    hidden = len(block) - len(kept)
    return f"{kept.rstrip()}\n[page cut here: {hidden:,} more characters of it are not shown]\n"
