"""``read``: a window of a text file, numbered; an image, shown; a PDF's pages; a notebook's cells.

What a file is comes from its first bytes, not its name (:func:`.media.kind_of`): an
image is shown, downscaled to the provider-safe limits; a PDF is the text of a range of
its pages; a ``.ipynb`` file that holds no notebook is text, with a line saying why. A
text window the owner was shown whole, asked again at the same version, is answered in
one line (:attr:`ReadOptions.short_rereads`; ``fresh`` shows it again).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import AliasChoices, Field, field_validator

from ctxfs.core import (
    BinaryFile,
    Busy,
    BytesOutcome,
    EncodingError,
    FsError,
    InvalidArgument,
    ShownWindow,
    TooLarge,
    Version,
    number_lines,
)
from ctxfs.tools.builtin.read.media import (
    READERS,
    ImageInfo,
    Kind,
    NotebookInfo,
    Part,
    PdfInfo,
    ReadOptions,
    describe_image,
    kind_of,
    notebook_note,
    pdf_note,
)
from ctxfs.tools.builtin.read.pdfs import page_range
from ctxfs.tools.notebooks import NOTEBOOK_SUFFIX, NotANotebook
from ctxfs.tools.results import MediaPart, ResultData, ToolResult, count, size
from ctxfs.tools.tool import Limits, Ordinal, Step, Tool, ToolArgs

__all__ = [
    "INVALID_BYTES_NOTE",
    "READ",
    "ImageInfo",
    "NotebookInfo",
    "PdfInfo",
    "ReadArgs",
    "ReadData",
    "ReadOptions",
    "ReadTool",
]

INVALID_BYTES_NOTE: Final = (
    "(bytes that are not valid text show as \ufffd; keep them out of old_string)"
)
"""The note under a window of text holding bytes the encoding cannot decode."""
_MEDIA_SUFFIXES: Final = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf", NOTEBOOK_SUFFIX)
"""Names read as bytes first (what they hold still decides how they are read)."""
_HEAD_BYTES: Final = 16
"""Leading bytes that tell an image or a PDF (WebP needs 12)."""


class ReadArgs(ToolArgs):
    """Arguments of ``read``."""

    file_path: str
    offset: Ordinal | None = Field(default=None, description="First line (notebook: cell).")
    limit: Ordinal | None = None
    pages: str | None = Field(default=None, description="PDF pages: '3', '1-5' or '4-'.")
    encoding: str | None = Field(default=None, description="Text encoding, e.g. 'cp1251'.")
    fresh: bool = False

    @field_validator("pages")
    @classmethod
    def _page_range(cls, pages: str | None) -> str | None:
        if pages is not None:
            page_range(pages)  # raises ValueError, which names the forms
        return pages


class ReadData(ResultData):
    """The data of a ``read`` result: the text fields, or ``image``, ``pdf`` or ``notebook``."""

    kind: Kind = "text"
    content: str | None = Field(
        default=None,
        validation_alias=AliasChoices("content", "text"),
        description="The window of lines, without line numbers; a PDF's pages as shown; "
        "none (absent) for an image.",
    )
    version: str
    offset: int | None = None
    returned_lines: int | None = None
    total_lines: int | None = None
    next_offset: int | None = Field(
        default=None, description="The offset that continues a text read; none (absent) at the end."
    )
    partial: bool = Field(
        default=False, description="Whether the read saw only part of the file's text."
    )
    truncated_lines: list[int] = Field(default_factory=list)
    output_capped: bool = False
    unchanged: bool = Field(
        default=False,
        description="Whether you were shown this window of this version before: content is "
        "left out (fresh shows it).",
    )
    encoding: str | None = None
    not_a_notebook: str | None = Field(
        default=None,
        description="Why a .ipynb file, read as text, is not a notebook notebook_edit can "
        "change; none (absent) otherwise.",
    )
    image: ImageInfo | None = None
    pdf: PdfInfo | None = None
    notebook: NotebookInfo | None = None


Shown = tuple[ReadData, tuple[MediaPart, ...]]
"""What one read returns: its data, and what the model is to see besides the text."""


class ReadTool(Tool[ReadArgs, ReadData]):
    """Read a window of lines, an image or a PDF's pages."""

    name = "read"

    def description(self, limits: Limits) -> str:
        return (
            "Read a file; paths are relative to the workspace root. Text comes as numbered "
            f"lines, up to {limits.text.default_limit:,} from `offset` (1-based). Images are "
            "shown; PDFs come as text, notebooks as cells."
        )

    async def run(self, step: Step, args: ReadArgs) -> ReadData:
        return (await self._shown(step, args))[0]

    async def answer(self, step: Step, args: ReadArgs) -> ToolResult:
        data, media = await self._shown(step, args)
        return ToolResult.success(self.render(data, args), data, media)

    async def _shown(self, step: Step, args: ReadArgs, *, again: bool = False) -> Shown:
        fs, path = step.ctx.fs, args.file_path
        head = None  # the first bytes, which tell an image or a PDF (not an observation)
        as_text = None  # text that starts like a PDF: shown as text unless it is one
        if args.pages is None and not path.lower().endswith(_MEDIA_SUFFIXES):
            try:
                text = await self._text(step, args)
            except (BinaryFile, EncodingError):  # bytes of an image or a PDF, maybe
                head = await fs.read_bytes(path, length=_HEAD_BYTES, observe=False)
                if kind_of(head.data, path) == "text":
                    raise
            else:
                if text.offset != 1 or not (text.content or "").startswith("%PDF-"):
                    return _once(step, args, text), ()
                as_text = text  # else a PDF with no binary bytes near its start, maybe
        if head is None:
            head = await fs.read_bytes(path, length=_HEAD_BYTES, observe=False)
        kind = kind_of(head.data, path)
        most = step.limits.of(ReadOptions).max_media_bytes
        text_read = await self._as_text(step, args, head, kind, most)
        if text_read is not None:
            return _once(step, args, text_read), ()
        try:
            _check_arguments(args, kind, head.path)
            _check_size(head.path, head.size, most)  # before the read that observes it
            blob = await fs.read_bytes(path, length=most + 1, observe=False)
            _check_size(blob.path, blob.size, most)  # (it grew meanwhile)
            if _replaced(blob, kind, again=again):  # by another kind since: read it anew
                return await self._shown(step, args, again=True)
            part = Part(offset=args.offset, limit=args.limit, pages=args.pages)
            reading = await READERS[kind](step, blob, part)
            await step.ctx.saw(blob, whole=reading.whole)  # (some cells or pages: partial)
        except NotANotebook as refusal:  # named .ipynb, holding something else: read as text
            text = await self._text(step, args, not_a_notebook=refusal.message)
            return _once(step, args, text), ()
        except FsError:
            if as_text is None or args.pages is not None:
                raise
            return _once(step, args, as_text), ()  # text that only starts like a PDF
        data = self.data(target=blob.path, version=blob.version, **reading.fields)
        return data, reading.media

    async def _as_text(
        self, step: Step, args: ReadArgs, head: BytesOutcome, kind: Kind, most: int
    ) -> ReadData | None:
        """The file read as text, if it is (by its first bytes) or is to be; else None.

        A notebook is read as its JSON text in the encoding named, or when it is larger than
        read shows as cells (*most*).
        """
        if kind == "notebook" and args.encoding is None and head.size > most:
            _check_arguments(args, kind, head.path)  # (as for one shown as cells)
            why = f"{head.path} is {size(head.size)}, more than read shows as cells ({size(most)})"
            return await self._text(step, args, not_a_notebook=why)
        if kind == "text" and args.pages is not None:
            raise InvalidArgument(
                f"pages is for PDFs; {head.path} is not a PDF",
                path=head.path,
                hint="Read a text file by lines, with offset and limit.",
                details={"field": "pages"},
            )
        if kind == "text" or (kind == "notebook" and args.encoding is not None):
            return await self._text(step, args)  # (text named like an image, too)
        return None

    async def _text(self, step: Step, args: ReadArgs, **fields: Any) -> ReadData:
        most = step.ctx.opened_fs.text_options.default_limit
        limit = min(args.limit or most, most)
        return self.data(
            await step.ctx.fs.read(
                args.file_path, offset=args.offset or 1, limit=limit, encoding=args.encoding
            ),
            **fields,
        )

    def render(self, data: ReadData, args: ReadArgs) -> str:
        if data.unchanged:
            return _unchanged(data)
        if data.image is not None:
            return describe_image(data.target, data.image)
        if data.pdf is not None:
            return (data.content or "") + pdf_note(data.target, data.pdf)
        if data.notebook is not None:
            return (data.content or "") + notebook_note(data.notebook)
        if data.total_lines == 0:
            text = f"({data.target} is empty)"
        elif data.returned_lines == 0:
            text = (
                f"(no lines at offset {data.offset}: {data.target} has "
                f"{count(data.total_lines or 0, 'line')}; use an offset from 1 to "
                f"{data.total_lines})"
            )
        else:
            text = number_lines(data.content or "", data.offset or 1) + "\n".join(_notes(data))
        if data.not_a_notebook is not None:
            text += f"\n({data.not_a_notebook}; it is shown as text)"
        return text


