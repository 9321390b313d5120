"""Telling text from binary, and choosing the encoding that round-trips a file exactly.

Order of decisions:

1. A byte-order mark names the encoding (UTF-8, UTF-16, UTF-32).
2. UTF-32 or UTF-16 without a BOM, where the NUL bytes of mostly-ASCII text show it.
   Then a NUL byte, or too many control characters, in the leading bytes is binary.
3. Valid UTF-8 is UTF-8; UTF-8 with a few invalid bytes among valid text stays
   UTF-8, the invalid bytes carried through edits untouched.
4. Otherwise the legacy encodings of :class:`TextOptions` are weighed by evidence
   (:mod:`~ctxfs.core.text.legacy`); a few stray bytes in ASCII text are carried
   as in 3; anything else is refused with ``EncodingError``, never guessed.
"""

from __future__ import annotations

import codecs
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from ctxfs.core.errors import BinaryFile, EncodingError
from ctxfs.core.text.legacy import (
    detect_legacy,
    ends_lines_in_ascii,
    is_single_byte,
    strict_round_trip,
)
from ctxfs.core.text.options import TextOptions

__all__ = ["UTF8", "KnownEncodings", "TextEncoding", "detect_encoding", "sniff_binary"]


@dataclass(frozen=True, kw_only=True)
class TextEncoding:
    """How one file's bytes map to text and back."""

    codec: str
    """Python codec name, e.g. ``"utf-8"``, ``"utf-16-le"``, ``"cp1252"``."""
    bom: bytes = b""
    """Byte-order mark the file starts with, kept on write."""
    keeps_invalid_bytes: bool = False
    """Whether invalid bytes are carried as escapes (UTF-8 with damage) rather than refused."""

    @property
    def errors(self) -> str:
        """The codec error handler that round-trips this file."""
        return "surrogateescape" if self.keeps_invalid_bytes else "strict"

    @property
    def ascii_compatible(self) -> bool:
        r"""Whether ``\r`` and ``\n`` bytes always mean line endings, never parts of a character."""
        return ends_lines_in_ascii(self.codec)

    @property
    def byte_safe(self) -> bool:
        """Whether byte-level search finds exactly the character matches (UTF-8, single-byte)."""
        return self.ascii_compatible and (self.codec == "utf-8" or is_single_byte(self.codec))

    @property
    def told_by_bytes(self) -> bool:
        """Whether the bytes alone name this encoding, whatever the options say (no pin can)."""
        return self.codec.startswith(("utf-8", "utf-16", "utf-32")) and not self.keeps_invalid_bytes

    @property
    def label(self) -> str:
        """How the encoding is reported: ``"utf-8"``, ``"utf-8 with BOM"``, ``"cp1252"``."""
        if self.keeps_invalid_bytes:
            return f"{self.codec} with invalid bytes kept"
        return self.codec + (" with BOM" if self.bom else "")


UTF8: Final = TextEncoding(codec="utf-8")

_BOMS: Final = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CONTROL_BYTES: Final = bytes([*range(0x08), *range(0x0E, 0x20), 0x7F])
_STRAY_BYTES_TOLERATED: Final = 8
_VALIDATION_SLICE: Final = 1 << 20


def sniff_binary(sample: bytes, options: TextOptions, *, path: str) -> None:
    """Raise ``BinaryFile`` if *sample* (the file's leading bytes, no BOM) looks binary."""
    sample = sample[: options.sniff_bytes]
    if b"\x00" in sample:
        raise BinaryFile(
            f"{path} holds binary data (NUL bytes)",
            path=path,
            hint="This is a binary file; text tools cannot read or edit it (if it is UTF-16 or "
            "UTF-32 text without a BOM, name the encoding with its byte order: utf-16-le).",
        )
    if sample:
        controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
        if controls / len(sample) > options.max_control_ratio:
            raise BinaryFile(f"{path} holds binary data (control characters)", path=path)


