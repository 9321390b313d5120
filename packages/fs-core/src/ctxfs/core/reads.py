"""Reads: a text window or bytes, recording the observation; lines, recording none."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack, aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from ctxfs.core.backend import Location
from ctxfs.core.backend.authorized import authorizing
from ctxfs.core.errors import InvalidArgument
from ctxfs.core.outcomes import BytesOutcome, Operation, OpKind, ReadOutcome
from ctxfs.core.reports import reported
from ctxfs.core.text import TextEncoding, TextOptions, iter_lines, read_window
from ctxfs.core.text.window import Window
from ctxfs.core.versions import Absent

if TYPE_CHECKING:
    from ctxfs.core.backend import ReadStream
    from ctxfs.core.context import Context

__all__ = ["JUDGED_WHOLE_BYTES", "numbered_lines", "read_bytes", "read_text", "saw"]

JUDGED_WHOLE_BYTES: Final = 64 << 20
"""The largest file whose encoding a read judges whole where its start misled (held meanwhile)."""


async def read_text(
    ctx: Context, path: str, *, offset: int, limit: int | None, encoding: str | None
) -> ReadOutcome:
    """:meth:`ContextFs.read <ctxfs.core.ContextFs.read>`."""
    opened_fs = ctx.opened_fs
    async with reported(ctx, OpKind.READ, path, file=True) as report:
        op = report.op
        await opened_fs.hooks.authorize(ctx, op)
        options = opened_fs.text_options.for_path(op.path)
        if encoding is not None:
            options = _pinned(options, encoding)
        memory = opened_fs.session_memory

        async def windowed(
            options: TextOptions, judged: TextEncoding | None = None
        ) -> tuple[ReadStream, Window]:
            async with opened_fs.backend.open_read(
                op.path, chunk_size=options.chunk_size
            ) as stream:
                if memory is not None and (stream.size or 0) <= memory.max_read_bytes:
                    stream.record(memory.max_read_bytes)
                window = await read_window(
                    stream,
                    offset=offset,
                    limit=limit,
                    options=options,
                    path=op.path,
                    known=opened_fs.known_encodings if encoding is None else None,
                    decoded_as=judged,
                )
            return stream, window

        stream, window = await windowed(options)
        if window.misread and encoding is not None:  # ASCII at the start: the one named
            stream, window = await windowed(
                options, TextEncoding(codec=options.legacy_encodings[0])
            )
        elif window.misread:  # a byte past the start is not in the encoding chosen there
            stream, window = await _judged_whole(ctx, options, windowed, stream, window)
        report.after = stream.version
        chosen = window.decoded_as or TextEncoding(codec=window.encoding)
        named = encoding is not None and chosen.codec == options.legacy_encodings[0]
        opened_fs.known_encodings.pin(  # what the owner's edits of this version decode with
            ctx.owner, op.path, stream.version, chosen if named else None
        )
        await opened_fs.hooks.observed(
            ctx,
            op,
            stream.version,
            complete=window.complete,
            lines=window.seen_lines,
            total_lines=window.total_lines,
        )
        if memory is not None and window.complete and stream.recorded is not None:
            await memory.keep(ctx.owner, stream.version, stream.recorded, path=op.path, again=False)
    return ReadOutcome(
        path=op.path,
        text=window.text,
        version=stream.version,
        offset=window.offset,
        returned_lines=window.returned_lines,
        total_lines=window.total_lines,
        next_offset=window.next_offset,
        partial=not window.complete,
        truncated_lines=window.truncated_lines,
        output_capped=window.output_capped,
        encoding=window.encoding,
    )


async def read_bytes(
    ctx: Context, path: str, *, offset: int, length: int | None, observe: bool
) -> BytesOutcome:
    """:meth:`ContextFs.read_bytes <ctxfs.core.ContextFs.read_bytes>`."""
    opened_fs = ctx.opened_fs
    if offset < 0 or (length is not None and length < 0):
        raise InvalidArgument(
            f"offset and length must not be negative ({offset}, {length})",
            details={"field": "offset" if offset < 0 else "length"},
        )
    async with reported(ctx, OpKind.READ, path, file=True) as report:
        op = report.op
        await opened_fs.hooks.authorize(ctx, op)
        blob = await opened_fs.backend.read(
            op.path,
            start=offset,
            end=None if length is None else offset + length,
            max_size=opened_fs.text_options.max_edit_bytes if length is None else None,
        )
        report.after = blob.version
        outcome = BytesOutcome(
            path=op.path,
            data=blob.data,
            version=blob.version,
            offset=offset,
            size=blob.size,
            complete=offset == 0 and blob.whole,
        )
        if observe:
            await _observed(ctx, op, outcome, whole=outcome.complete)
    return outcome


async def saw(ctx: Context, outcome: BytesOutcome, *, whole: bool) -> None:
    """:meth:`Context.saw <ctxfs.core.Context.saw>`."""
    where = await ctx.opened_fs.backend.locate(outcome.path)
    op = Operation(kind=OpKind.READ, path=outcome.path, resolved=where.resolved, key=where.key)
    await _observed(ctx, op, outcome, whole=whole and outcome.complete)


async def _observed(ctx: Context, op: Operation, outcome: BytesOutcome, *, whole: bool) -> None:
    """Record that the owner saw *outcome* (all of the file, if *whole*) of *op*'s file."""
    opened_fs = ctx.opened_fs
    await opened_fs.hooks.observed(ctx, op, outcome.version, complete=whole)
    if whole and opened_fs.session_memory is not None:
        memory = opened_fs.session_memory
        await memory.keep(ctx.owner, outcome.version, outcome.data, path=op.path, again=False)


