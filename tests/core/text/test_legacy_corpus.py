"""Legacy encodings on a corpus of real paragraphs: read right or refused, never misread.

A file in a legacy code page is shown only if the evidence singles out one
reading; otherwise it is refused ``encoding_error`` with the candidates. These
tests hold the detector to that on paragraphs in two dozen languages and the
code pages each is found in, on short pieces of them, and through ``ctx.fs``:
an edit of a detected file keeps every byte outside its span, and a pin (per
call or per path) reads what the detection refused.
"""

from __future__ import annotations

import codecs
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs.core import ABSENT, EncodingError, ErrorCode, Fs, FsError, MemoryBackend
from ctxfs.core.text import TextOptions, detect_encoding
from tests.conftest import examples
from tests.core.text.corpus import CODE_PAGES, PARAGRAPHS, WIDE_ENCODINGS

pytestmark = pytest.mark.anyio

OPTIONS = TextOptions()
CASES = [(language, page) for language, pages in CODE_PAGES.items() for page in pages]


def reading(data: bytes) -> str | EncodingError:
    """The text ctxfs shows for *data*, or the refusal."""
    try:
        encoding = detect_encoding(data, OPTIONS, path="f", complete=True)
    except EncodingError as refusal:
        return refusal
    return data[len(encoding.bom) :].decode(encoding.codec)


def test_the_corpus_is_read_right_or_refused_never_misread() -> None:
    outcomes = read_right_or_refused()
    assert outcomes["right"] >= 0.9 * len(CASES), outcomes


def test_without_the_legacy_extra_more_is_refused_and_nothing_misread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    voted = read_right_or_refused()
    monkeypatch.setitem(sys.modules, "charset_normalizer", None)  # as without ctxfs-core[legacy]
    unvoted = read_right_or_refused()
    assert 0 < unvoted["right"] < voted["right"], (voted, unvoted)


def read_right_or_refused() -> Counter[str]:
    """How many corpus cases read right, and how many are refused; it asserts none is misread."""
    outcomes: Counter[str] = Counter()
    for language, page in CASES:
        text = PARAGRAPHS[language]
        shown = reading(text.encode(page))
        if isinstance(shown, EncodingError):
            outcomes["refused"] += 1
            assert page in shown.details["encodings"] or any(
                text.encode(page).decode(candidate) == text
                for candidate in shown.details["encodings"]
            ), (language, page, shown.details)
        else:
            assert shown == text, (language, page)
            outcomes["right"] += 1
    return outcomes


@pytest.mark.parametrize("page", WIDE_ENCODINGS)
@pytest.mark.parametrize("language", ["russian", "greek", "german", "arabic"])
def test_utf16_and_utf32_without_a_bom_are_read_right(language: str, page: str) -> None:
    text = PARAGRAPHS[language]
    assert reading(text.encode(page)) == text


@settings(max_examples=examples(300), deadline=None)
@given(
    case=st.sampled_from(CASES),
    cut=st.tuples(st.integers(0, 60), st.integers(1, 60)),
    code_around=st.booleans(),
)
def test_pieces_of_paragraphs_are_never_misread(
    case: tuple[str, str], cut: tuple[int, int], code_around: bool
) -> None:
    language, page = case
    words = PARAGRAPHS[language].split()
    start = min(cut[0], len(words) - 1)
    piece = " ".join(words[start : start + cut[1]])
    if code_around:
        piece = f"def main():\n    # {piece}\n    return 0\n"
    data = piece.encode(page)
    shown = reading(data)
    assert isinstance(shown, EncodingError) or shown == piece or data.isascii()


@pytest.mark.parametrize(
    ("text", "page", "rival"),
    [
        ("привет мир", "koi8-r", "cp1251"),
        ("שלום עולם", "cp1255", "cp1253"),
        ("Café crème", "cp1252", "cp1250"),
        ("Český", "cp1250", "cp1252"),
        ("Ελληνικά", "cp1253", "iso8859-5"),
    ],
)
def test_short_ambiguous_samples_are_refused_naming_the_candidates(
    text: str, page: str, rival: str
) -> None:
    shown = reading(text.encode(page))
    assert isinstance(shown, EncodingError)
    assert shown.code is ErrorCode.ENCODING_ERROR
    candidates = shown.details["encodings"]
    assert page in candidates
    assert rival in candidates
    assert all(name in shown.message for name in candidates)
    assert f"read it again naming one of {', '.join(candidates)}" in shown.hint


