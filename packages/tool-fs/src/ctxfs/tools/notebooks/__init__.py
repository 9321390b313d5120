"""Jupyter notebooks (nbformat 4): rendered for a model, and edited one cell at a time.

Both parse with the standard library's :mod:`json`, not nbformat: an edit keeps every
byte outside its cell, which a load-and-dump library would rewrite. The names of
:mod:`.cells` and :mod:`.view` load their module on first use (a text read needs neither).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

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

if TYPE_CHECKING:
    from ctxfs.tools.notebooks.cells import (
        CellChange,
        CellEdit,
        EditMode,
        edit_notebook,
        new_cell_id,
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

_EXPORTS: Final = {
    "cells": ("CellChange", "CellEdit", "EditMode", "edit_notebook", "new_cell_id"),
    "view": (
        "DEFAULT_MAX_IMAGES",
        "DEFAULT_MAX_OUTPUT_CHARS",
        "IMAGE_TYPES",
        "NotebookImage",
        "RenderedNotebook",
        "render_notebook",
        "strip_ansi",
    ),
}
"""The names loaded on first use, by the module (under ``ctxfs.tools.notebooks``) of each."""
_HOMES: Final = {name: home for home, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
