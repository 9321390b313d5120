from __future__ import annotations

import codecs

import pytest

from ctxfs.core import BinaryFile, EncodingError
from ctxfs.core.text import TextOptions, decode_document, detect_encoding
from ctxfs.core.text.encodings import KnownEncodings, TextEncoding

OPTIONS = TextOptions()

SAMPLES = {
    "cp1252": "Café crème, naïveté — “quoted” … 5 € and œuvre.\r\n",
    "shift_jis": "これは日本語のテキストです。漢字とカタカナも含みます。\n",
    "euc_jp": "これは日本語のテキストです。漢字とカタカナも含みます。\n",
    "gbk": "这是中文文本，我们在这里测试编码的检测，以及中国人的生活。\n",
    "big5": "這是繁體中文的文本，我們在這裡測試編碼的檢測，以及國家的發展。\n",
    "euc_kr": "한국어 텍스트입니다. 인코딩을 확인하고 저장합니다.\n",
}


@pytest.mark.parametrize(("codec", "text"), SAMPLES.items())
def test_legacy_encodings_are_detected_and_round_trip(codec: str, text: str) -> None:
    data = text.encode(codec)
    encoding = detect_encoding(data, OPTIONS, path="f", complete=True)
    assert encoding.codec == codecs.lookup(codec).name
    document = decode_document(data, OPTIONS, path="f")
    assert document.raw_text == text
    assert document.rewrite(text).data == data


@pytest.mark.parametrize(
    ("data", "codec", "bom"),
    [
        (codecs.BOM_UTF8 + "héllo\n".encode(), "utf-8", codecs.BOM_UTF8),
        ("héllo\n".encode("utf-16"), "utf-16-le", codecs.BOM_UTF16_LE),
        (codecs.BOM_UTF16_BE + "héllo\n".encode("utf-16-be"), "utf-16-be", codecs.BOM_UTF16_BE),
        ("héllo\n".encode("utf-32"), "utf-32-le", codecs.BOM_UTF32_LE),
        (b"plain ascii\n", "utf-8", b""),
        ("ünïcödé\n".encode(), "utf-8", b""),
    ],
)
def test_boms_and_utf8(data: bytes, codec: str, bom: bytes) -> None:
    encoding = detect_encoding(data, OPTIONS, path="f", complete=True)
    assert (encoding.codec, encoding.bom) == (codec, bom)
    document = decode_document(data, OPTIONS, path="f")
    assert document.rewrite(data[len(bom) :].decode(codec)).data == data


def test_a_utf16_le_bom_followed_by_nul_is_not_mistaken_for_utf32() -> None:
    data = "\x00ab".encode("utf-16-le")
    encoding = detect_encoding(codecs.BOM_UTF16_LE + data, OPTIONS, path="f", complete=True)
    assert encoding.codec == "utf-16-le"


def test_invalid_bytes_among_valid_utf8_are_kept() -> None:
    data = "naïve café\nbroken: ".encode() + b"\xff\xfe\n"
    encoding = detect_encoding(data, OPTIONS, path="f", complete=True)
    assert encoding.codec == "utf-8"
    assert encoding.keeps_invalid_bytes
    assert encoding.label == "utf-8 with invalid bytes kept"


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"text then a NUL \x00 here",
        bytes(range(1, 9)) * 200,
        bytes([1, 0, 2, 0, 3, 0, 7, 0]) * 100,  # NULs where UTF-16 has them, but no text
    ],
)
def test_binary_is_detected_from_content(data: bytes) -> None:
    with pytest.raises(BinaryFile):
        detect_encoding(data, OPTIONS, path="f.txt", complete=True)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_without_a_bom_are_told_by_their_nuls(codec: str) -> None:
    text = "plain words, and a few more: naïve, Ωmega\r\n" * 3
    data = text.encode(codec)
    assert detect_encoding(data, OPTIONS, path="f", complete=True).codec == codec
    document = decode_document(data, OPTIONS, path="f")
    assert document.raw_text == text
    assert document.replace("naïve", "naive", replace_all=True).data == data.replace(
        "naïve".encode(codec), "naive".encode(codec)
    )


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize(
    "text",
    [
        "Καλημέρα 👍 κόσμε\n" * 5,  # (an emoji: surrogates)
        "こんにちは（せかい）！げんきですか？\n",  # (kana, fullwidth forms)
        "ﬁnal ﬂow ﬁle Привет\n",  # (ligatures)
        "«Привет» — “мир” за 5 €\n",
    ],
)
def test_an_alphabet_in_utf16_without_a_bom_is_told_with_its_symbols(text: str, codec: str) -> None:
    assert detect_encoding(text.encode(codec), OPTIONS, path="f", complete=True).codec == codec


@pytest.mark.parametrize("data", [b"abc\x00def\n", b"ab\x00cd\x00ef\x00\n\x00"])
def test_utf8_with_nuls_where_utf16_would_put_them_is_binary_not_ideographs(data: bytes) -> None:
    # As UTF-16-LE these are ideographs and a digit of another script (no alphabet's bytes).
    with pytest.raises(BinaryFile):
        detect_encoding(data, OPTIONS, path="f.txt", complete=True)