def _once(step: Step, args: ReadArgs, data: ReadData) -> ReadData:
    """*data*, or, for a window the owner was shown whole at this version, that it is unchanged."""
    shown_whole = (
        data.content is not None
        and bool(data.returned_lines)
        and not data.output_capped
        and not data.truncated_lines
    )
    if not shown_whole or args.encoding is not None or data.target is None:
        return data
    ctx = step.ctx
    window = ShownWindow(
        key=data.target, version=Version(data.version), offset=args.offset or 1, limit=args.limit
    )
    short = step.limits.of(ReadOptions).short_rereads and not args.fresh
    if short and ctx.opened_fs.shown.was_shown(ctx.owner, window):
        return data.model_copy(update={"content": None, "unchanged": True})
    whole_file = (args.offset or 1) == 1 and data.next_offset is None
    ctx.opened_fs.shown.show(ctx.owner, window, whole_file=whole_file)
    return data


def _unchanged(data: ReadData) -> str:
    """The one line that answers a re-read of a window the model has (:func:`_once`)."""
    lines = count(data.total_lines or 0, "line")
    first = data.offset or 1
    if first == 1 and data.next_offset is None:
        said = (
            f"{data.target} is as you last saw it (your reads and your own changes): "
            f"version {data.version}, {lines}"
        )
        return f"({said}; pass fresh: true to see it again)"
    last = first + (data.returned_lines or 0) - 1
    said = (
        f"lines {first}-{last} of {data.target} are unchanged since you read them: "
        f"version {data.version}, {lines} in all"
    )
    more = "" if data.next_offset is None else f"; continue with offset={data.next_offset}"
    return f"({said}; pass fresh: true to see them again{more})"