@pytest.mark.parametrize(
    "text",
    [
        "city = 'Zürich'\nprint('Straße')\ns = 'Ça va'\n",  # (no one alphabet: not cp1252)
        "name = 'José'\nq = '«quoted»'\nu = 'ÀÉÎÕÜ'\n",
        "price = '5 €'\nu = 'ÀÉÎÕÜ'\n",
        "city = 'Zürich'\nprice = '5 €'\nv = 'æøå'\n",
    ],
)
def test_western_text_that_fits_no_alphabet_is_never_shown_as_another_script(text: str) -> None:
    data = text.encode("cp1252")
    encoding = detect_encoding(data, OPTIONS, path="f", complete=True)
    assert encoding.keeps_invalid_bytes or data.decode(encoding.codec) == text, encoding


def test_cjk_read_inside_latin_words_is_no_reading() -> None:
    # Two accented letters, each pairing with the letter after it into a syllable of cp949.
    text = "Acest program citeşte fişierele de configurare"
    for page in ("cp1250", "iso8859-2"):
        shown = reading(text.encode(page))
        assert isinstance(shown, EncodingError) or shown == text


def test_a_japanese_config_is_not_read_as_korean() -> None:
    text = "# 設定\nname = 'テスト'\nvalue = 1\n"
    shown = reading(text.encode("shift_jis"))
    assert isinstance(shown, EncodingError) or shown == text


# -- through ctx.fs ------------------------------------------------------------------------


@pytest.mark.parametrize(("language", "page"), CASES)
async def test_an_edit_keeps_every_byte_outside_its_span(language: str, page: str) -> None:
    backend = MemoryBackend()
    ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
    text = PARAGRAPHS[language]
    data = (text + "\r\n") * 2
    raw = data.encode(page)
    await backend.write("doc.txt", raw, expect=ABSENT)
    middle = len(text) // 2
    old, new = text[middle : middle + 4], text[:4]  # four characters, in any script
    if isinstance(reading(raw), EncodingError):  # refused: nothing is shown, nothing changes
        with pytest.raises(EncodingError):
            await ctx.fs.read("doc.txt")
        with pytest.raises(FsError):
            await ctx.fs.edit("doc.txt", old, new, replace_all=True)
        assert (await backend.read("doc.txt")).data == raw
        return
    await ctx.fs.read("doc.txt")
    await ctx.fs.edit("doc.txt", old, new, replace_all=True)
    written = (await backend.read("doc.txt")).data
    assert written == data.replace(old, new).encode(page)


async def test_a_call_can_pin_the_encoding_the_detection_refused(
    memory_backend: MemoryBackend, memory_fs: Fs
) -> None:
    ctx = memory_fs.context(owner="agent")
    raw = "שלום עולם\n".encode("cp1255")
    await memory_backend.write("he.txt", raw, expect=ABSENT)
    with pytest.raises(EncodingError) as refused:
        await ctx.fs.read("he.txt")
    assert "cp1255" in refused.value.details["encodings"]
    shown = await ctx.fs.read("he.txt", encoding="windows-1255")
    assert shown.text == "שלום עולם\n"
    assert shown.encoding == "cp1255"
    await ctx.fs.edit("he.txt", "עולם", "חבר")
    assert (await memory_backend.read("he.txt")).data == "שלום חבר\n".encode("cp1255")


@pytest.mark.parametrize("named", ["utf-8", "UTF8"])
async def test_damaged_utf8_the_detection_refused_is_edited_as_read_in_utf8(
    memory_backend: MemoryBackend, memory_fs: Fs, named: str
) -> None:
    # (its edits re-detected it, refused it, and hinted at cp1251 or koi8-r)
    ctx = memory_fs.context(owner="agent")
    await memory_backend.write("d.txt", b"ok\n\xff\xfe bad\nz\n", expect=ABSENT)
    with pytest.raises(EncodingError):
        await ctx.fs.read("d.txt")
    assert "bad" in (await ctx.fs.read("d.txt", encoding=named)).text
    await ctx.fs.edit("d.txt", "z\n", "Z\n")
    assert (await memory_backend.read("d.txt")).data == b"ok\n\xff\xfe bad\nZ\n"


async def test_a_pinned_call_cannot_misread_utf8_or_name_an_unknown_codec(
    memory_backend: MemoryBackend, memory_ctx: object
) -> None:
    ctx = Fs(memory_backend, load_entrypoints=False).context(owner="agent")
    await memory_backend.write("u.txt", "Привет\n".encode(), expect=ABSENT)
    assert (await ctx.fs.read("u.txt", encoding="cp1251")).text == "Привет\n"
    with pytest.raises(FsError) as unknown:
        await ctx.fs.read("u.txt", encoding="klingon-8")
    assert unknown.value.code is ErrorCode.INVALID_ARGUMENT
    assert unknown.value.details["field"] == "encoding"


