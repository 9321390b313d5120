"""Legacy encodings, decided by evidence: a file is read in one only if no other fits.

A candidate must round-trip the bytes strictly and read like a language written
in it (its script's letters, of one alphabet, used as real text uses them; for
CJK, kana, hangul or common hanzi). Readings of the same text are one; a kana or
hangul reading beats letters and ideographs. Where readings of different texts
remain, Cyrillic letter frequency or ``charset-normalizer`` may single one out;
otherwise the file is refused, never shown under a guess. Evidence comes from
64 KiB from the line of the first byte beyond ASCII; survivors must round-trip
the whole file.
"""

from __future__ import annotations

import codecs
import functools
import importlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Final, NamedTuple

from ctxfs.core.errors import EncodingError

__all__ = ["detect_legacy", "is_single_byte", "strict_round_trip"]

_TIER_SCRIPT, _TIER_IDEOGRAPHS, _TIER_LETTERS = 3, 2, 1
_SAMPLE_BYTES: Final = 1 << 16
"""Leading bytes weighed; the readings that pass are then checked on the whole file."""
_SAMPLE_CHARS: Final = 1 << 16
"""Characters of a reading judged: enough evidence, at a bounded cost."""
_CASE_SAMPLE_CHARS: Final = 1 << 12
_QUICK_CHARS: Final = 1 << 11
_NON_ASCII_BYTE: Final = re.compile(rb"[\x80-\xff]")
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
        EncodingError: Readings of different texts fit; ``details["encodings"]``
            names their codecs.

    """
    if len(candidates) == 1:  # pinned: it wins wherever it round-trips
        fits_exactly = strict_round_trip(data, candidates[0], complete=complete) is not None
        return codecs.lookup(candidates[0]).name if fits_exactly else None
    first = _NON_ASCII_BYTE.search(data)
    start = 0 if first is None else data.rfind(b"\n", 0, first.start()) + 1
    head = data[start : start + _SAMPLE_BYTES]  # from the line of the first byte beyond ASCII
    whole = complete and len(head) == len(data)
    fits: dict[str, _Fit] = {}  # reading -> how it fits, named by its first codec
    for codec in candidates:
        text = strict_round_trip(head, codec, complete=whole)
        if text is None or text in fits:
            continue
        judged = _judge(codec, text)
        if judged is not None and (
            whole or not complete or strict_round_trip(data, codec, complete=True) is not None
        ):
            fits[text] = judged._replace(codec=codecs.lookup(codec).name)
    if not fits:
        return None
    ranked = sorted(fits.values(), key=lambda fit: (-fit.tier, -fit.score))
    if ranked[0].tier == _TIER_SCRIPT:  # kana or hangul: only another such reading rivals it
        ranked = [fit for fit in ranked if fit.tier == _TIER_SCRIPT]
    if len(ranked) == 1:
        return ranked[0].codec
    names = [fit.codec for fit in ranked]
    chosen = _by_letter_frequency(ranked) or _vote(head, names)
    if chosen is not None:
        return chosen
    raise EncodingError(
        f"{path} reads as different text in {', '.join(names)}; it is left untouched",
        path=path,
        hint=f"The encoding is ambiguous: read it again naming one of {', '.join(names)} "
        "as its encoding; or set TextOptions.encoding_overrides (for its path) or "
        "legacy_encodings to the one this project uses.",
        details={"encodings": names},
    )


class _Fit(NamedTuple):
    tier: int
    score: float
    codec: str = ""
    frequency: float | None = None
    """Mean log-probability of the letters in a Cyrillic language, given enough of them."""


def _by_letter_frequency(fits: list[_Fit]) -> str | None:
    """The Cyrillic reading whose letters are far likelier than every other's, if any."""
    if any(fit.frequency is None for fit in fits):
        return None
    best, *rivals = sorted(fits, key=lambda fit: -(fit.frequency or 0.0))
    margin = min((best.frequency or 0.0) - (rival.frequency or 0.0) for rival in rivals)
    return best.codec if margin >= _FREQUENCY_MARGIN else None


