"""Legacy encodings, decided by evidence: a file is read in one only if no other fits.

Each candidate (``TextOptions.legacy_encodings``, in order) must decode the
bytes strictly and encode the text back to the same bytes. Then the text must
read like a language written in that encoding:

- no control, private-use or unassigned characters, and no symbols beyond the
  punctuation real text uses (mojibake is rich in ``¤``, ``ƒ``, ``‡``);
- CJK encodings: the checks of their scripts (kana, hangul, common hanzi);
- other encodings: every letter beyond ASCII of the encoding's script (Cyrillic
  for KOI8-R, Greek for cp1253, ...), all of them letters of one language's
  alphabet (a reading mixing ``č`` and ``ŕ`` and ``ę`` is no language), few
  words with a capital after a small letter or (outside Latin) with ASCII
  letters in them, and, given enough Cyrillic text,
  the common letters of those languages common (a KOI8-R file read as cp1251
  has the right letters in the wrong places).

Readings that give the same text are one (the first candidate names it). A
reading of a script (kana, hangul) beats all readings in letters or ideographs.
If readings of different texts remain, ``charset-normalizer`` votes among
them: it may single one out when its mess detector finds the others messier,
or its language model finds one much more coherent, and only given enough
text. Otherwise the file is refused with the readings as candidates: it is
never shown, nor changed, under a guess.

The evidence is gathered from the file's first 64 KiB; the readings that pass
are then checked to round-trip the whole file exactly.
"""

from __future__ import annotations

import codecs
import functools
import importlib
import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

import charset_normalizer

from ctxfs.core.errors import EncodingError

__all__ = ["detect_legacy", "is_single_byte"]

_TIER_SCRIPT, _TIER_IDEOGRAPHS, _TIER_LETTERS = 3, 2, 1
_SAMPLE_BYTES: Final = 1 << 16
"""Leading bytes weighed; the readings that pass are then checked on the whole file."""
_SAMPLE_CHARS: Final = 1 << 16
"""Characters of a reading judged: enough evidence, at a bounded cost."""
_CASE_SAMPLE_CHARS: Final = 1 << 14
_VOTER_MIN_BYTES: Final = 64
"""Bytes beyond ASCII below which charset-normalizer's vote is not asked: too little text."""
_VOTER_CHAOS_MARGIN: Final = 0.01
_VOTER_COHERENCE_MARGIN: Final = 0.3


def detect_legacy(
    data: bytes, candidates: Sequence[str], *, path: str, complete: bool
) -> str | None:
    """The codec (canonical name) *data* is in, among *candidates*; None if none fits.

    *complete* says *data* is the whole file (else its leading bytes).

    Raises:
        EncodingError: Readings of different texts fit; ``details["candidates"]``
            names their codecs.

    """
    if len(candidates) == 1:  # pinned: it wins wherever it round-trips
        fits_exactly = _strict_round_trip(data, candidates[0], complete=complete) is not None
        return codecs.lookup(candidates[0]).name if fits_exactly else None
    head = data[:_SAMPLE_BYTES]
    whole = complete and len(head) == len(data)
    fits: dict[str, tuple[int, float, str]] = {}  # reading -> (tier, score, first codec)
    for codec in candidates:
        text = _strict_round_trip(head, codec, complete=whole)
        if text is None or text in fits:
            continue
        judged = _judge(codec, text)
        if judged is not None and (
            whole or not complete or _strict_round_trip(data, codec, complete=True) is not None
        ):
            fits[text] = (*judged, codecs.lookup(codec).name)
    if not fits:
        return None
    ranked = sorted(fits.values(), key=lambda fit: (-fit[0], -fit[1]))
    if ranked[0][0] == _TIER_SCRIPT:  # kana or hangul: only another such reading rivals it
        ranked = [fit for fit in ranked if fit[0] == _TIER_SCRIPT]
    if len(ranked) == 1:
        return ranked[0][2]
    names = [codec for _, _, codec in ranked]
    chosen = _vote(head, names)
    if chosen is not None:
        return chosen
    raise EncodingError(
        f"{path} reads as different text in {', '.join(names)}; it is left untouched",
        path=path,
        hint="The encoding is ambiguous: read it again naming one of these encodings, "
        "or set TextOptions.legacy_encodings (or encoding_overrides for its path) "
        "to the one this project uses.",
        details={"candidates": names},
    )