def detect_encoding(
    data: bytes, options: TextOptions, *, path: str, complete: bool
) -> TextEncoding:
    """Return the encoding of *data*, the whole file or (``complete=False``) its leading bytes.

    Raises:
        BinaryFile: The content is binary.
        EncodingError: The content is text in no encoding that round-trips it exactly.

    """
    for bom, codec in _BOMS:
        if data.startswith(bom) and _bom_fits(data, bom, codec, complete=complete):
            return TextEncoding(codec=codec, bom=bom)
    wide = _unmarked_wide(data, complete=complete)
    if wide is None and len(options.legacy_encodings) == 1:  # one named: its NULs are text
        named = options.legacy_encodings[0]
        ordered = named.startswith("utf-") and named.endswith(("-le", "-be"))
        if ordered and strict_round_trip(data, named, complete=complete) is not None:
            wide = named
    if wide is not None:
        return TextEncoding(codec=wide)
    sniff_binary(data, options, path=path)
    if data.isascii() or _valid_utf8(data, complete=complete):
        return UTF8
    valid = data.decode("utf-8", "ignore")
    invalid = len(data) - len(valid.encode())  # bytes of no valid sequence
    valid_non_ascii = len(valid) - len(valid.encode("ascii", "ignore"))
    if _assigned(valid) and (
        valid_non_ascii >= 2 * invalid or (valid_non_ascii >= max(invalid, 2) and _common(valid))
    ):  # UTF-8 with damage
        return TextEncoding(codec="utf-8", keeps_invalid_bytes=True)
    legacy = detect_legacy(data, options.legacy_encodings, path=path, complete=complete)
    if legacy is not None:
        return TextEncoding(codec=legacy)
    if invalid <= _STRAY_BYTES_TOLERATED:  # stray bytes in ASCII or UTF-8 text
        return TextEncoding(codec="utf-8", keeps_invalid_bytes=True)
    tried = ", ".join(options.legacy_encodings) or "none configured"
    raise EncodingError(
        f"{path} is not UTF-8, and no encoding tried reads it surely as text (tried: {tried})",
        path=path,
        hint="If you know its encoding, read it again naming it (encoding); else leave it.",
        details={"tried": list(options.legacy_encodings)},
    )


_WIDE: Final = (  # codec, width, lanes all but NUL, lane with some NULs, lane with almost none
    ("utf-32-le", 4, (2, 3), None, 0),
    ("utf-32-be", 4, (0, 1), None, 3),
    ("utf-16-le", 2, (), 1, 0),
    ("utf-16-be", 2, (), 0, 1),
)
_WIDE_SAMPLE: Final = 4096


def _unmarked_wide(data: bytes, *, complete: bool) -> str | None:
    """UTF-32 or UTF-16 without a BOM, told by where the NUL bytes fall.

    High bytes are mostly NUL (ASCII), low bytes almost never; the text must then
    decode strictly and hold no control characters but whitespace.
    """
    sample = data[:_WIDE_SAMPLE]
    if len(sample) < 4 or b"\x00" not in sample:
        return None
    for codec, width, zeros, high, low in _WIDE:
        if complete and len(data) % width:
            continue
        lanes = [sample[lane::width] for lane in range(width)]
        nul_shares = [lane.count(0) / len(lane) for lane in lanes]
        if (
            any(nul_shares[lane] < 0.8 for lane in zeros)
            or (high is not None and not _one_alphabet(lanes[high], nul_shares[high]))
            or nul_shares[low] > 0.02
        ):
            continue
        body = data if complete else data[: len(sample) - len(sample) % width]
        try:
            text = body.decode(codec)
        except UnicodeDecodeError:
            continue
        if not any(
            unicodedata.category(char) in ("Cc", "Co", "Cn", "Cs") and char not in "\t\n\r\f"
            for char in set(text)
        ):
            return codec
    return None


