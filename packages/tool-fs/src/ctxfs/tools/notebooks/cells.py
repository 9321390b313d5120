"""Edits of one notebook cell that leave every other byte of the file as it was.

The cell's characters are found in the JSON text (:mod:`.jsontext`) and only
they change: for a new source, only the ``source`` value; for a new type, an
insert or a delete, the cell and the separator beside it. What is written is
laid out as the rest of the file (indent unit, key order, separators,
escaping, line ending, byte-order mark). The result must parse back to the
intended notebook, or the notebook is written again whole in its layout; if
even that does not round-trip, nothing is written.
"""

from __future__ import annotations

import enum
import json
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ctxfs.core import BackendError, EncodingError, InvalidArgument, NoChange
from ctxfs.tools.notebooks.jsontext import (
    Layout,
    Member,
    Span,
    array_elements,
    dumps_at,
    layout_of,
    line_prefix,
    object_members,
    skip_space,
)
from ctxfs.tools.notebooks.model import CellType, Notebook, cell_id_of, parse_notebook

__all__ = ["CellChange", "CellEdit", "EditMode", "edit_notebook", "new_cell_id"]

_KEY_ORDER: Final = (
    "attachments",
    "cell_type",
    "execution_count",
    "id",
    "metadata",
    "outputs",
    "source",
)
"""The keys of a cell, as nbformat writes them (sorted)."""
_ONLY_CODE: Final = ("execution_count", "outputs")


class EditMode(enum.StrEnum):
    """What an edit does to its cell."""

    REPLACE = "replace"
    INSERT = "insert"
    DELETE = "delete"


@dataclass(frozen=True, kw_only=True)
class CellEdit:
    """One edit of a notebook cell."""

    mode: EditMode = EditMode.REPLACE
    cell_id: str | None = None
    """The cell replaced or deleted; for an insert, the cell the new one follows (None or
    empty: the new cell comes first). An id, or ``cell-N`` for the N-th cell from 0."""
    source: str = ""
    """The new source (ignored by a delete)."""
    cell_type: CellType | None = None
    """The new cell's type (an insert needs one); for a replace, a change of type."""


@dataclass(frozen=True, kw_only=True)
class CellChange:
    """A notebook edited: its new bytes and what changed."""

    data: bytes
    mode: EditMode
    cell_id: str
    """The cell replaced, inserted (its new id) or deleted."""
    index: int
    """Its 0-based position (a deleted cell's former one)."""
    cell_type: str
    """Its type (after the edit)."""
    previous_type: str | None
    """A replaced cell's type before the edit; None otherwise."""
    cells: int
    """Cells in the notebook after the edit."""
    kept_outputs: int
    """Outputs of a replaced code cell, kept from its previous source."""
    rewritten_whole: bool
    """True when the notebook could not be spliced and was written again whole in its layout."""
    ids: bool
    """Whether every cell carries an id of its own (``cell-N`` ids shift with inserts and
    deletes)."""


def new_cell_id(taken: set[str]) -> str:
    """A new cell id as Jupyter makes them (8 hexadecimal digits), none of *taken*."""
    while (made := secrets.token_hex(4)) in taken:
        pass  # pragma: no cover
    return made


def edit_notebook(
    data: bytes,
    edit: CellEdit,
    *,
    path: str = "",
    make_id: Callable[[set[str]], str] = new_cell_id,
) -> CellChange:
    """Apply *edit* to the notebook *data*; return the new bytes, every other byte kept.

    A replace keeps a code cell's outputs and execution count (they are from
    the previous source until the cell runs again); a change of type to
    markdown or raw drops them, and one to code starts with none. An insert
    puts the new cell after ``cell_id`` (first when there is none) and gives it
    an id from *make_id* when the notebook has ids (nbformat 4.5 and later).

    Raises:
        NotANotebook: *data* is not an nbformat 4 notebook.
        InvalidArgument: No cell has ``cell_id`` (the known ids are in the
            details), a replace or delete names none, an insert has no type.
        NoChange: A replace that would leave the cell as it is.
        EncodingError: The new source holds an unpaired surrogate.
        BackendError: The edited notebook does not write back exactly (nothing
            is to be written).

    """
    if edit.mode is not EditMode.DELETE:  # (an ASCII notebook would escape it, not refuse it)
        _utf8(edit.source, path)
    notebook = parse_notebook(data, path=path)
    where = _Where.of(notebook)
    cells = notebook.cells
    if edit.mode is EditMode.INSERT:
        if edit.cell_type is None:
            raise InvalidArgument(
                "an insert needs the new cell's cell_type (code, markdown or raw)",
                path=path or None,
                details={"field": "cell_type"},
            )
        index = notebook.find(edit.cell_id) + 1 if edit.cell_id else 0
        cell = _new_cell(notebook, edit, index, make_id)
        text = where.inserted(index, cell)
        new_cells = [*cells[:index], cell, *cells[index:]]
        changed, cell_id, previous, kept = cell, cell_id_of(cell, index), None, 0
    else:
        if not edit.cell_id:
            raise InvalidArgument(
                f"a {edit.mode} needs the cell_id of the cell",
                path=path or None,
                details={"field": "cell_id"},
            )
        index = notebook.find(edit.cell_id)
        cell_id = cell_id_of(cells[index], index)
        previous = str(cells[index].get("cell_type"))
        if edit.mode is EditMode.DELETE:
            text = where.deleted(index)
            new_cells = [*cells[:index], *cells[index + 1 :]]
            changed, kept = cells[index], 0
        else:
            changed = _replaced(notebook, index, edit)
            text = where.replaced(index, changed)
            new_cells = [*cells[:index], changed, *cells[index + 1 :]]
            outputs = changed.get("outputs")
            kept = (
                len(outputs)
                if isinstance(outputs, list) and changed.get("cell_type") == "code"
                else 0
            )
    intended = {**notebook.content, "cells": new_cells}
    whole = not _reads_back(text, intended)
    if whole:
        text = where.whole(intended)
        if not _reads_back(text, intended):
            raise BackendError(
                f"{path or 'the notebook'} cannot be written back exactly after this edit; "
                "nothing was changed",
                path=path or None,
                hint="Edit the notebook as text instead.",
            )
    return CellChange(
        data=_utf8(("\ufeff" if notebook.bom else "") + text, path),
        mode=edit.mode,
        cell_id=cell_id,
        index=index,
        cell_type=str(changed.get("cell_type")),
        previous_type=previous if edit.mode is EditMode.REPLACE else None,
        cells=len(new_cells),
        kept_outputs=kept,
        rewritten_whole=whole,
        ids=all(isinstance(cell.get("id"), str) and cell["id"] for cell in new_cells),
    )


