"""Names with bytes that are not UTF-8 cross the model boundary escaped, and come back."""

from __future__ import annotations

import base64

import pytest

from ctxfs.tools.names import escaped, escaped_data, unescaped_path
from ctxfs.tools.results import escape


@pytest.mark.parametrize(
    ("name", "shown"),
    [("bad\udcff.txt", "bad\\xff.txt"), ("dir\udcfe/x", "dir\\xfe/x"), ("plain.txt", "plain.txt")],
)
def test_a_name_is_shown_escaped_and_given_back_the_same(name: str, shown: str) -> None:
    assert escaped(name) == shown
    assert unescaped_path(shown) == name


def test_escapes_that_spell_a_character_give_that_character() -> None:
    assert unescaped_path("cl\\xc3\\xa9.txt") == "clé.txt"
    assert unescaped_path("\\x41.txt") == "\\x41.txt"  # below 0x80: never a byte escape


def test_structured_data_carries_the_raw_bytes_of_each_escaped_name() -> None:
    data = escaped_data({"paths": ["bad\udcff.txt", "ok.txt"], "text": "a\udcffb"})
    assert data["paths"] == ["bad\\xff.txt", "ok.txt"]
    assert data["text"] == "a\\xffb"
    assert {name: base64.b64decode(raw) for name, raw in data["raw_names"].items()} == {
        "bad\\xff.txt": b"bad\xff.txt"
    }


def test_a_c1_control_character_is_not_shown_as_a_byte() -> None:
    # A real U+0085 in a name and a raw 0x85 byte must not look alike.
    assert escape("a\x85b") == "a\\u0085b"
    assert escaped("a\udc85b") == "a\\x85b"