def _vote(head: bytes, names: list[str]) -> str | None:
    """The one of *names* ``charset-normalizer`` clearly prefers, given enough text.

    None when it prefers none, or is not installed (``ctxfs-core[legacy]``).
    """
    if sum(1 for byte in head if byte > 0x7F) < _VOTER_MIN_BYTES:
        return None
    try:
        import charset_normalizer  # noqa: PLC0415 - loaded by the first file that needs a vote
    except ImportError:  # the legacy extra is not installed: no vote
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
def ends_lines_in_ascii(codec: str) -> bool:
    r"""Whether *codec* spells ``\r`` and ``\n`` as those ASCII bytes, both ways (EBCDIC: no)."""
    try:
        return "\r\n".encode(codec) == b"\r\n" and b"\r\n".decode(codec) == "\r\n"
    except UnicodeError:
        return False


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


def strict_round_trip(data: bytes, codec: str, *, complete: bool) -> str | None:
    """*data* decoded in *codec*, if it decodes (*complete*: the whole file, encoding back)."""
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        text = decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return None
    if complete and text.encode(codec) != data:
        return None
    return text


def _judge(codec: str, text: str) -> _Fit | None:
    """How *text* fits, if it reads like a language *codec* is for; else None."""
    name = codecs.lookup(codec).name
    if not _possible(name, text[:_QUICK_CHARS]):  # most misreadings show in the first lines
        return None
    sample = text[:_SAMPLE_CHARS]
    if sample.isascii() or not _possible(name, sample):
        return None
    family = _CJK.get(name)
    if family is not None:
        chars = [char for char in sample if char > "\x7f"]
        return None if _inside_latin_words(sample) else family(chars)
    script = _SCRIPT.get(name, "LATIN")
    distinct_letters = {
        char
        for char in set(sample)
        if char > "\x7f" and char.isalpha() and char not in _PUNCTUATION
    }
    counts = Counter(sample)
    letters = {char: counts[char] for char in distinct_letters}
    total = sum(letters.values())
    cyrillic = script == "CYRILLIC" and total >= _ENOUGH_CYRILLIC
    if cyrillic:  # its commonest letters must be as common as in real text
        common = sum(n for char, n in letters.items() if _fold(char) in _COMMON_CYRILLIC)
        if common / total < _COMMON_CYRILLIC_SHARE:
            return None
    if _odd_words(sample[:_CASE_SAMPLE_CHARS], script):
        return None
    return _Fit(
        tier=_TIER_LETTERS,
        score=total / sum(counts.values()),
        frequency=_cyrillic_frequency(letters, total) if cyrillic else None,
    )


def _cyrillic_frequency(letters: dict[str, int], total: int) -> float:
    """The mean log-frequency of *letters* (counted) in Cyrillic text."""
    known, rare = _CYRILLIC_LOG_FREQUENCY, _RARE_LOG_FREQUENCY
    return sum(n * known.get(_fold(char), rare) for char, n in letters.items()) / total


def _one_alphabet(script: str, letters: set[str]) -> bool:
    """Whether *letters* (beyond ASCII) all belong to one language's alphabet."""
    alphabets = _ALPHABETS.get(script)
    if alphabets is None:  # Greek, Hebrew, Arabic, Thai: the script is the evidence
        return True
    folded = {_fold(char) for char in letters} - {"i"}  # İ folds to an ASCII letter
    return any(folded <= alphabet for alphabet in alphabets)


def _possible(name: str, text: str) -> bool:
    """Whether *text* holds only characters a language of codec *name* could use.

    Beyond ASCII: no control, private-use or unassigned characters; for an
    alphabet, only its letters (of one language), real punctuation and marks.
    """
    beyond_ascii = {char for char in set(text) if char > "\x7f"}
    if any(unicodedata.category(char) in ("Cc", "Co", "Cn") for char in beyond_ascii):
        return False
    if not beyond_ascii or name in _CJK:
        return True
    letters = {char for char in beyond_ascii if char.isalpha() and char not in _PUNCTUATION}
    script = _SCRIPT.get(name, "LATIN")
    return not (
        any(
            unicodedata.category(char) != "Mn" and char not in _PUNCTUATION
            for char in beyond_ascii - letters
        )
        or any(not unicodedata.name(char, "").startswith(script) for char in letters)
        or (letters and not _one_alphabet(script, letters))
    )


_WORD: Final = re.compile(r"[^\W\d_][^\s\d_!-&(-,./:-@\[-^`{-~]*")
"""A letter and what follows up to a space, a digit or ASCII punctuation but ``'`` and ``-``
(``pr№ft`` is one word, ``print('Ошибка')`` three); trimmed of what trails its last letter
or mark."""
_WITHIN_WORDS: Final = frozenset("'’ʼ·־׳״-–\u00ad\u200c\u200d")  # noqa: RUF001
"""Characters that join the letters of real words: apostrophes, hyphens, the middle dot."""


