"""Limits and choices of the text layer."""

from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from ctxfs.core.globs import glob_matcher
from ctxfs.core.text.line_numbers import LINE_NUMBER_PREFIX, format_line_number, number_lines

__all__ = [
    "DEFAULT_LEGACY_ENCODINGS",
    "LINE_NUMBER_PREFIX",
    "TextOptions",
    "format_line_number",
    "number_lines",
    "text_codec",
]

DEFAULT_LEGACY_ENCODINGS: Final = (
    "shift_jis", "cp932", "euc_jp", "gbk", "gb18030", "big5", "euc_kr", "cp949",
    "cp1252", "iso8859-15", "latin-1", "cp1250", "iso8859-2", "cp1257", "cp1254", "iso8859-9",
    "cp1258", "cp1251", "koi8-r", "koi8-u", "cp866", "iso8859-5", "cp1253", "iso8859-7",
    "cp1255", "iso8859-8", "cp1256", "cp874",
)  # fmt: skip
"""Encodings weighed, for text that is not UTF-8 and carries no BOM
(:mod:`~ctxfs.core.text.legacy`); where two read the same text, the first names it."""


@dataclass(frozen=True, kw_only=True)
class TextOptions:
    """How text is read, detected and bounded. One instance per ``Fs``."""

    default_limit: int = 2000
    """Lines a read returns when the caller gives no limit."""
    max_line_chars: int = 2000
    """Characters of one line shown before it is cut and marked."""
    max_output_chars: int = 100_000
    """Characters a read window holds at most (line numbers included); it ends before a line
    that would pass the budget."""
    chunk_size: int = 1 << 20
    """Bytes per chunk when streaming a file."""
    sniff_bytes: int = 8192
    """Leading bytes examined to tell binary from text."""
    detect_bytes: int = 1 << 20
    """Leading bytes examined to choose an encoding when a read streams."""
    max_control_ratio: float = 0.3
    """Share of control characters in the sniffed bytes above which content is binary."""
    max_edit_bytes: int = 1 << 31
    """Largest file that edit, insert and write load whole; larger files are ``too_large``.
    (Reads stream, whatever the size.)"""
    legacy_encodings: tuple[str, ...] = DEFAULT_LEGACY_ENCODINGS
    """Encodings that text which is not UTF-8 may be detected as; empty refuses such text.
    One encoding pins it: it is used wherever it round-trips the bytes."""
    encoding_overrides: Mapping[str, str] = field(default_factory=dict, hash=False)
    """Glob pattern -> encoding, for files written in another code page than the rest: the
    first pattern matching a file's root-relative path pins its legacy encoding."""

    @property
    def names_encodings(self) -> bool:
        """Whether these options name encodings to read text in: files of legacy text lie here.

        Overrides, or legacy encodings other than :data:`DEFAULT_LEGACY_ENCODINGS`.
        """
        return bool(self.encoding_overrides) or self.legacy_encodings != DEFAULT_LEGACY_ENCODINGS

    def for_path(self, path: str) -> TextOptions:
        """These options for the file at *path*: pinned by the first override matching it."""
        for pattern, encoding in self.encoding_overrides.items():
            if glob_matcher(pattern).fullmatch(path):
                return self.pinned(encoding)
        return self

    def pinned(self, encoding: str) -> TextOptions:
        """These options with *encoding* the one legacy encoding (a BOM or UTF-8 still wins).

        Raises:
            LookupError: Python knows no text encoding *encoding* (``hex``, ``zlib``:
                codecs of bytes to bytes, are none).

        """
        name = text_codec(encoding)
        return dataclasses.replace(self, legacy_encodings=(name,), encoding_overrides={})

    def __post_init__(self) -> None:
        for name in (
            "default_limit",
            "max_line_chars",
            "chunk_size",
            "sniff_bytes",
            "max_edit_bytes",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"TextOptions.{name} must be positive")
        if self.max_output_chars < self.max_line_chars + 100:
            raise ValueError("TextOptions.max_output_chars must leave room for one whole line")
        if self.detect_bytes < self.sniff_bytes:
            raise ValueError("TextOptions.detect_bytes must be at least sniff_bytes")
        named = {*self.legacy_encodings, *self.encoding_overrides.values()}
        for encoding in named.difference(DEFAULT_LEGACY_ENCODINGS):  # (no codec loaded for those)
            text_codec(encoding)
        for pattern in self.encoding_overrides:
            glob_matcher(pattern)  # raises InvalidArgument for a broken pattern


def text_codec(encoding: str) -> str:
    """The name of the text encoding *encoding* names.

    Raises:
        LookupError: Python knows no text encoding *encoding* (``hex``, ``zlib``:
            codecs of bytes to bytes, are none; nor are escapes such as ``unicode_escape``).

    """
    try:
        name = codecs.lookup(encoding).name
        "".encode(name)  # (LookupError for a codec that is no text encoding)
        b"".decode(name)
    except ValueError as error:  # a name no codec has (NUL, a lone surrogate), "undefined"
        raise LookupError(f"unknown encoding: {encoding!r}") from error
    if name in _ESCAPES:
        raise LookupError(f"{encoding!r} spells text in escapes; it encodes no text file")
    return name


_ESCAPES: Final = frozenset({"unicode-escape", "raw-unicode-escape", "idna", "punycode"})