def _vote(head: bytes, names: list[str]) -> str | None:
    """The one of *names* ``charset-normalizer`` clearly prefers, given enough text."""
    if sum(1 for byte in head if byte > 0x7F) < _VOTER_MIN_BYTES:
        return None
    matches = {
        codecs.lookup(match.encoding).name: match
        for match in charset_normalizer.from_bytes(head, cp_isolation=names)
    }
    ranked = sorted(matches.items(), key=lambda item: (item[1].chaos, -item[1].coherence))
    if not ranked:
        return None
    best, match = ranked[0]
    for _, rival in ranked[1:]:
        clearer = rival.chaos - match.chaos >= _VOTER_CHAOS_MARGIN or (
            rival.chaos == match.chaos
            and match.coherence - rival.coherence >= _VOTER_COHERENCE_MARGIN
        )
        if not clearer:
            return None
    return best


@functools.cache
def is_single_byte(codec: str) -> bool:
    """Whether *codec* maps each byte to one character (a charmap codec, or Latin-1)."""
    name = codecs.lookup(codec).name
    if name in ("latin-1", "iso8859-1"):
        return True
    try:
        module = importlib.import_module(f"encodings.{name.replace('-', '_')}")
    except ImportError:
        return False
    return getattr(module, "decoding_table", None) is not None


def _strict_round_trip(data: bytes, codec: str, *, complete: bool) -> str | None:
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        text = decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return None
    if complete and text.encode(codec) != data:
        return None
    return text


def _judge(codec: str, text: str) -> tuple[int, float] | None:
    """(tier, score) if *text* reads like a language *codec* is for, else None."""
    sample = text[:_SAMPLE_CHARS]
    counts = {char: n for char, n in Counter(sample).items() if char > "\x7f"}
    if not counts or any(unicodedata.category(char) in ("Cc", "Co", "Cn") for char in counts):
        return None
    name = codecs.lookup(codec).name
    family = _CJK.get(name)
    if family is not None:
        chars = [char for char in sample if char > "\x7f"]
        return None if _inside_latin_words(sample) else family(chars)
    letters = {char: n for char, n in counts.items() if char.isalpha()}
    others = [char for char in counts if char not in letters]
    if any(unicodedata.category(char) != "Mn" and char not in _PUNCTUATION for char in others):
        return None
    script = _SCRIPT.get(name, "LATIN")
    if any(not unicodedata.name(char, "").startswith(script) for char in letters):
        return None
    if (letters and not _one_language(script, letters)) or _odd_words(
        sample[:_CASE_SAMPLE_CHARS], script
    ):
        return None
    return _TIER_LETTERS, sum(letters.values()) / sum(counts.values())


def _one_language(script: str, letters: dict[str, int]) -> bool:
    """Whether *letters* (beyond ASCII) are all of one language's alphabet, and used like it."""
    alphabets = _ALPHABETS.get(script)
    if alphabets is None:  # Greek, Hebrew, Arabic, Thai: the script is the evidence
        return True
    folded = {_fold(char) for char in letters} - {"i"}  # İ folds to an ASCII letter
    if not any(folded <= alphabet for alphabet in alphabets):
        return False
    if script == "CYRILLIC" and (total := sum(letters.values())) >= _ENOUGH_CYRILLIC:
        common = sum(n for char, n in letters.items() if _fold(char) in _COMMON_CYRILLIC)
        return common / total >= _COMMON_CYRILLIC_SHARE
    return True


_WORD: Final = re.compile(r"[^\W\d_][^\s\d_]*")
"""A letter and what follows up to a space or digit (``pr№ft`` is one word); trimmed of
what trails its last letter or mark."""
_WITHIN_WORDS: Final = frozenset("'’ʼ·־׳״-–\u00ad\u200c\u200d")  # noqa: RUF001
"""Characters that join the letters of real words: apostrophes, hyphens, the middle dot."""


