"""Telling text from binary, and choosing the encoding that round-trips a file exactly.

Order of decisions:

1. A byte-order mark names the encoding (UTF-8, UTF-16 and UTF-32, either order).
2. Content decides binary: a NUL byte, or too many control characters, in the
   leading bytes. File names are never consulted.
3. Valid UTF-8 is UTF-8. UTF-8 with a few invalid bytes among valid text stays
   UTF-8, and the invalid bytes are carried through edits untouched.
4. Otherwise each legacy encoding of :class:`TextOptions` is tried. It must
   decode strictly, re-encode to the same bytes and look like its language;
   if exactly one fits (scripts of their own, like kana and hangul, settle
   ties between CJK encodings) it is chosen. Anything else is refused with
   ``EncodingError``: a file is never guessed at and damaged.
"""

from __future__ import annotations

import codecs
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ctxfs.core.errors import BinaryFile, EncodingError
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
        return not self.codec.startswith(("utf-16", "utf-32"))

    @property
    def byte_safe(self) -> bool:
        """Whether a byte-level search finds exactly the character-level matches.

        True for UTF-8 (self-synchronising) and single-byte encodings, where work
        can stay on bytes; multibyte legacy encodings and UTF-16/32 work on text.
        """
        return self.codec == "utf-8" or _is_single_byte(self.codec)

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
        raise BinaryFile(f"{path} holds binary data (NUL bytes)", path=path)
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
    sniff_binary(data, options, path=path)
    if data.isascii() or _valid_utf8(data, complete=complete):
        return UTF8
    text = data.decode("utf-8", "surrogateescape")
    invalid = sum(1 for char in text if "\udc80" <= char <= "\udcff")
    valid_non_ascii = sum(1 for char in text if char > "\x7f" and not "\udc80" <= char <= "\udcff")
    if valid_non_ascii >= invalid:
        return TextEncoding(codec="utf-8", keeps_invalid_bytes=True)
    legacy = _detect_legacy(data, options, path=path, complete=complete)
    if legacy is not None:
        return legacy
    if invalid <= _STRAY_BYTES_TOLERATED:
        return TextEncoding(codec="utf-8", keeps_invalid_bytes=True)
    tried = ", ".join(options.legacy_encodings) or "none configured"
    raise EncodingError(
        f"{path} is not UTF-8 and no other encoding fits it exactly (tried: {tried})",
        path=path,
        details={"tried": list(options.legacy_encodings)},
    )


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
    """Encodings already established for versions, so one version is detected only once.

    A version names one content, so its encoding never changes. ctx.fs records
    the encoding of each version it decodes and of each it writes (written in
    the same encoding), which spares repeated edits of a large file a full
    validation pass each.
    """

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self._known: OrderedDict[str, TextEncoding] = OrderedDict()
        self._guard = threading.Lock()

    def get(self, version: str) -> TextEncoding | None:
        """Return the encoding recorded for *version*, if any."""
        with self._guard:
            return self._known.get(version)

    def clear(self) -> None:
        """Forget every recorded encoding."""
        with self._guard:
            self._known.clear()

    def remember(self, version: str, encoding: TextEncoding) -> None:
        """Record the encoding of *version*, forgetting the oldest beyond capacity."""
        with self._guard:
            self._known[version] = encoding
            self._known.move_to_end(version)
            while len(self._known) > self.capacity:
                self._known.popitem(last=False)


def _is_single_byte(codec: str) -> bool:
    return codecs.lookup(codec).name in _SINGLE_BYTE


_SINGLE_BYTE: Final = frozenset(
    codecs.lookup(name).name
    for name in (
        "latin-1", "iso8859-2", "iso8859-15", "cp1250", "cp1251", "cp1252", "cp1253",
        "cp1254", "cp1257", "koi8-r", "koi8-u", "mac-roman", "cp437", "cp850", "cp866",
    )
)  # fmt: skip


# -- legacy encodings ---------------------------------------------------------------


def _detect_legacy(
    data: bytes, options: TextOptions, *, path: str, complete: bool
) -> TextEncoding | None:
    fits: list[tuple[int, float, str]] = []
    for codec in options.legacy_encodings:
        text = _strict_round_trip(data, codec, complete=complete)
        if text is None:
            continue
        judged = _judge(codec, text)
        if judged is not None:
            fits.append((*judged, codec))
    if not fits:
        return None
    fits.sort(key=lambda fit: (-fit[0], -fit[1]))
    best_tier, best_score, best = fits[0]
    rivals = [fit for fit in fits[1:] if fit[0] == best_tier and fit[1] * 2 > best_score]
    if best_tier == _TIER_IDEOGRAPHS and rivals:
        names = ", ".join([best, *(codec for _, _, codec in rivals)])
        raise EncodingError(
            f"{path} could be in any of: {names}; it is left untouched",
            path=path,
            hint="The encoding is ambiguous; configure TextOptions.legacy_encodings "
            "with the one this project uses.",
            details={"candidates": [best, *(codec for _, _, codec in rivals)]},
        )
    return TextEncoding(codec=codecs.lookup(best).name)