def _reads_back(text: str, intended: dict[str, Any]) -> bool:
    """Whether *text* parses to *intended* (a NaN, which Python's json writes, equal to itself)."""
    try:
        return _same(json.loads(text), intended)
    except (json.JSONDecodeError, RecursionError):
        return False


def _same(one: object, other: object) -> bool:
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(_same(one[key], other[key]) for key in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(map(_same, one, other))
    if isinstance(one, float) and isinstance(other, float) and math.isnan(one):
        return math.isnan(other)
    return type(one) is type(other) and one == other


def _sorted(keys: list[str]) -> bool:
    return keys == sorted(keys)


def _key_order(notebook: Notebook, near: int) -> list[str] | None:
    """The key order new cells take: None when the file sorts keys; else a neighbour's."""
    cells = notebook.cells
    if _sorted(list(notebook.content)) and all(_sorted(list(cell)) for cell in cells):
        return None
    if not cells:
        return list(_KEY_ORDER)
    return list(cells[min(max(near, 0), len(cells) - 1)])


def _ordered(cell: dict[str, Any], order: list[str] | None) -> dict[str, Any]:
    """*cell* with its keys in *order* (None: sorted), keys *order* lacks as nbformat sorts."""
    if order is None:
        return dict(sorted(cell.items()))
    ranked = [key for key in order if key in cell]
    ranked += [key for key in _KEY_ORDER if key in cell and key not in ranked]
    ranked += [key for key in cell if key not in ranked]
    return {key: cell[key] for key in ranked}


def _source_value(source: str, as_lines: bool) -> str | list[str]:
    """A source as nbformat writes it: a list of lines (each with its line break), or one string."""
    return source.splitlines(keepends=True) if as_lines else source


def _lines_form(notebook: Notebook, near: int | None) -> bool:
    """Whether sources are written as lists of lines: as the cell *near*, else as most cells."""
    cells = notebook.cells
    if near is not None and 0 <= near < len(cells) and "source" in cells[near]:
        return not isinstance(cells[near]["source"], str)
    strings = sum(isinstance(cell.get("source"), str) for cell in cells)
    return strings * 2 <= len(cells) or not cells


def _utf8(text: str, path: str) -> bytes:
    """*text* in UTF-8; ``EncodingError`` for a lone surrogate (JSON escapes it, UTF-8 cannot)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise EncodingError(
            f"the edited cell of {path or 'the notebook'} holds a character UTF-8 cannot "
            f"encode ({error.object[error.start : error.end]!r}); nothing was changed",
            path=path or None,
            hint="Leave out unpaired surrogate characters (U+D800 to U+DFFF).",
        ) from None


def _new_cell(
    notebook: Notebook, edit: CellEdit, index: int, make_id: Callable[[set[str]], str]
) -> dict[str, Any]:
    kind = CellType(edit.cell_type or CellType.CODE)
    cell: dict[str, Any] = {"cell_type": str(kind), "metadata": {}}
    if notebook.has_ids:
        cell["id"] = make_id({str(cell.get("id")) for cell in notebook.cells})
    if kind is CellType.CODE:
        cell["execution_count"] = None
        cell["outputs"] = []
    cell["source"] = _source_value(edit.source, _lines_form(notebook, None))
    return _ordered(cell, _key_order(notebook, index - 1))


def _replaced(notebook: Notebook, index: int, edit: CellEdit) -> dict[str, Any]:
    old = notebook.cells[index]
    kind = edit.cell_type or old.get("cell_type")
    if not isinstance(kind, str):  # (a cell the file left untyped)
        raise InvalidArgument(
            f"cell {cell_id_of(old, index)} has no cell_type",
            path=notebook.path or None,
            hint="Give its cell_type too: code or markdown.",
            details={"field": "cell_type"},
        )
    cell = {**old, "cell_type": str(kind)}
    cell["source"] = _source_value(edit.source, _lines_form(notebook, index))
    if kind == "code":
        cell.pop("attachments", None)
        cell.setdefault("execution_count", None)
        cell.setdefault("outputs", [])
    else:
        for key in _ONLY_CODE:
            cell.pop(key, None)
    if cell == old:
        what = "source" if kind == old.get("cell_type") else "source and type"
        raise NoChange(
            f"cell {cell_id_of(old, index)} already has this {what}",
            path=notebook.path or None,
            hint="Give the new source of the cell; it is the same as the current one.",
        )
    order = None if _key_order(notebook, index) is None else list(old)
    return _ordered(cell, order)


@dataclass(frozen=True, kw_only=True)
class _Where:
    """Where a notebook's cells are in its text, and how the text is laid out."""

    notebook: Notebook
    top: Span
    cells_key: Member
    cells_end: int
    """Index after the ``]`` of the cells."""
    elements: list[Span]
    layout: Layout

    @classmethod
    def of(cls, notebook: Notebook) -> _Where:
        text = notebook.text
        start = skip_space(text, 0)
        members, end = object_members(text, start)
        cells_key = [member for member in members if member.key == "cells"][-1]
        elements, cells_end = array_elements(text, cells_key.value.start)
        return cls(
            notebook=notebook,
            top=Span(start=start, end=end),
            cells_key=cells_key,
            cells_end=cells_end,
            elements=elements,
            layout=layout_of(text, start, members),
        )

    @property
    def text(self) -> str:
        return self.notebook.text

    def _prefix(self, at: int, depth: int) -> str:
        """The indentation of the line of *at*, or *depth* levels where it cannot be seen."""
        found = line_prefix(self.text, at)
        if found is not None:
            return found
        return (self.layout.indent or "") * depth

    def _cell_prefix(self) -> str:
        if self.elements:
            return self._prefix(self.elements[0].start, 2)
        return self._prefix(self.cells_key.key_start, 1) + (self.layout.indent or "")

    def _dumped_cell(self, cell: dict[str, Any]) -> str:
        """*cell* (its keys in order already; what it holds keeps its own) laid out as a cell."""
        return dumps_at(cell, self.layout, self._cell_prefix())

    def _separator(self) -> str:
        """What stands between two cells: as between the first two, else as the layout says."""
        text, elements = self.text, self.elements
        if len(elements) > 1:
            return text[elements[0].end : elements[1].start]
        if self.layout.indent is None:
            return self.layout.item_separator
        return self.layout.item_separator + self.layout.newline + self._cell_prefix()

    def inserted(self, index: int, cell: dict[str, Any]) -> str:
        text, elements = self.text, self.elements
        written = self._dumped_cell(cell)
        if not elements:
            opening = self.cells_key.value.start + 1
            if self.layout.indent is None:
                inside = written
            else:
                closing = self._prefix(self.cells_key.key_start, 1)
                newline = self.layout.newline
                inside = f"{newline}{self._cell_prefix()}{written}{newline}{closing}"
            return text[:opening] + inside + text[self.cells_end - 1 :]
        separator = self._separator()
        if index == 0:
            at = elements[0].start
            return text[:at] + written + separator + text[at:]
        at = elements[index - 1].end
        return text[:at] + separator + written + text[at:]

    def deleted(self, index: int) -> str:
        text, elements = self.text, self.elements
        if len(elements) == 1:
            return text[: self.cells_key.value.start + 1] + text[self.cells_end - 1 :]
        if index < len(elements) - 1:
            return text[: elements[index].start] + text[elements[index + 1].start :]
        return text[: elements[index - 1].end] + text[elements[index].end :]

    def replaced(self, index: int, cell: dict[str, Any]) -> str:
        text, span = self.text, self.elements[index]
        old = self.notebook.cells[index]
        if list(cell) == list(old) and all(
            cell[key] == old[key] for key in cell if key != "source"
        ):
            members, _ = object_members(text, span.start)
            source = [member for member in members if member.key == "source"][-1]
            written = dumps_at(cell["source"], self.layout, self._prefix(source.key_start, 3))
            return text[: source.value.start] + written + text[source.value.end :]
        return text[: span.start] + self._dumped_cell(cell) + text[span.end :]

    def whole(self, content: dict[str, Any]) -> str:
        """The notebook written again whole in its layout, keeping what is around it."""
        text = self.text
        written = dumps_at(content, self.layout, "")
        return text[: self.top.start] + written + text[self.top.end :]