def _odd_words(text: str, script: str) -> bool:
    """Whether words with letters beyond ASCII often (or all) read like no word.

    Such a word has a capital right after a small letter; a symbol between two
    of its letters (``pr№ft``); a mark of another script on an ASCII letter
    (a Thai or Arabic vowel sign on ``v``); or, outside the Latin script,
    letters of two scripts (``Cafщ``): a Latin word misread.
    """
    words = odd = 0
    pairs = itertools.pairwise
    for match in _WORD.finditer(text):
        word = _trimmed(match.group())
        if word.isascii():
            continue
        words += 1
        odd += (
            any(a.islower() and b.isupper() for a, b in pairs(word))
            or any(
                not char.isalpha() and char not in _WITHIN_WORDS and not _is_mark(char)
                for char in word
            )
            or any(a.isascii() and _is_mark(b) and not _is_latin_mark(b) for a, b in pairs(word))
            or (script != "LATIN" and any(char.isascii() and char.isalpha() for char in word))
        )
    return odd == words > 0 or (odd >= 2 and odd * 10 > words)


def _trimmed(word: str) -> str:
    end = len(word)
    while end and not (word[end - 1].isalpha() or _is_mark(word[end - 1])):
        end -= 1
    return word[:end]


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def _is_latin_mark(char: str) -> bool:
    """Combining diacritics (decomposed text, cp1258's tones), not another script's signs."""
    return "\u0300" <= char <= "\u036f"


_EMBEDDED: Final = re.compile(r"(?<=[A-Za-z])[^\x00-\x7f]{1,2}(?=[A-Za-z])")
_NON_ASCII_RUN: Final = re.compile(r"[^\x00-\x7f]+")


def _inside_latin_words(text: str) -> bool:
    """Whether most runs of characters beyond ASCII sit inside ASCII words.

    A Latin text with a few accented letters, read in a double-byte encoding,
    pairs each accented letter with the letter after it: one or two ideographs
    or syllables in the middle of ``warto?ci``. Text in those scripts has its
    own words.
    """
    runs = sum(1 for _ in _NON_ASCII_RUN.finditer(text))
    return sum(1 for _ in _EMBEDDED.finditer(text)) * 2 >= runs


def _fold(char: str) -> str:
    return "i" if char == "İ" else char.lower()


_SCRIPT: Final = {
    codecs.lookup(codec).name: script
    for script, names in {
        "CYRILLIC": ("cp1251", "koi8-r", "koi8-u", "cp866", "iso8859-5", "mac-cyrillic"),
        "GREEK": ("cp1253", "iso8859-7"),
        "HEBREW": ("cp1255", "iso8859-8"),
        "ARABIC": ("cp1256", "iso8859-6"),
        "THAI": ("cp874", "tis-620", "iso8859-11"),
    }.items()
    for codec in names
}

_PUNCTUATION: Final = frozenset(
    "\u00a0«»“”‘’„–—…•€£¥¢°§©®™±×÷¡¿·¶µ½¼¾¹²³‰†‡‹›№،؛؟־׳״΄΅฿"  # noqa: RUF001
)
"""Characters beyond ASCII, not letters, that real text of these languages uses."""

_LATIN_ALPHABETS: Final = tuple(
    frozenset(letters)
    for letters in (
        "àâæçéèêëîïôœùûüÿ",  # French
        "äöüßéàè",  # German (and French loans)
        "áéíñóúü",  # Spanish
        "àçéèíïòóúüŀ",  # Catalan
        "áâãàçéêíóôõúü",  # Portuguese
        "àèéìíîòóùú",  # Italian
        "áéíóúëïöüèàç",  # Dutch, Afrikaans
        "æøåéóàô",  # Danish, Norwegian
        "åäöéü",  # Swedish, Finnish, Estonian without its own
        "áðéíóúýþæö",  # Icelandic
        "æøåáðíóúýö",  # Faroese
        "ąćęłńóśźż",  # Polish
        "áčďéěíňóřšťúůýž",  # Czech
        "áäčďéíĺľňóôŕšťúýž",  # Slovak
        "čćđšž",  # Croatian, Bosnian, Serbian in Latin, Slovenian
        "áéíóöőúüű",  # Hungarian
        "ăâîșțşţ",  # Romanian
        "çğıöşüâîû",  # Turkish
        "çë",  # Albanian
        "ąčęėįšųūž",  # Lithuanian
        "āčēģīķļņšūž",  # Latvian
        "äöõüšž",  # Estonian
        "âăđêôơưàáảãạèéẻẽẹìíỉĩịòóỏõọùúủũụỳýỷỹỵ",  # Vietnamese (precomposed forms)
        "ċġħżàèìòù",  # Maltese
        "âêîôûŵŷäëïöüáéíóúàèìòù",  # Welsh
    )
)

