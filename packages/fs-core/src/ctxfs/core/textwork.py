"""Decoding and changing a file's text, on the event loop or in a worker thread by size."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeVar

import anyio.to_thread

from ctxfs.core.text import AnyDocument, Change, decode_document

if TYPE_CHECKING:
    from ctxfs.core.backend import Blob
    from ctxfs.core.context import Context

__all__ = ["TEXT_WORK_INLINE_BYTES", "decoded", "rewritten", "text_work", "utf8_size"]

T = TypeVar("T")

TEXT_WORK_INLINE_BYTES: Final = 32 << 10
"""Files up to this size are decoded and changed on the event loop; larger ones in a
worker thread, so that other tasks keep running meanwhile."""


async def text_work(size: int, work: Callable[[], T], *, costly: bool = False) -> T:
    """Run *work* on a file of *size* bytes: inline, or in a worker thread if large or *costly*."""
    if size <= TEXT_WORK_INLINE_BYTES and not costly:
        return work()
    return await anyio.to_thread.run_sync(work)


async def utf8_size(text: str) -> int:
    """The size of *text* in UTF-8 (a lone surrogate as one byte), never encoded whole."""

    def measure() -> int:
        if text.isascii():
            return len(text)
        step = 1 << 20
        return sum(
            len(text[at : at + step].encode("utf-8", "replace")) for at in range(0, len(text), step)
        )

    return await text_work(len(text), measure)


def decoded(ctx: Context, path: str, blob: Blob) -> AnyDocument:
    """Decode a whole file in the encoding its owner named reading it, else as detected."""
    known_encodings = ctx.opened_fs.known_encodings
    pinned = known_encodings.pinned(ctx.owner, path, blob.version)
    known = pinned or known_encodings.get(blob.version)
    options = ctx.opened_fs.text_options.for_path(path)
    document = decode_document(blob.data, options, path=path, encoding=known)
    if pinned is None:
        known_encodings.remember(blob.version, document.encoding)
    return document


async def rewritten(
    ctx: Context, path: str, current: Blob | None, content: str, *, size: int
) -> tuple[AnyDocument, Change]:
    """The file a write read (*current*; None: a new one) decoded, and its change to *content*.

    *size* is the size of *content* in UTF-8.
    """

    def rewrite() -> tuple[AnyDocument, Change]:
        document = (
            decoded(ctx, path, current)
            if current is not None
            else decode_document(b"", ctx.opened_fs.text_options, path=path)
        )
        return document, document.rewrite(content)

    return await text_work(size + (current.size if current is not None else 0), rewrite)
