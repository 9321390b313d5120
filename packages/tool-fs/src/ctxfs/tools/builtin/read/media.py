"""What ``read`` shows of a file that is not plain text: an image, a PDF's pages, a notebook.

Each reader takes the file's whole bytes and the part the call asks for, and
returns its fields of the read data and the images the model is to see. The
decoding runs in worker threads, at most :attr:`ReadOptions.max_media_reads` at
once per event loop. Another kind of file is one more entry in :data:`READERS`.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import anyio.to_thread
from anyio.lowlevel import RunVar
from pydantic import BaseModel, ConfigDict, Field

from ctxfs.core import BytesOutcome, FsError, InvalidArgument
from ctxfs.tools.builtin.read.images import ImageLimits, PreparedImage, image_type, prepared_image
from ctxfs.tools.builtin.read.pdfs import is_pdf, page_range, pdf_text
from ctxfs.tools.notebooks import NotANotebook, is_notebook_path
from ctxfs.tools.results import MediaPart, count, size
from ctxfs.tools.tool import Step

if TYPE_CHECKING:
    from anyio import CapacityLimiter

__all__ = [
    "READERS",
    "ImageInfo",
    "Kind",
    "NotebookInfo",
    "Part",
    "PdfInfo",
    "ReadOptions",
    "Reading",
    "describe_image",
    "kind_of",
    "notebook_note",
    "pdf_note",
]

Kind = Literal["text", "image", "pdf", "notebook"]

_IMAGES_PER_READ: Final = 2
"""Image outputs of a notebook sent by one read, in bytes, as many images of the largest size."""
_LIMITERS: Final[RunVar[dict[int, CapacityLimiter]]] = RunVar("ctxfs_media_reads")
"""The event loop's limiters of media work in worker threads, by their number of tokens."""

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class ReadOptions:
    """The options of ``read``: for text, and for images, PDFs and notebooks."""

    short_rereads: bool = True
    """Answer a re-read of a text window the owner was shown whole, of the same version, in
    one line (``fresh: true`` shows it again; see :mod:`ctxfs.core.shown`)."""

    max_media_bytes: int = 64 << 20
    """Largest image or PDF ``read`` takes (it reads them whole); larger ones are ``too_large``."""
    max_image_edge: int = 1568
    """Longest edge, in pixels, of an image sent to the model; larger images are downscaled."""
    max_image_bytes: int = 3_750_000
    """Largest encoded image sent to the model (5 MB in base64, what providers take);
    larger ones are re-encoded, then downscaled further."""
    max_image_pixels: int = 64_000_000
    """Pixels an image may have (width times height); more is ``too_large`` before any
    decoding (a small file can unpack to a huge image)."""
    max_image_decoded_bytes: int = 192 << 20
    """Memory an image may take decoded, reckoned from its header before decoding (Pillow
    holds 4 bytes a pixel of colour, 2 of 16-bit gray, 1 of 8-bit gray or a palette; a big
    JPEG is reckoned at the reduced scale it decodes at); more is ``too_large``."""
    pdf_seconds: float = 10.0
    """Time one PDF ``read`` may spend extracting text; then it returns the pages done and
    says where to go on. A page is stopped at its next operation past the deadline. Opening
    the PDF may take as long again; one that takes longer is ``too_large``."""
    max_media_reads: int = 2
    """Images, PDFs and notebooks decoded at once in the process (in worker threads); more
    reads wait their turn. Toolsets with the same value share the limit."""


@dataclass(frozen=True, kw_only=True)
class Part:
    """The part of a file a read asks for: lines or cells from ``offset``, or PDF ``pages``."""

    offset: int | None = None
    limit: int | None = None
    pages: str | None = None


@dataclass(frozen=True, kw_only=True)
class Reading:
    """What a reader shows: fields of the read data, and images for the model."""

    fields: Mapping[str, Any]
    media: tuple[MediaPart, ...] = ()
    whole: bool = True
    """Whether the model is shown all the file holds (else its read is a partial observation)."""


def kind_of(head: bytes, path: str) -> Kind:
    """What a file starting with *head* is read as (a notebook: if it parses as one)."""
    if image_type(head) is not None:
        return "image"
    if is_pdf(head):
        return "pdf"
    return "notebook" if is_notebook_path(path) else "text"


class ImageInfo(BaseModel):
    """The image a ``read`` returned: as sent, and as the file holds it."""

    model_config = ConfigDict(frozen=True)

    media_type: str = Field(description="The media type of the image as sent.")
    width: int
    height: int
    sent_bytes: int
    original_media_type: str
    original_width: int
    original_height: int
    original_bytes: int
    frames: int = Field(description="Frames of the file (an animation: only the first is sent).")
    unchanged: bool = Field(description="Whether the file's own bytes were sent.")


