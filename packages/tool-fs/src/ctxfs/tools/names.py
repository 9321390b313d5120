r"""File names that are not UTF-8, across the model boundary.

A local file name may hold bytes that are not UTF-8; Python carries each as a lone surrogate
(``os.fsdecode``), which no JSON encoder or UTF-8 wire accepts. Results show each such byte as
``\xNN`` (the text says so), structured data adds the raw bytes of each escaped name in base64
(``raw_names``), and a path argument may spell those bytes ``\xNN`` again (only ``\x80``-``\xff``,
which can stand for no separator, dot or control character).
"""

from __future__ import annotations

import base64
import re
from typing import Any, Final

from ctxfs.core import has_lone_surrogates

__all__ = ["ESCAPED_NAMES", "escaped", "escaped_data", "unescaped_path"]

ESCAPED_NAMES: Final = (
    "(bytes of names that are not UTF-8 are shown as \\xNN, and may be given so in paths)"
)
"""The line a text with escaped names ends with."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_ESCAPE: Final = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")
_NAME_FIELDS: Final = frozenset({"path", "name", "target", "paths"})


def escaped(text: str) -> str:
    r"""*text* with each byte that was not UTF-8 (a lone surrogate) shown as ``\xNN``."""
    if not has_lone_surrogates(text):
        return text
    return _SURROGATE.sub(_escape, text)


def escaped_data(data: dict[str, Any]) -> dict[str, Any]:
    """Plain JSON data with every string escaped, and the raw bytes of the names that were."""
    raw: dict[str, str] = {}

    def walk(value: Any, field: str | None) -> Any:
        if isinstance(value, str):
            shown = escaped(value)
            if shown is not value and field in _NAME_FIELDS:
                raw[shown] = base64.b64encode(_raw(value)).decode("ascii")
            return shown
        if isinstance(value, dict):
            return {key: walk(item, key) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, field) for item in value]
        return value

    plain: dict[str, Any] = walk(data, None)
    if raw:
        plain["raw_names"] = raw
    return plain


def unescaped_path(path: str) -> str:
    r"""*path* with each ``\xNN`` (``80``-``ff``) turned back into the byte it shows.

    The bytes are decoded as a file name is (UTF-8, the rest escaped), so bytes that spell a
    character become that character: one name, one spelling.
    """
    if "\\x" not in path:
        return path
    raw, at = bytearray(), 0
    try:
        for found in _ESCAPE.finditer(path):
            raw += path[at : found.start()].encode("utf-8", "surrogateescape")
            raw.append(int(found.group(1), 16))
            at = found.end()
        raw += path[at:].encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no name decodes to: the path check refuses it
        return path
    return raw.decode("utf-8", "surrogateescape")


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _raw(name: str) -> bytes:
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        return name.encode("utf-8", "surrogatepass")
