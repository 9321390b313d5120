"""Text semantics shared by every backend: encodings, line windows, exact edits.

- :mod:`~ctxfs.core.text.encodings` tells text from binary and picks the encoding
  that round-trips a file byte for byte, or refuses it.
- :mod:`~ctxfs.core.text.window` streams a window of lines out of any size of file.
- :mod:`~ctxfs.core.text.document` holds a whole file for edits, inserts and
  writes that change nothing outside their spans (with ``splicing`` and ``rewrite``).
- :mod:`~ctxfs.core.text.edits` checks replacements and applies several in turn.
- :mod:`~ctxfs.core.text.patches` locates a patch's hunks and applies them.
- :mod:`~ctxfs.core.text.mismatch` explains a failed match so a model can fix it.
"""

from ctxfs.core.text.document import (
    AnyDocument,
    Change,
    TextDocument,
    decode_document,
    display,
    has_lone_surrogates,
)
from ctxfs.core.text.edits import (
    Replacement,
    check_edit_strings,
    check_replacements,
    replace_in_turn,
)
from ctxfs.core.text.encodings import KnownEncodings, TextEncoding, detect_encoding
from ctxfs.core.text.line_numbers import LINE_NUMBER_PREFIX, format_line_number, number_lines
from ctxfs.core.text.options import DEFAULT_LEGACY_ENCODINGS, TextOptions
from ctxfs.core.text.patches import FilePatch, Hunk, PatchAction, locate_hunks, patch_document
from ctxfs.core.text.window import Window, iter_lines, read_window, truncation_marker

__all__ = [
    "DEFAULT_LEGACY_ENCODINGS",
    "LINE_NUMBER_PREFIX",
    "AnyDocument",
    "Change",
    "FilePatch",
    "Hunk",
    "KnownEncodings",
    "PatchAction",
    "Replacement",
    "TextDocument",
    "TextEncoding",
    "TextOptions",
    "Window",
    "check_edit_strings",
    "check_replacements",
    "decode_document",
    "detect_encoding",
    "display",
    "format_line_number",
    "has_lone_surrogates",
    "iter_lines",
    "locate_hunks",
    "number_lines",
    "patch_document",
    "read_window",
    "replace_in_turn",
    "truncation_marker",
]