class PdfInfo(BaseModel):
    """The pages of a PDF a ``read`` returned."""

    model_config = ConfigDict(frozen=True)

    total_pages: int
    first_page: int
    last_page: int
    next_page: int | None = Field(
        description="The page to continue with; none (absent) after the last."
    )
    cut_page: int | None = Field(
        description="A page larger than the output limit, shown only in part."
    )
    textless_pages: list[int] = Field(description="Pages shown that hold no text (scans).")
    skipped_pages: list[int] = Field(description="Pages shown without their text (too costly).")
    time_limit_reached: bool = Field(description="Whether the read stopped at its time limit.")


class NotebookInfo(BaseModel):
    """The cells of a notebook a ``read`` returned."""

    model_config = ConfigDict(frozen=True)

    cells: int
    first_cell: int = Field(description="1-based number of the first cell shown.")
    last_cell: int
    next_cell: int | None = Field(
        description="The offset that continues; none (absent) at the end."
    )
    nbformat: str
    language: str | None
    images: int = Field(description="Image outputs returned as images.")
    left_out_images: int = Field(description="Image outputs of the cells shown, not returned.")
    cut_outputs: int = Field(description="Outputs shown in part.")


async def _image(step: Step, blob: BytesOutcome, part: Part) -> Reading:
    del part
    image = await _prepared(step, blob.data, image_type(blob.data) or "", blob.path)
    info = ImageInfo.model_validate(image, from_attributes=True)
    return Reading(fields={"kind": "image", "image": info}, media=(_part(image),))


async def _prepared(step: Step, data: bytes, media_type: str, path: str) -> PreparedImage:
    """*data* as it fits the toolset's image limits (Pillow, off the event loop)."""
    options = step.limits.of(ReadOptions)
    limits = ImageLimits(
        max_edge=options.max_image_edge,
        max_bytes=options.max_image_bytes,
        max_pixels=options.max_image_pixels,
        max_decoded_bytes=options.max_image_decoded_bytes,
    )
    return await _media_work(
        step, functools.partial(prepared_image, data, media_type, limits, path=path)
    )


async def _media_work(step: Step, work: Callable[[], T]) -> T:
    """The result of *work* (CPU-bound), run in a worker thread when the process has room."""
    most = step.limits.of(ReadOptions).max_media_reads
    limiters = _LIMITERS.get(None)
    if limiters is None:
        limiters = {}
        _LIMITERS.set(limiters)
    limiter = limiters.get(most)
    if limiter is None:
        limiter = limiters[most] = anyio.CapacityLimiter(most)  # (anyio imports it lazily)
    return await anyio.to_thread.run_sync(work, limiter=limiter)


def _part(image: PreparedImage) -> MediaPart:
    return MediaPart.model_validate(image, from_attributes=True)


async def _pdf(step: Step, blob: BytesOutcome, part: Part) -> Reading:
    pages = None if part.pages is None else page_range(part.pages)
    budget = step.ctx.opened_fs.text_options.max_output_chars
    seconds = step.limits.of(ReadOptions).pdf_seconds
    shown = await _media_work(
        step,
        functools.partial(
            pdf_text, blob.data, pages, max_chars=budget, seconds=seconds, path=blob.path
        ),
    )
    info = PdfInfo.model_validate(shown, from_attributes=True)
    fields = {"kind": "pdf", "content": shown.text, "output_capped": shown.budget_reached}
    whole = (
        shown.first_page == 1
        and shown.next_page is None
        and shown.cut_page is None
        and not shown.skipped_pages
    )
    return Reading(fields={**fields, "pdf": info}, whole=whole)