@pytest.mark.parametrize("codec", ["cp037", "cp500", "cp1140"])
async def test_an_ebcdic_file_ends_its_lines_in_its_own_bytes(codec: str) -> None:
    # EBCDIC's line feed is byte 0x25, and byte 0x0A is another character: no line ends there.
    backend = MemoryBackend()
    ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
    await backend.write("e.txt", "HELLO ÄÖ\nSECOND\nTHIRD\n".encode(codec), expect=ABSENT)
    shown = await ctx.fs.read("e.txt", encoding=codec)
    assert (shown.text, shown.total_lines) == ("HELLO ÄÖ\nSECOND\nTHIRD\n", 3)
    assert (await ctx.fs.read("e.txt", encoding=codec, offset=2, limit=1)).text == "SECOND\n"
    await ctx.fs.insert("e.txt", 1, "NEW\n")
    await ctx.fs.edit("e.txt", "THIRD", "3RD")
    data = (await backend.read("e.txt")).data
    assert data == "HELLO ÄÖ\nNEW\nSECOND\n3RD\n".encode(codec)


@pytest.mark.parametrize("codec", ["unicode_escape", "raw_unicode_escape", "punycode", "idna"])
async def test_a_codec_of_escapes_is_no_encoding_to_pin(codec: str) -> None:
    backend = MemoryBackend()
    ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
    await backend.write("u.txt", b"caf\\u00e9\n", expect=ABSENT)
    with pytest.raises(FsError) as refused:
        await ctx.fs.read("u.txt", encoding=codec)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(LookupError):
        TextOptions(encoding_overrides={"*.txt": codec})


async def test_a_path_override_pins_the_encoding_of_matching_files() -> None:
    backend = MemoryBackend()
    options = TextOptions(encoding_overrides={"legacy/**/*.txt": "koi8-r"})
    ctx = Fs(backend, load_entrypoints=False, text_options=options).context(owner="agent")
    raw = "привет мир\n".encode("koi8-r")  # (short: it reads as Russian in cp1251 too)
    await backend.write("legacy/ru/a.txt", raw, expect=ABSENT)
    await backend.write("elsewhere.txt", raw, expect=ABSENT)
    assert (await ctx.fs.read("legacy/ru/a.txt")).text == "привет мир\n"
    await ctx.fs.edit("legacy/ru/a.txt", "мир", "друг")
    assert (await backend.read("legacy/ru/a.txt")).data == "привет друг\n".encode("koi8-r")
    with pytest.raises(EncodingError):
        await ctx.fs.read("elsewhere.txt")


async def test_text_the_encoding_cannot_hold_is_refused_naming_it() -> None:
    backend = MemoryBackend()
    ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
    raw = PARAGRAPHS["russian"].encode("koi8-r")
    await backend.write("ru.txt", raw, expect=ABSENT)
    await ctx.fs.read("ru.txt")
    with pytest.raises(EncodingError) as refused:
        await ctx.fs.edit("ru.txt", "Привет", "Привет, 世界")
    assert "世" in refused.value.message or "世" in str(refused.value.details)
    assert (await backend.read("ru.txt")).data == raw


def test_options_refuse_an_unknown_override() -> None:
    with pytest.raises(LookupError):
        TextOptions(encoding_overrides={"*.txt": "klingon-8"})
    assert codecs.lookup(TextOptions().pinned("latin1").legacy_encodings[0]).name == "iso8859-1"


@pytest.mark.parametrize(
    ("text", "page"),
    [
        (PARAGRAPHS["hebrew"] + " המחיר: 50 ₪.", "cp1255"),
        ("price = 50  # מחיר בשקלים ₪\n", "cp1255"),
        ("La función tarda 5 µs en ejecutarse.", "cp1252"),
        ("// retardo de 10 µs entre lecturas, véase la página 3\n", "latin-1"),
        ("Praça nº 5\n", "cp1252"),
        ("# ฟังก์ชันนี้คืนค่าผลรวม\n", "cp874"),
        ("ยินดีต้อนรับ\n", "cp874"),
        ("設定\n", "euc_jp"),
        ("東京都\n", "euc_jp"),
        ("中文\n", "big5"),
        ("# 說明\n", "big5"),
        ("程序\n", "gbk"),
        ("変数名\n", "shift_jis"),
        ("# 場合\n", "shift_jis"),
        ('msg = "るこ"\n', "cp932"),
        ("Αν\n", "cp1253"),
        ("أن\n", "cp1256"),
        ("wartość\n", "iso8859-2"),
        ("韓國\n", "euc_kr"),
        ("print('Ошибка')\n", "cp1251"),
    ],
)
def test_short_strings_that_once_read_wrong_are_read_right_or_refused(text: str, page: str) -> None:
    shown = reading(text.encode(page))
    assert isinstance(shown, EncodingError) or shown == text, shown