_CYRILLIC_ALPHABETS: Final = tuple(
    frozenset(letters)
    for letters in (
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",  # Russian
        "абвгґдеєжзиіїйклмнопрстуфхцчшщьюя",  # Ukrainian
        "абвгдеёжзійклмнопрстуўфхцчшыьэюя",  # Belarusian
        "абвгдежзийклмнопрстуфхцчшщъьюя",  # Bulgarian
        "абвгдђежзијклљмнњопрстћуфхцчџш",  # Serbian
        "абвгдѓежзѕијклљмнњопрстќуфхцчџш",  # Macedonian
    )
)
_ALPHABETS: Final = {"LATIN": _LATIN_ALPHABETS, "CYRILLIC": _CYRILLIC_ALPHABETS}
_COMMON_CYRILLIC: Final = frozenset("оеаиінтсрвл")
"""The most frequent letters of Russian, Ukrainian, Belarusian and Bulgarian text."""
_COMMON_CYRILLIC_SHARE: Final = 0.4
"""Real text has about 0.6 of its Cyrillic letters among them; a misread code page about 0.25."""
_ENOUGH_CYRILLIC: Final = 20


# -- CJK ------------------------------------------------------------------------------


def _japanese(chars: list[str]) -> tuple[int, float] | None:
    kana = sum(1 for char in chars if "\u3041" <= char <= "\u30ff")
    if not kana or any("\uff61" <= char <= "\uff9f" for char in chars):
        return None
    return (_TIER_SCRIPT, kana / len(chars)) if _share(chars, _is_cjk_text) >= 0.95 else None


def _korean(chars: list[str]) -> tuple[int, float] | None:
    syllables = [char for char in chars if "\uac00" <= char <= "\ud7a3"]
    hanja = sum(1 for char in chars if "\u4e00" <= char <= "\u9fff")
    if not syllables or len(syllables) < 4 * hanja:
        return None
    if _share(syllables, _is_common_hangul) < 0.9:  # cp949's extra syllables are rare ones
        return None
    hangul = len(syllables)
    return (_TIER_SCRIPT, hangul / len(chars)) if _share(chars, _is_cjk_text) >= 0.95 else None


def _chinese(chars: list[str]) -> tuple[int, float] | None:
    ideographs = [char for char in chars if "\u4e00" <= char <= "\u9fff"]
    if not ideographs or _share(chars, _is_cjk_text) < 0.95:
        return None
    common = sum(1 for char in ideographs if char in _COMMON_HANZI) / len(ideographs)
    return (_TIER_IDEOGRAPHS, common) if common >= 0.1 else None


def _is_common_hangul(char: str) -> bool:
    """Whether *char* is one of the 2,350 syllables of KS X 1001, those text uses."""
    try:
        return len(char.encode("euc_kr")) == 2  # (the others as 8-byte make-up sequences)
    except UnicodeEncodeError:
        return False


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


_CJK: Final[dict[str, Callable[[list[str]], tuple[int, float] | None]]] = {
    codecs.lookup(codec).name: judge
    for judge, names in {
        _japanese: ("shift_jis", "cp932", "euc_jp", "iso2022_jp"),
        _korean: ("euc_kr", "cp949"),
        _chinese: ("gbk", "gb2312", "gb18030", "big5", "big5hkscs", "cp950"),
    }.items()
    for codec in names
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