def _strict_round_trip(data: bytes, codec: str, *, complete: bool) -> str | None:
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        text = decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return None
    if complete and text.encode(codec) != data:
        return None
    return text


_TIER_SCRIPT, _TIER_IDEOGRAPHS, _TIER_LATIN = 3, 2, 1


def _judge(codec: str, text: str) -> tuple[int, float] | None:
    """Return (tier, score) if *text* looks like the language *codec* is for, else None."""
    non_ascii = [char for char in text if char > "\x7f"]
    if not non_ascii or any(unicodedata.category(char) in ("Cc", "Co", "Cn") for char in non_ascii):
        return None
    family = _FAMILY.get(codecs.lookup(codec).name)
    if family is None:  # a single-byte encoding: Latin-script text
        letters = sum(1 for char in non_ascii if char.isalpha())
        plausible = letters * 2 >= len(non_ascii) or len(non_ascii) <= 10
        return (_TIER_LATIN, letters / len(non_ascii)) if plausible else None
    return family(non_ascii)


def _japanese(chars: list[str]) -> tuple[int, float] | None:
    kana = sum(1 for char in chars if "\u3041" <= char <= "\u30ff")
    if not kana or any("\uff61" <= char <= "\uff9f" for char in chars):
        return None
    return (_TIER_SCRIPT, kana / len(chars)) if _share(chars, _is_cjk_text) >= 0.95 else None


def _korean(chars: list[str]) -> tuple[int, float] | None:
    hangul = sum(1 for char in chars if "\uac00" <= char <= "\ud7a3")
    hanja = sum(1 for char in chars if "\u4e00" <= char <= "\u9fff")
    if not hangul or hangul < 4 * hanja:
        return None
    return (_TIER_SCRIPT, hangul / len(chars)) if _share(chars, _is_cjk_text) >= 0.95 else None


def _chinese(chars: list[str]) -> tuple[int, float] | None:
    ideographs = [char for char in chars if "\u4e00" <= char <= "\u9fff"]
    if not ideographs or _share(chars, _is_cjk_text) < 0.95:
        return None
    common = sum(1 for char in ideographs if char in _COMMON_HANZI) / len(ideographs)
    return (_TIER_IDEOGRAPHS, common) if common >= 0.1 else None


def _share(chars: list[str], predicate: Callable[[str], bool]) -> float:
    return sum(1 for char in chars if predicate(char)) / len(chars)


def _is_cjk_text(char: str) -> bool:
    return (
        "\u3000" <= char <= "\u30ff"  # CJK punctuation, kana
        or "\u4e00" <= char <= "\u9fff"  # unified ideographs
        or "\uac00" <= char <= "\ud7a3"  # hangul syllables
        or "\u3130" <= char <= "\u318f"  # hangul jamo
        or "\uff01" <= char <= "\uff5e"  # full-width forms
        or "\u2010" <= char <= "\u266f"  # punctuation, arrows, maths, shapes, circled numbers
        or "\u0391" <= char <= "\u0451"  # Greek and Cyrillic, present in every CJK set
        or char in "\u00a7\u00a8\u00b0\u00b1\u00b4\u00b6\u00d7\u00f7\uffe0\uffe1\uffe2\uffe5"
    )


_FAMILY: Final[dict[str, Callable[[list[str]], tuple[int, float] | None]]] = {
    "shift_jis": _japanese,
    "cp932": _japanese,
    "euc_jp": _japanese,
    "iso2022_jp": _japanese,
    "euc_kr": _korean,
    "cp949": _korean,
    "gbk": _chinese,
    "gb2312": _chinese,
    "gb18030": _chinese,
    "big5": _chinese,
    "big5hkscs": _chinese,
    "cp950": _chinese,
}

# The most frequent characters of written Chinese, simplified and traditional forms:
# the right decoding of real text is rich in them, a wrong one almost never is.
_COMMON_HANZI: Final = frozenset(
    "的一是不了在人有我他这個个们們中来來上大为為和国國地到以说說时時要就出会會可也你对對"
    "生能而子那得于於着著下自之年过過发發后後作里裡用道行所然家种種事成方多经經么麼去法学學"
    "如都同现現当當没沒动動面起看定天分还還进進好小部其些主样樣理心她本前开開但因只从從想实實"
    "日军軍者意无無力它与與长長把机機十民第公此已工使情明性知全三又关關点點正业業外将將两兩高"
    "间間由问問很最重并物手应應战戰向头頭文体體政美相见見被利什二等产產或新己制身果加西斯月话"
    "話合回特代内內信表化老给給世位次度门門任常先海通教儿兒原东東声聲提立及比员員解水名真论論"
)
