"""A notebook as a model reads it.

Each cell's id, type and source, its outputs as text, and its images returned
as data, for a read path to attach as images.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any, Final

from ctxfs.core import InvalidArgument
from ctxfs.tools.notebooks.model import Notebook, cell_id_of, parse_notebook, source_text

__all__ = [
    "DEFAULT_MAX_IMAGES",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "IMAGE_TYPES",
    "NotebookImage",
    "RenderedNotebook",
    "render_notebook",
    "strip_ansi",
]

IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""Output types returned as images, in the order an output's types are looked at."""
DEFAULT_MAX_OUTPUT_CHARS: Final = 2_000
"""Characters of one output shown; a longer one keeps its beginning and its end."""
DEFAULT_MAX_IMAGES: Final = 10
"""Images returned from one rendering; later ones are only mentioned."""
DEFAULT_MAX_CHARS: Final = 100_000
"""Characters of the whole text (as ``TextOptions.max_output_chars``)."""

_ANSI: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, links
    r"|\x1b[@-Z\\-_]"  # two-character escapes
)
_TEXT_TYPES: Final = ("text/plain", "text/markdown", "text/latex")


@dataclass(frozen=True, kw_only=True)
class NotebookImage:
    """An image output of a cell, decoded from its base64."""

    number: int
    """1-based: the text shows ``[image N: ...]`` where the output is."""
    media_type: str
    """``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp``."""
    data: bytes
    cell_id: str
    """The id of the cell whose output it is (as the text shows it)."""


@dataclass(frozen=True, kw_only=True)
class RenderedNotebook:
    """A notebook rendered for a model: text, and the images its outputs hold."""

    text: str
    images: tuple[NotebookImage, ...]
    """The image outputs of the cells shown, at most ``max_images``, in order."""
    cells: int
    """Cells in the notebook."""
    first_cell: int
    """0-based index of the first cell shown."""
    shown_cells: int
    next_cell: int | None
    """The ``first_cell`` that continues, when the budget ended the text; None at the end."""
    nbformat: str
    """``"4.5"``: the format's version and minor version."""
    language: str | None
    """The kernel's language, where the metadata says it."""
    cut_outputs: int = 0
    """Outputs shown in part (their middle left out, marked)."""
    cut_cell: int | None = None
    """The 0-based index of a cell shown in part, too long for *max_chars* alone."""
    left_out_images: int = 0
    """Image outputs of the cells shown that were not returned (past ``max_images``)."""


def strip_ansi(text: str) -> str:
    """*text* without terminal escape sequences (colours of tracebacks, cursor moves)."""
    return _ANSI.sub("", text)


def render_notebook(
    data: bytes,
    *,
    path: str = "",
    first_cell: int = 0,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    max_images: int = DEFAULT_MAX_IMAGES,
    max_cells: int | None = None,
    image_marker: str = "",
) -> RenderedNotebook:
    """Render the bytes of a notebook for a model, from cell *first_cell* (0-based).

    Each cell shows as ``<cell id="..." type="..."[ execution_count="N"]>``, its
    source, then its outputs: stream text, the ``text/plain`` of results and
    displays, errors with their traceback (terminal escapes removed), each cut to
    *max_output_chars* (keeping its beginning and end); an image output shows as
    ``[image N: image/png, attached]`` and comes back in ``images``. Cells are
    shown whole while the text stays within *max_chars* (at least one, cut if it
    must be), *max_cells* at most; ``next_cell`` then says where to continue. The
    text numbers cells from 1, as a read's ``offset`` does. *image_marker* goes before each
    image's number in its line (``[image MARKER1: ...]``): a caller that rewrites those lines
    finds them by it, never in a cell's own text.

    Raises:
        NotANotebook: The bytes are not an nbformat 4 notebook.
        InvalidArgument: *first_cell* is past the last cell.

    """
    notebook = parse_notebook(data, path=path)
    cells = notebook.cells
    if first_cell < 0 or (first_cell and first_cell >= len(cells)):
        raise InvalidArgument(
            f"{path or 'the notebook'} has {len(cells)} cells; there is no cell {first_cell}",
            path=path or None,
            details={"field": "first_cell", "cells": len(cells)},
        )
    renderer = _Renderer(
        max_output_chars=max_output_chars, max_images=max_images, image_marker=image_marker
    )
    blocks: list[str] = []
    used, cut_cell = 0, None
    index = first_cell
    last = len(cells) if max_cells is None else min(len(cells), first_cell + max_cells)
    while index < last:
        block = renderer.cell(cells[index], index)
        if blocks and used + len(block) > max_chars:
            break
        if len(block) > max_chars:
            block = f"{block[:max_chars]}\n(… the rest of this cell did not fit)\n</cell>\n"
            cut_cell = index
        blocks.append(block)
        used += len(block)
        index += 1
        renderer.commit()
    renderer.forget()
    next_cell = index if index < len(cells) else None
    return RenderedNotebook(
        text=_header(notebook, first_cell, index) + "".join(blocks) + _footer(cells, next_cell),
        images=tuple(renderer.images),
        cells=len(cells),
        first_cell=first_cell,
        shown_cells=index - first_cell,
        next_cell=next_cell,
        nbformat=notebook.version,
        language=notebook.language,
        cut_outputs=renderer.cut,
        cut_cell=cut_cell,
        left_out_images=renderer.left_out,
    )