async def _notebook(step: Step, blob: BytesOutcome, part: Part) -> Reading:
    from ctxfs.tools.notebooks import render_notebook  # noqa: PLC0415 - with the first notebook

    budget = step.ctx.opened_fs.text_options.max_output_chars
    marker = f"{uuid.uuid4().hex}#"  # (no notebook holds it: only the renderer's lines have it)
    render = functools.partial(
        render_notebook,
        blob.data,
        path=blob.path,
        first_cell=(part.offset or 1) - 1,
        max_chars=budget,
        max_cells=part.limit,
        image_marker=marker,
    )
    try:
        rendered = await _media_work(step, render)
    except InvalidArgument as refusal:
        if isinstance(refusal, NotANotebook):
            raise
        cells = refusal.details.get("cells")
        told = f"{blob.path} has {cells} cells; there is no cell {part.offset}"
        raise refusal.retold(told, field="offset") from None
    parts: list[MediaPart] = []
    left_out: dict[int, str] = {}  # by the image's number: why it is not attached
    room = _IMAGES_PER_READ * step.limits.of(ReadOptions).max_image_bytes  # one request's worth
    for at, image in enumerate(rendered.images):
        try:
            prepared = await _prepared(step, image.data, image.media_type, blob.path)
        except FsError as refusal:  # a damaged or huge image output is only named in the text
            left_out[image.number] = refusal.message.removeprefix(f"{blob.path} ")
            continue
        if len(prepared.data) > room:
            rest = (later.number for later in rendered.images[at:])
            left_out.update(dict.fromkeys(rest, "no room left in this read"))
            break
        room -= len(prepared.data)
        parts.append(_part(prepared))
    text = _numbered_as_attached(rendered.text, marker, left_out)
    info = NotebookInfo(
        cells=rendered.cells,
        first_cell=rendered.first_cell + 1,
        last_cell=rendered.first_cell + rendered.shown_cells,
        next_cell=None if rendered.next_cell is None else rendered.next_cell + 1,
        nbformat=rendered.nbformat,
        language=rendered.language,
        images=len(parts),
        left_out_images=rendered.left_out_images + len(rendered.images) - len(parts),
        cut_outputs=rendered.cut_outputs,
    )
    fields = {"kind": "notebook", "content": text, "notebook": info}
    return Reading(
        fields={**fields, "output_capped": rendered.next_cell is not None},
        media=tuple(parts),
        whole=rendered.first_cell == 0
        and rendered.next_cell is None
        and rendered.cut_cell is None
        and not (rendered.cut_outputs or info.left_out_images),  # (each shown whole)
    )


def _numbered_as_attached(text: str, marker: str, left_out: Mapping[int, str]) -> str:
    """*text* saying which image outputs are not attached, and numbering those that are in order.

    Only the renderer's own lines change: those its *marker* names.
    """
    attached = 0

    def told(found: re.Match[str]) -> str:
        nonlocal attached
        number, media_type = int(found["number"]), found["type"]
        if number in left_out:
            return f"[{media_type} image: not attached: {left_out[number]}]"
        attached += 1
        return f"[image {attached}: {media_type}, attached]"

    placed = rf"\[image {re.escape(marker)}(?P<number>\d+): (?P<type>image/[\w.+-]+), attached\]"
    return re.sub(placed, told, text)


Reader = Callable[[Step, BytesOutcome, Part], Awaitable[Reading]]
READERS: Final[dict[Kind, Reader]] = {"image": _image, "pdf": _pdf, "notebook": _notebook}
"""How each kind of file other than text is read, from its whole bytes."""


def describe_image(target: str | None, image: ImageInfo) -> str:
    """The text that goes with an image: its type and sizes, for a model that cannot see it."""
    original = (
        f"{image.original_media_type}, {image.original_width}x{image.original_height} px, "
        f"{size(image.original_bytes)}"
    )
    if image.unchanged:
        sent = "as it is"
    else:
        resized = (image.width, image.height) != (image.original_width, image.original_height)
        sent = (
            f"{'downscaled' if resized else 're-encoded'} to {image.width}x{image.height} px "
            f"as {image.media_type} ({size(image.sent_bytes)})"
        )
    text = f"Returned the image {target} ({original}), {sent}."
    if image.frames > 1:
        text += f" It is an animation: only its first of {image.frames} frames is sent."
    return text


def pdf_note(target: str | None, pdf: PdfInfo) -> str:
    """The last line of a PDF read: which pages, of how many, and where to go on."""
    if pdf.last_page < pdf.first_page:
        return f"({target} is a PDF with no pages)"
    shown = (
        f"page {pdf.first_page}"
        if pdf.first_page == pdf.last_page
        else f"pages {pdf.first_page}-{pdf.last_page}"
    )
    notes = [f"({shown} of {pdf.total_pages} of the PDF {target}"]
    if pdf.cut_page is not None:
        notes.append(f"; page {pdf.cut_page} was cut at the output limit")
    if pdf.next_page is None:
        notes.append("; end of document)")
    elif pdf.time_limit_reached:
        notes.append(f"; stopped at the time limit: continue with pages='{pdf.next_page}-')")
    else:
        notes.append(f"; continue with pages='{pdf.next_page}-')")
    return "".join(notes)


def notebook_note(notebook: NotebookInfo) -> str:
    """The last line of a notebook read: the end, or how to go on, and how to change a cell."""
    notes = ["(end of notebook; " if notebook.next_cell is None else "("]
    notes.append("change a cell with notebook_edit and its id)")
    if notebook.left_out_images:
        notes.append(f"\n({count(notebook.left_out_images, 'image output')} not returned)")
    return "".join(notes)
