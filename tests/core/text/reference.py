"""Helpers for the text-semantics tests: reference implementations written the obvious way."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from ctxfs.core.backend import ReadStream

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def reference_lines(text: str) -> list[tuple[str, bool]]:
    """Split text into (content, terminated) pairs on \\r\\n, \\r and \\n only."""
    lines, position = [], 0
    for match in LINE_BREAK.finditer(text):
        lines.append((text[position : match.start()], True))
        position = match.end()
    if position < len(text):
        lines.append((text[position:], False))
    return lines


def stream_of(data: bytes, chunk_size: int) -> ReadStream:
    """A stream that hands out *data* in chunks of *chunk_size* bytes."""

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(data), chunk_size):
            yield data[start : start + chunk_size]

    return ReadStream(chunks())