def _header(notebook: Notebook, first: int, end: int) -> str:
    count = len(notebook.cells)
    if not count:
        return f"(a Jupyter notebook, nbformat {notebook.version}, with no cells)\n"
    language = f", {notebook.language}" if notebook.language else ""
    shown = "" if (first, end) == (0, count) else f"; cells {first + 1}-{end} shown"
    return f"(a Jupyter notebook, nbformat {notebook.version}{language}: {count} cells{shown})\n"


def _footer(cells: list[dict[str, Any]], next_cell: int | None) -> str:
    if next_cell is None:
        return ""
    return (
        f"({len(cells) - next_cell} more cells after these: continue with "
        f"offset={next_cell + 1}, from cell {cell_id_of(cells[next_cell], next_cell)})\n"
    )


class _Renderer:
    """Renders cells one by one, counting images and cuts; a cell left out is taken back."""

    def __init__(self, *, max_output_chars: int, max_images: int, image_marker: str) -> None:
        self.max_output_chars = max_output_chars
        self.max_images = max_images
        self.image_marker = image_marker
        self.images: list[NotebookImage] = []
        self.cut = self.left_out = 0
        self._pending: list[NotebookImage] = []
        self._pending_cut = self._pending_left_out = 0

    def commit(self) -> None:
        """Keep what the last cell rendered (it is shown)."""
        self.images += self._pending
        self.cut += self._pending_cut
        self.left_out += self._pending_left_out
        self.forget()

    def forget(self) -> None:
        """Drop what the last cell rendered (it is not shown)."""
        self._pending, self._pending_cut, self._pending_left_out = [], 0, 0

    def cell(self, cell: dict[str, Any], index: int) -> str:
        cell_id = cell_id_of(cell, index)
        kind = cell.get("cell_type")
        head = f'<cell id="{cell_id}" type="{kind}"'
        count = cell.get("execution_count")
        if kind == "code" and isinstance(count, int):
            head += f' execution_count="{count}"'
        source = source_text(cell.get("source"))
        parts = [f"{head}>\n", _lines(source)]
        outputs = cell.get("outputs") if kind == "code" else None
        listed = outputs if isinstance(outputs, list) else []
        parts += [self.output(output, cell_id) for output in listed if isinstance(output, dict)]
        parts.append("</cell>\n")
        return "".join(parts)

    def output(self, output: dict[str, Any], cell_id: str) -> str:
        kind = output.get("output_type")
        if kind == "stream":
            name = output.get("name", "stdout")
            return self.block(f'<output type="stream" name="{name}">', _terminal(output))
        if kind == "error":
            return self.block('<output type="error">', _error(output))
        if kind in ("execute_result", "display_data"):
            return self.rich(str(kind), output, cell_id)
        return f'<output type="{kind}"/>\n'

    def rich(self, kind: str, output: dict[str, Any], cell_id: str) -> str:
        """A result or display: its text (``text/plain`` first) and its image, in one block."""
        bundle = output.get("data")
        bundle = bundle if isinstance(bundle, dict) else {}
        opening = f'<output type="{kind}"'
        body: list[str] = []
        text_type = next((t for t in _TEXT_TYPES if t in bundle), None)
        if text_type is not None:
            if text_type != "text/plain":
                opening += f' media_type="{text_type}"'
            body.append(self.shortened(source_text(bundle[text_type])))
        image_type = next((t for t in IMAGE_TYPES if t in bundle), None)
        if image_type is not None:
            body.append(self.image(image_type, bundle[image_type], cell_id))
        if not body:
            kinds = ", ".join(sorted(str(t) for t in bundle)) or "nothing"
            body.append(f"(holds {kinds}: not shown as text)")
        return f"{opening}>\n{''.join(_lines(part) for part in body)}</output>\n"

    def image(self, media_type: str, encoded: object, cell_id: str) -> str:
        """The line standing for an image output; the image itself, kept if there is room."""
        try:
            data = base64.b64decode("".join(source_text(encoded).split()), validate=True)
        except (binascii.Error, ValueError):
            data = b""
        if not data:
            return f"[{media_type} image: not valid base64]"
        if len(self.images) + len(self._pending) >= self.max_images:
            self._pending_left_out += 1
            return f"[{media_type} image: not attached, more than {self.max_images} images]"
        number = len(self.images) + len(self._pending) + 1
        self._pending.append(
            NotebookImage(number=number, media_type=media_type, data=data, cell_id=cell_id)
        )
        return f"[image {self.image_marker}{number}: {media_type}, attached]"

    def block(self, opening: str, text: str) -> str:
        return f"{opening}\n{_lines(self.shortened(text))}</output>\n"

    def shortened(self, text: str) -> str:
        """*text* without terminal escapes, its middle left out (and marked) past the budget."""
        text = strip_ansi(text)
        if len(text) <= self.max_output_chars:
            return text
        self._pending_cut += 1
        half = self.max_output_chars // 2
        left_out = len(text) - 2 * half
        return (
            f"{text[:half]}\n[… {left_out:,} characters of this output left out …]\n"
            f"{text[len(text) - half :]}"
        )


def _lines(text: str) -> str:
    """*text* ending with one line break (none added to an empty text)."""
    return text if not text or text.endswith("\n") else f"{text}\n"


def _terminal(output: dict[str, Any]) -> str:
    r"""A stream's text as a terminal shows it: of a line rewritten with ``\r``, its last state."""
    text = source_text(output.get("text")).replace("\r\n", "\n")
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def _error(output: dict[str, Any]) -> str:
    traceback = output.get("traceback")
    lines = (
        [line for line in traceback if isinstance(line, str)] if isinstance(traceback, list) else []
    )
    summary = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    if not lines:
        return summary
    text = "\n".join(lines)
    return text if summary in strip_ansi(text) else f"{text}\n{summary}"