def _replaced(blob: BytesOutcome, kind: Kind, *, again: bool) -> bool:
    """Whether *blob* is another kind than its first bytes told (the file was replaced).

    Raises:
        Busy: It was, *again*.

    """
    if kind_of(blob.data[:_HEAD_BYTES], blob.path) == kind:
        return False
    if again:
        raise Busy(
            f"{blob.path} is being replaced: it changed kind while it was read",
            path=blob.path,
            hint="Read it again once it stops changing.",
        )
    return True


def _check_size(path: str, size_of_file: int, most: int) -> None:
    if size_of_file > most:
        raise TooLarge(
            f"{path} is {size(size_of_file)}; read takes images, PDFs and notebooks up to "
            f"{size(most)}",
            path=path,
            hint="It cannot be read whole here.",
            details={"size": size_of_file, "max_media_bytes": most},
        )


def _check_arguments(args: ReadArgs, kind: Kind, path: str) -> None:
    """Refuse the arguments that mean nothing for an image, a PDF or a notebook."""
    if args.pages is not None and kind != "pdf":
        field = "pages"
    elif args.encoding is not None:
        field = "encoding"
    elif (args.offset or 1) != 1 and kind != "notebook":  # offset=1 is the default, spelled out
        field = "offset"
    elif args.limit is not None and kind != "notebook":
        field = "limit"
    else:
        return
    raise InvalidArgument(
        f"{field} does not apply to {path}: it is {_ARTICLED[kind]}",
        path=path,
        hint=_HOW_TO_READ[kind],
        details={"field": field, "kind": kind},
    )


_ARTICLED: Final = {"image": "an image", "pdf": "a PDF", "notebook": "a notebook"}
_HOW_TO_READ: Final = {
    "image": "Read an image with file_path alone: it is returned whole.",
    "pdf": "Pick a PDF's pages with pages ('3', '1-5' or '4-'), without offset or limit.",
    "notebook": "Read a notebook with file_path; offset and limit count cells.",
}


def _notes(data: ReadData) -> list[str]:
    offset, returned = data.offset or 1, data.returned_lines or 0
    last = offset + returned - 1
    shown = f"lines {offset}-{last} of {data.total_lines}"
    if data.next_offset is None:
        notes = [f"(end of file; {shown})"]
    elif data.output_capped:
        notes = [f"(output limit reached; {shown}; continue with offset={data.next_offset})"]
    else:
        notes = [f"({shown}; continue with offset={data.next_offset})"]
    if data.truncated_lines:
        cut = ", ".join(map(str, data.truncated_lines))
        notes.append(f"(line {cut} cut where marked: too long to show whole)")
    encoding = data.encoding or "utf-8"
    if "invalid bytes" in encoding:
        notes.append(INVALID_BYTES_NOTE)
    elif encoding != "utf-8":
        notes.append(f"(decoded as {encoding}; changes keep that encoding)")
    return notes


READ = ReadTool()