async def numbered_lines(
    ctx: Context, path: str, max_line_chars: int | Absent | None
) -> AsyncGenerator[tuple[int, str]]:
    """:meth:`ContextFs.lines <ctxfs.core.ContextFs.lines>`."""
    opened_fs = ctx.opened_fs
    async with (
        reported(ctx, OpKind.READ, path, file=True, judged_in_block=False) as report,
        AsyncExitStack() as stack,
    ):
        op = report.op
        await opened_fs.hooks.authorize(ctx, op)
        options = opened_fs.text_options.for_path(op.path)
        cap = options.max_line_chars if isinstance(max_line_chars, Absent) else max_line_chars
        with authorizing(
            opened_fs.backend, {op.path: Location(resolved=op.resolved, key=op.key)}
        ):  # (opening)
            stream = await stack.enter_async_context(
                opened_fs.backend.open_read(op.path, chunk_size=options.chunk_size)
            )
        numbered = iter_lines(stream, options=options, path=op.path, max_line_chars=cap)
        async with aclosing(numbered):
            async for item in numbered:
                yield item


async def _judged_whole(
    ctx: Context,
    options: TextOptions,
    windowed: Callable[[TextOptions, TextEncoding | None], Awaitable[tuple[ReadStream, Window]]],
    stream: ReadStream,
    window: Window,
) -> tuple[ReadStream, Window]:
    """The window again, its file's encoding judged whole (once per version), as edits do."""
    known = ctx.opened_fs.known_encodings
    judged = known.get(stream.version)
    if judged is not None and not judged.told_by_bytes:
        return await windowed(options, judged)
    if stream.size is None or stream.size > JUDGED_WHOLE_BYTES:  # (unknown: read it all again?)
        return stream, window
    whole = max(stream.size, options.detect_bytes)
    stream, window = await windowed(replace(options, detect_bytes=whole), None)
    if window.decoded_as is not None and not window.misread:
        known.remember(stream.version, window.decoded_as)
    return stream, window


def _pinned(options: TextOptions, encoding: str) -> TextOptions:
    try:
        return options.pinned(encoding)
    except LookupError:
        raise InvalidArgument(
            f"{encoding!r} is no text encoding Python knows",
            hint="Name a codec such as cp1251, koi8-r, cp1255 or shift_jis.",
            details={"field": "encoding"},
        ) from None