def test_a_text_file_named_like_binary_is_text() -> None:
    document = decode_document(b"key=value\nother=1\n", OPTIONS, path="data.dat")
    assert document.encoding.codec == "utf-8"


def test_a_few_control_characters_do_not_make_binary() -> None:
    data = b"\x1b[31mred\x1b[0m log line\n" * 20
    assert detect_encoding(data, OPTIONS, path="f", complete=True).codec == "utf-8"


def test_undecidable_text_is_refused() -> None:
    data = bytes(range(0x80, 0x100)) * 3
    with pytest.raises(EncodingError) as caught:
        detect_encoding(data, OPTIONS, path="f", complete=True)
    assert "not UTF-8" in str(caught.value)
    assert caught.value.details["tried"] == list(OPTIONS.legacy_encodings)


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("<p>Наша компания предлагает лучшие товары.</p>\n<b>Москва</b>, улица <i>Ленина</i>\n", "cp1251"),
        ("title=Ошибка\nmessage=Файл не найден\nbutton.ok=Готово\nbutton.cancel=Отмена\nlabel.name=Имя пользователя\n", "cp1251"),
        ("Температура воздуха сегодня составит +25°С, а ночью около +15°С.\n", "cp1251"),
        ("[Allgemein]\nTitel=Übersicht\nFehler=Datei ungültig\nSchließen=Schließen\n", "cp1252"),
        ("<p>مرحبا بالعالم</p>\n<p>شكرا جزيلا</p>\n<b>القاهرة</b>\n", "cp1256"),
    ],
)  # fmt: skip
def test_markup_and_settings_in_a_legacy_encoding_are_read(text: str, codec: str) -> None:
    # ASCII symbols touch letters in markup (">Москва<", "=Ошибка"): text, not strays
    assert detect_encoding(text.encode(codec), OPTIONS, path="f", complete=True).codec == codec


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("Съешь же ещё этих мягких французских булок, да выпей чаю.\n", "koi8-r"),  # not Arabic
        ("مرحبا بالعالم. هذا نص تجريبي باللغة العربية لاختبار الترميز.\n", "iso8859-6"),  # not Thai
    ],
)
def test_text_in_no_encoding_tried_is_refused_not_misread(text: str, codec: str) -> None:
    with pytest.raises(EncodingError) as caught:
        detect_encoding(text.encode(codec), OPTIONS, path="f", complete=True)
    assert "reads it surely as text" in caught.value.message
    assert "naming it (encoding)" in caught.value.hint


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_a_wide_encoding_named_with_its_byte_order_reads_text_without_a_bom(codec: str) -> None:
    data = "日本語のテキストです。\nもう一行。\n".encode(codec)  # too few NULs to tell alone
    with pytest.raises(BinaryFile) as caught:
        detect_encoding(data, OPTIONS, path="f", complete=True)
    assert "utf-16-le" in caught.value.hint
    named = detect_encoding(data, OPTIONS.pinned(codec), path="f", complete=True)
    assert named == TextEncoding(codec=codec)


def test_no_legacy_encodings_means_refusal() -> None:
    data = SAMPLES["cp1252"].encode("cp1252")
    with pytest.raises(EncodingError):
        detect_encoding(data, TextOptions(legacy_encodings=()), path="f", complete=True)


def test_a_pinned_encoding_wins() -> None:
    data = SAMPLES["big5"].encode("big5")
    options = TextOptions(legacy_encodings=("big5",))
    assert detect_encoding(data, options, path="f", complete=True).codec == "big5"


def test_options_are_validated() -> None:
    with pytest.raises(LookupError):
        TextOptions(legacy_encodings=("no-such-codec",))
    for bytes_codec in ("hex", "rot13", "undefined"):  # codecs, but of no text
        with pytest.raises(LookupError):
            TextOptions(encoding_overrides={"*.x": bytes_codec})
    with pytest.raises(ValueError, match="max_output_chars"):
        TextOptions(max_line_chars=5000, max_output_chars=1000)


def test_known_encodings_are_bounded_and_can_be_forgotten() -> None:
    known = KnownEncodings(capacity=2)
    for version in ("v1", "v2", "v3"):
        known.remember(version, TextEncoding(codec="cp1252"))
    assert known.get("v1") is None  # the oldest went beyond capacity
    assert known.get("v3") == TextEncoding(codec="cp1252")
    known.clear()
    assert known.get("v2") is None
    assert known.get("v3") is None


def test_options_name_encodings_where_they_differ_from_the_defaults() -> None:
    assert not TextOptions().names_encodings
    assert TextOptions(encoding_overrides={"*.txt": "cp1252"}).names_encodings
    assert TextOptions(legacy_encodings=("cp500",)).names_encodings
    assert TextOptions(legacy_encodings=()).names_encodings  # (text that is not UTF-8 refused)