_COMMON_BLOCKS: Final = re.compile(
    "[\u00a0-\u017f\u0370-\u04ff\u2000-\u20cf\u3000-\u30ff\u4e00-\u9fff\uac00-\ud7a3\uff00-\uffef]"
)


def _common(text: str) -> bool:
    """Whether every character of *text* beyond ASCII is of the blocks most text uses."""
    return all(_COMMON_BLOCKS.match(char) for char in set(text) if char > "\x7f")


def _assigned(text: str) -> bool:
    """Whether *text* holds no unassigned or private-use characters (accidental UTF-8 does)."""
    return not any(unicodedata.category(char) in ("Cn", "Co") for char in set(text))


def _one_alphabet(high_bytes: bytes, nul_share: float) -> bool:
    """Whether the high bytes of UTF-16 read like ASCII text, or one alphabet and ASCII.

    Ideographs and Hangul spread over many high bytes, between the alphabets' and the
    surrogates': their UTF-16 needs a BOM here (so does text whose high bytes would be
    ASCII letters, as in UTF-8 with a NUL).
    """
    others = set(high_bytes) - {0}
    return nul_share >= 0.8 or (
        nul_share >= 0.05 and len(others) <= _ALPHABET_HIGH_BYTES and others <= _ALPHABETIC
    )


_ALPHABET_HIGH_BYTES: Final = 3
_ALPHABETIC: Final = frozenset([*range(0x01, 0x34), *range(0xD8, 0xE0), *range(0xFB, 0x100)])
"""High bytes of alphabets, symbols and kana (below U+3400), surrogates (emoji), and
presentation and fullwidth forms (U+FB00 and up)."""


def _bom_fits(data: bytes, bom: bytes, codec: str, *, complete: bool) -> bool:
    if not complete:
        return True
    try:
        data[len(bom) :].decode(codec)
    except UnicodeDecodeError:
        return False
    return True


def _valid_utf8(data: bytes, *, complete: bool) -> bool:
    """Validate in slices, so no text as large as the file is ever built."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(data), _VALIDATION_SLICE):
            decoder.decode(view[start : start + _VALIDATION_SLICE])
        decoder.decode(b"", final=complete)
    except UnicodeDecodeError:
        return False
    return True


class KnownEncodings:
    """Encodings established for versions (a version never changes encoding), bounded LRU.

    Apart, the encodings owners named reading a file's version (:meth:`pin`): each owner's own.
    """

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self._known: OrderedDict[str, TextEncoding] = OrderedDict()
        self._pins: OrderedDict[tuple[str, str, str], TextEncoding] = OrderedDict()
        self._guard = threading.Lock()

    def pin(self, owner: str, path: str, version: str, encoding: TextEncoding | None) -> None:
        """Record the encoding *owner* last read *version* of *path* in (None: as detected)."""
        key = (owner, path, version)
        with self._guard:
            if encoding is None:
                self._pins.pop(key, None)
                return
            self._pins[key] = encoding
            self._pins.move_to_end(key)
            while len(self._pins) > self.capacity:
                self._pins.popitem(last=False)

    def pinned(self, owner: str, path: str, version: str) -> TextEncoding | None:
        """The encoding *owner* named when it last read *version* of *path*, if it named one."""
        with self._guard:
            return self._pins.get((owner, path, version))

    def get(self, version: str) -> TextEncoding | None:
        """Return the encoding recorded for *version*, if any."""
        with self._guard:
            return self._known.get(version)

    def clear(self) -> None:
        """Forget every recorded encoding (as after files changed outside ctxfs)."""
        with self._guard:
            self._known.clear()
            self._pins.clear()

    def remember(self, version: str, encoding: TextEncoding) -> None:
        """Record the encoding of *version*, forgetting the oldest beyond capacity."""
        with self._guard:
            self._known[version] = encoding
            self._known.move_to_end(version)
            while len(self._known) > self.capacity:
                self._known.popitem(last=False)