def _odd_words(text: str, script: str) -> bool:
    """Whether words with letters beyond ASCII often (or all) read like no word.

    Such a word has a capital after a small letter, a symbol between letters
    (``pr№ft``), another script's mark on an ASCII letter, or, outside Latin,
    letters of two scripts (``Cafщ``); and stray characters count too (:func:`_stray`).
    """
    words = odd = 0
    for match in _WORD.finditer(text):
        word = _trimmed(match.group())
        if word.isascii():
            continue
        words += 1
        odd += _odd_word(word, script)
    odd += sum(1 for pair in pairwise(f" {text} ") if _stray(*pair))
    return odd == words > 0 or (odd > 0 and odd * 10 > words)


def _stray(before: str, char: str) -> bool:
    """Whether *char* after *before* reads like no text.

    So do a mark or a kashida no letter carries, a kashida no letter follows (it joins
    letters), a symbol beyond ASCII touching a letter beyond ASCII, and, in Thai, a vowel
    sign or a leading vowel without its consonant.
    """
    if before == _KASHIDA and not (char.isalpha() or _is_mark(char) or char == _KASHIDA):
        return True
    if _THAI_LEADING_VOWEL <= before <= _THAI_LEADING_VOWEL_END:
        return not _THAI_CONSONANT <= char <= _THAI_CONSONANT_END
    if _is_mark(char) or char == _KASHIDA:
        if _THAI_MARK <= char <= _THAI_MARK_END:
            return not (_THAI_CONSONANT <= before <= _THAI_CONSONANT_END or _is_mark(before))
        return not (before.isalpha() or _is_mark(before) or before == _KASHIDA)
    return (_odd_symbol(before) and char > "\x7f" and char.isalpha()) or (
        _odd_symbol(char) and before > "\x7f" and before.isalpha()
    )


def _odd_symbol(char: str) -> bool:
    """A symbol beyond ASCII that text keeps apart from letters (``<``, ``=`` and ``°`` join)."""
    return char > "\x7f" and char != "°" and unicodedata.category(char)[0] == "S"


_KASHIDA: Final = "\u0640"
_THAI_CONSONANT, _THAI_CONSONANT_END = "\u0e01", "\u0e2e"
_THAI_LEADING_VOWEL, _THAI_LEADING_VOWEL_END = "\u0e40", "\u0e44"
_THAI_MARK, _THAI_MARK_END = "\u0e31", "\u0e4e"


def _odd_word(word: str, script: str) -> bool:
    tail = word[1:]
    return (
        (not tail.islower() and any(a.islower() and b.isupper() for a, b in pairwise(word)))
        or (
            not word.isalpha()
            and (
                any(
                    not char.isalpha() and char not in _WITHIN_WORDS and not _is_mark(char)
                    for char in word
                )
                or any(
                    a.isascii() and _is_mark(b) and not _is_latin_mark(b) for a, b in pairwise(word)
                )
            )
        )
        or (script != "LATIN" and _ASCII_LETTER.search(word) is not None)
    )


_ASCII_LETTER: Final = re.compile("[A-Za-z]")


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
    """Whether most runs beyond ASCII sit inside ASCII words (Latin misread as double-byte)."""
    runs = sum(1 for _ in _NON_ASCII_RUN.finditer(text))
    return sum(1 for _ in _EMBEDDED.finditer(text)) * 2 >= runs


def _fold(char: str) -> str:
    return "i" if char == "İ" else char.lower()


