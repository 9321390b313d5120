"""Jupyter notebooks (nbformat 4): rendered for a model, and edited one cell at a time.

:func:`render_notebook` turns a notebook's bytes into the text a model reads
(cells with their ids, sources and text outputs) and the images its outputs
hold, as data for a read path to attach. :func:`edit_notebook` replaces,
inserts or deletes one cell and returns the new bytes, with every byte outside
that cell as it was. Both use the standard library's :mod:`json`: the file's
own layout must survive an edit, which a load-and-dump library (nbformat)
would rewrite, and its validation is not needed to find and splice a cell.

Each name loads its module on first use: a read of a text file, or a listing of
the tools, needs the notebook model's names at most.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ctxfs.tools.notebooks.cells import (
        CellChange,
        CellEdit,
        EditMode,
        edit_notebook,
        new_cell_id,
    )
    from ctxfs.tools.notebooks.model import (
        NOTEBOOK_SUFFIX,
        CellType,
        NotANotebook,
        Notebook,
        cell_id_of,
        is_notebook_path,
        parse_notebook,
        source_text,
    )
    from ctxfs.tools.notebooks.view import (
        DEFAULT_MAX_IMAGES,
        DEFAULT_MAX_OUTPUT_CHARS,
        IMAGE_TYPES,
        NotebookImage,
        RenderedNotebook,
        render_notebook,
        strip_ansi,
    )

__all__ = [
    "DEFAULT_MAX_IMAGES",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "IMAGE_TYPES",
    "NOTEBOOK_SUFFIX",
    "CellChange",
    "CellEdit",
    "CellType",
    "EditMode",
    "NotANotebook",
    "Notebook",
    "NotebookImage",
    "RenderedNotebook",
    "cell_id_of",
    "edit_notebook",
    "is_notebook_path",
    "new_cell_id",
    "parse_notebook",
    "render_notebook",
    "source_text",
    "strip_ansi",
]

_HOMES: Final = {
    **dict.fromkeys(
        ("CellChange", "CellEdit", "EditMode", "edit_notebook", "new_cell_id"), "cells"
    ),
    **dict.fromkeys(
        (
            "NOTEBOOK_SUFFIX",
            "CellType",
            "NotANotebook",
            "Notebook",
            "cell_id_of",
            "is_notebook_path",
            "parse_notebook",
            "source_text",
        ),
        "model",
    ),
    **dict.fromkeys(
        (
            "DEFAULT_MAX_IMAGES",
            "DEFAULT_MAX_OUTPUT_CHARS",
            "IMAGE_TYPES",
            "NotebookImage",
            "RenderedNotebook",
            "render_notebook",
            "strip_ansi",
        ),
        "view",
    ),
}
"""The module (under ``ctxfs.tools.notebooks``) each public name comes from."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
