"""A Jupyter notebook (nbformat 4) as read from its bytes: its JSON, its cells, their ids."""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from typing import Any, Final

from ctxfs.core import AmbiguousMatch, InvalidArgument

__all__ = [
    "NOTEBOOK_SUFFIX",
    "CellType",
    "NotANotebook",
    "Notebook",
    "cell_id_of",
    "is_notebook_path",
    "parse_notebook",
    "source_text",
]

NOTEBOOK_SUFFIX: Final = ".ipynb"
_INDEX_ID: Final = re.compile(r"cell-(\d{1,9})")
_BOM: Final = "\ufeff"


class CellType(enum.StrEnum):
    """The kinds of notebook cell."""

    CODE = "code"
    MARKDOWN = "markdown"
    RAW = "raw"


class NotANotebook(InvalidArgument):
    """The file is not a notebook this module can read: not UTF-8 JSON, or not nbformat 4.

    Its code is ``invalid_argument``; ``details["reason"]`` says what is wrong. A
    read path can catch it to show the file as text instead.
    """


@dataclass(frozen=True, kw_only=True)
class Notebook:
    """A notebook's text and content, as parsed from its bytes."""

    text: str
    """The JSON text, without the byte-order mark."""
    bom: bool
    """Whether the file starts with a UTF-8 byte-order mark."""
    content: dict[str, Any]
    """The parsed document (keys in the file's order)."""
    path: str = ""

    @property
    def cells(self) -> list[dict[str, Any]]:
        """The cells, in order."""
        cells: list[dict[str, Any]] = self.content["cells"]
        return cells

    @property
    def version(self) -> str:
        """``"4.5"``: nbformat and nbformat_minor."""
        return f"{self.content.get('nbformat')}.{self.content.get('nbformat_minor', 0)}"

    @property
    def has_ids(self) -> bool:
        """Whether its cells carry ids (nbformat 4.5 and later)."""
        minor = self.content.get("nbformat_minor", 0)
        return isinstance(minor, int) and minor >= 5

    @property
    def language(self) -> str | None:
        """The kernel's language, where the metadata says it."""
        metadata = self.content.get("metadata")
        if not isinstance(metadata, dict):
            return None
        for key, field in (("language_info", "name"), ("kernelspec", "language")):
            section = metadata.get(key)
            if isinstance(section, dict) and isinstance(section.get(field), str):
                return str(section[field])
        return None

    def ids(self) -> list[str]:
        """Each cell's id, as :func:`cell_id_of` gives it."""
        return [cell_id_of(cell, index) for index, cell in enumerate(self.cells)]

    def find(self, cell_id: str) -> int:
        """The index of the cell *cell_id* names: its id, else ``cell-N`` (the N-th, from 0).

        Raises:
            InvalidArgument: No cell has that id (the known ids are in the details).
            AmbiguousMatch: Several cells have that id.

        """
        found = [index for index, cell in enumerate(self.cells) if cell.get("id") == cell_id]
        if len(found) > 1:
            taken = {cell.get("id") for cell in self.cells}  # (an id wins over a position)
            positions = [f"cell-{index}" for index in found if f"cell-{index}" not in taken]
            raise AmbiguousMatch(
                f"{self.path or 'the notebook'} has {len(found)} cells with the id {cell_id!r}",
                path=self.path or None,
                hint=f"Name one by its position instead: {', '.join(positions[:20])}."
                if len(positions) == len(found)
                else "Another cell's id is a position's name: edit the notebook as text.",
                details={"field": "cell_id", "cells": found[:100]},
            )
        if found:
            return found[0]
        numbered = _INDEX_ID.fullmatch(cell_id)
        if numbered is not None and int(numbered.group(1)) < len(self.cells):
            return int(numbered.group(1))
        known = self.ids()
        shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        raise InvalidArgument(
            f"{self.path or 'the notebook'} has no cell {cell_id!r}",
            path=self.path or None,
            hint=(
                f"Use a cell id the notebook's read shows: {shown}."
                if known
                else "The notebook has no cells: insert one (edit_mode insert, no cell_id)."
            ),
            details={"field": "cell_id", "known_ids": known[:100]},
        )


def is_notebook_path(path: str) -> bool:
    """Whether *path* names a Jupyter notebook (by its suffix, as Jupyter itself decides)."""
    return path.lower().endswith(NOTEBOOK_SUFFIX)


def cell_id_of(cell: dict[str, Any], index: int) -> str:
    """The id of *cell*: its own (nbformat 4.5), else ``cell-N`` for the N-th cell, from 0."""
    own = cell.get("id")
    return own if isinstance(own, str) and own else f"cell-{index}"


def source_text(value: object) -> str:
    """A multi-line string of nbformat (a string, or a list of lines) as one string."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return ""


def parse_notebook(data: bytes, *, path: str = "") -> Notebook:
    """Parse the bytes of an nbformat 4 notebook (UTF-8, with or without a BOM).

    Raises:
        NotANotebook: The bytes are not UTF-8, not JSON, or not an nbformat 4
            notebook (``details["reason"]``: ``encoding``, ``json`` or ``format``).

    """
    where = path or "the file"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _not_a_notebook(
            f"{where} is not a notebook: it is not UTF-8 text (byte {error.start})",
            path,
            "encoding",
        ) from None
    bom = text.startswith(_BOM)
    if bom:
        text = text[1:]
    try:
        content = json.loads(text)
    except json.JSONDecodeError as error:
        raise _not_a_notebook(
            f"{where} is not a notebook: invalid JSON at line {error.lineno} "
            f"column {error.colno} ({error.msg})",
            path,
            "json",
        ) from None
    except RecursionError:
        raise _not_a_notebook(
            f"{where} is not a notebook this reader takes: its JSON is nested too deep",
            path,
            "json",
        ) from None
    except ValueError as error:  # a number too long
        raise _not_a_notebook(
            f"{where} is not a notebook this reader takes: {error}", path, "json"
        ) from None
    if not isinstance(content, dict) or not isinstance(content.get("cells"), list):
        if isinstance(content, dict) and "worksheets" in content:
            raise _not_a_notebook(
                f"{where} is an nbformat {content.get('nbformat', 3)} notebook; only nbformat 4 "
                "is supported",
                path,
                "format",
                hint="Upgrade it (jupyter nbconvert --to notebook --nbformat 4), or edit it "
                "as text.",
            )
        raise _not_a_notebook(
            f"{where} is not a notebook: its JSON has no list of cells", path, "format"
        )
    if content.get("nbformat") != 4:
        raise _not_a_notebook(
            f"{where} is an nbformat {content.get('nbformat')!r} notebook; only nbformat 4 "
            "is supported",
            path,
            "format",
        )
    if not all(isinstance(cell, dict) for cell in content["cells"]):
        raise _not_a_notebook(
            f"{where} is not a notebook: a cell is not a JSON object", path, "format"
        )
    return Notebook(text=text, bom=bom, content=content, path=path)


def _not_a_notebook(message: str, path: str, reason: str, hint: str | None = None) -> NotANotebook:
    return NotANotebook(
        message,
        path=path or None,
        hint=hint or "Read it as text, or fix the file; only nbformat 4 JSON is a notebook.",
        details={"reason": reason},
    )