# Keyed by the codecs' canonical names, written out: looking them up would load every codec.
_SCRIPT: Final = {
    codec: script
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
    "\u00a0«»“”‘’„–—…•€£¥¢°§©®™±×÷¡¿·¶µ½¼¾¹²³‰†‡‹›№،؛؟־׳״΄΅฿₪₫₴₽ºª"  # noqa: RUF001
)
"""Characters beyond ASCII, not letters of a script, that real text of these languages uses
(with the micro sign and the ordinal indicators, letters of no script)."""

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
_FREQUENCY_MARGIN: Final = 0.3
"""Nats per letter by which a Cyrillic reading must beat its rivals (real text: 0.5 or more)."""
_CYRILLIC_LETTERS: Final = "оеаинтсрвлкмдпуяыьгзбчйхжшюцщэфъёіїєґўјљњћђџѓќѕ"
_CYRILLIC_SHARES: Final = (  # per cent: Russian's, then the other alphabets' own letters
    10.97, 8.45, 8.01, 7.35, 6.70, 6.26, 5.47, 4.73, 4.54, 4.40, 3.49, 3.21, 2.98, 2.81,
    2.62, 2.01, 1.90, 1.74, 1.70, 1.65, 1.59, 1.44, 1.21, 0.97, 0.94, 0.73, 0.64, 0.48,
    0.36, 0.32, 0.26, 0.2, 0.1, 4.0, 0.6, 0.4, 0.05, 0.5, 1.5, 0.5, 0.5, 0.5, 0.2,
    0.1, 0.1, 0.1, 0.05,
)  # fmt: skip
_CYRILLIC_LOG_FREQUENCY: Final = {
    letter: math.log(share / 100)
    for letter, share in zip(_CYRILLIC_LETTERS, _CYRILLIC_SHARES, strict=True)
}
_RARE_LOG_FREQUENCY: Final = math.log(0.01 / 100)


# -- CJK ------------------------------------------------------------------------------


def _japanese(chars: list[str]) -> _Fit | None:
    kana = sum(1 for char in chars if "\u3041" <= char <= "\u30ff")
    if any("\uff61" <= char <= "\uff9f" for char in chars):  # half-width katakana: no text
        return None
    if not kana and len(chars) >= _ENOUGH_CJK:  # Japanese text of any length has kana
        return None
    return _script_fit(kana, chars)


def _korean(chars: list[str]) -> _Fit | None:
    syllables = [char for char in chars if "\uac00" <= char <= "\ud7a3"]
    hanja = sum(1 for char in chars if "\u4e00" <= char <= "\u9fff")
    if len(chars) >= _ENOUGH_CJK and len(syllables) < 4 * hanja:
        return None
    if syllables and _share(syllables, _is_common_hangul) < 0.9:  # cp949's extras are rare
        return None
    return _script_fit(len(syllables), chars)


def _script_fit(in_script: int, chars: list[str]) -> _Fit | None:
    """Kana or hangul: a reading that beats the others, given enough of them; else a rival."""
    if _share(chars, _is_cjk_text) < 0.95:
        return None
    tier = _TIER_SCRIPT if in_script >= _ENOUGH_CJK else _TIER_IDEOGRAPHS
    return _Fit(tier=tier, score=in_script / len(chars))


def _chinese(chars: list[str]) -> _Fit | None:
    ideographs = [char for char in chars if "\u4e00" <= char <= "\u9fff"]
    if not ideographs or _share(chars, _is_cjk_text) < 0.95:
        return None
    common = sum(1 for char in ideographs if char in _COMMON_HANZI) / len(ideographs)
    if common < 0.1:  # (a few rare ones are what bytes of Latin letters read as, too)
        return None
    return _Fit(tier=_TIER_IDEOGRAPHS, score=common)


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


_CJK: Final[dict[str, Callable[[list[str]], _Fit | None]]] = {
    codec: judge
    for judge, names in {
        _japanese: ("shift_jis", "cp932", "euc_jp", "iso2022_jp"),
        _korean: ("euc_kr", "cp949"),
        _chinese: ("gbk", "gb2312", "gb18030", "big5", "big5hkscs", "cp950"),
    }.items()
    for codec in names
}

_ENOUGH_CJK: Final = 8
"""Kana, hangul or ideographs below which a reading proves nothing: it is only a rival."""
_COMMON_HANZI: Final = frozenset(  # the commonest characters, simplified and traditional
    "的一是不了在人有我他这個个们們中来來上大为為和国國地到以说說时時要就出会會可也你对對"
    "生能而子那得于於着著下自之年过過发發后後作里裡用道行所然家种種事成方多经經么麼去法学學"
    "如都同现現当當没沒动動面起看定天分还還进進好小部其些主样樣理心她本前开開但因只从從想实實"
    "日军軍者意无無力它与與长長把机機十民第公此已工使情明性知全三又关關点點正业業外将將两兩高"
    "间間由问問很最重并物手应應战戰向头頭文体體政美相见見被利什二等产產或新己制身果加西斯月话"
    "話合回特代内內信表化老给給世位次度门門任常先海通教儿兒原东東声聲提立及比员員解水名真论論"
)
