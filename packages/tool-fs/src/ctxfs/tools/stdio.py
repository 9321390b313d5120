"""MCP over stdio: the ``mcp`` SDK's transport, fed lines within bounds.

:func:`serve_stdio` runs a server on the SDK's ``stdio_server`` and ``Server.run``, and adds:

- a line longer than ``max_message_bytes`` (4 MiB, the SDK's limit of an HTTP body) is
  dropped as it arrives, never held whole;
- a line that is too long, not JSON, or not a JSON-RPC message (an id neither a string nor an
  integer included, which the SDK would take for a notification's) gets the JSON-RPC error
  reply (id null), and the server reads on; blank lines are skipped;
- when the client closes stdin, the requests it sent before (and did not cancel) are
  answered first, for 30 seconds at most.

Over pipes and sockets (as MCP clients spawn servers) lines are read and written on the asyncio
loop, with no worker thread per line; a terminal, a file or one socket for both ends is served in
worker threads, as by the SDK.
While it serves, fd 0 reads ``/dev/null`` and fd 1 writes to stderr, so stray reads see EOF and
stray prints miss the wire.
"""

from __future__ import annotations

import asyncio
import fcntl
import io
import json
import os
import re
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final, Self, TextIO

import anyio
import sniffio
from anyio.abc import AsyncResource
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from pydantic import ValidationError

from ctxfs.tools.messages import BAD_ID, has_bad_id, request_id

if TYPE_CHECKING:
    from mcp.server import Server

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "serve_stdio"]

DEFAULT_MAX_MESSAGE_BYTES: Final = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The longest line a client may send (the SDK's limit of an HTTP request body)."""

_TOO_LONG: Final = "\x00 the line is too long, its id: "
"""What a line longer than the limit is read as (then its id, as JSON): no JSON, told apart
by :func:`_refusal`."""
_ID_BYTES: Final = 4096
"""The first bytes of a line too long to read that are looked at for its id."""
_LEADING_ID: Final = re.compile(rb'"id"\s*:\s*("(?:[^"\\\n]|\\.)*"|-?\d+(?=\s*[,}]))')
"""A message's id, where it comes before its params (as clients write it)."""
_BAD_ID: Final = "\x00 the id is neither a string nor an integer\n"
"""What a message whose id is neither a string nor an integer is read as (:func:`_refusal`)."""
_DRAIN_SECONDS: Final = 30.0
"""How long the requests still running when the input ends may take to be answered."""


async def serve_stdio(
    server: Server[Any], *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> None:
    """Serve *server* over this process's stdin and stdout until the client closes stdin."""
    with _wire_in() as fd_in, _wire_out() as fd_out:
        async with (
            _wire(fd_in, fd_out, max_message_bytes) as (lines, out),
            stdio_server(stdin=lines, stdout=out) as (read, write),
        ):
            unanswered = _Unanswered()
            replies = _Replies(write, unanswered)
            requests = _Requests(read, replies, unanswered, max_line_bytes=max_message_bytes)
            await server.run(requests, replies, server.create_initialization_options())


@contextmanager
def _wire_in() -> Iterator[int]:
    """A private descriptor of stdin; fd 0 reads ``/dev/null`` meanwhile."""
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        yield wire
    finally:
        os.dup2(wire, 0)
        os.close(null)
        os.close(wire)


@contextmanager
def _wire_out() -> Iterator[int]:
    """A private descriptor of stdout; fd 1 writes to stderr meanwhile."""
    _flush(sys.stdout)
    wire = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(2, 1)
        yield wire
    finally:
        _flush(sys.stdout)
        os.dup2(wire, 1)
        os.close(wire)


def _flush(stream: TextIO | None) -> None:
    if stream is not None:
        stream.flush()


@asynccontextmanager
async def _wire(fd_in: int, fd_out: int, limit: int) -> AsyncIterator[tuple[Any, Any]]:
    """The lines of *fd_in* and the writer of *fd_out* the SDK's transport is given.

    Pipes and sockets (as clients spawn servers) are read and written on the asyncio loop; a
    terminal, a file, one socket for both, or another loop, in worker threads (one per line, as
    the SDK does).
    """
    ends = [os.fstat(fd) for fd in (fd_in, fd_out)]
    piped = all(stat.S_ISFIFO(end.st_mode) or stat.S_ISSOCK(end.st_mode) for end in ends)
    one = (ends[0].st_dev, ends[0].st_ino) == (ends[1].st_dev, ends[1].st_ino)
    if not piped or one or sniffio.current_async_library() != "asyncio":
        yield anyio.wrap_file(_BoundedLines(fd_in, limit)), anyio.wrap_file(_Lines(fd_out))
        return
    loop = asyncio.get_running_loop()
    source, sink = io.FileIO(fd_in, "rb", closefd=False), io.FileIO(fd_out, "wb", closefd=False)
    blocking = [os.get_blocking(fd) for fd in (fd_in, fd_out)]
    reader = asyncio.StreamReader(limit=limit)
    async with AsyncExitStack() as transports:
        reading, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), source
        )
        transports.callback(os.set_blocking, fd_in, blocking[0])
        transports.callback(reading.close)
        writing, flow = await loop.connect_write_pipe(_Flow, sink)
        transports.callback(os.set_blocking, fd_out, blocking[1])
        transports.callback(_abort, writing)  # (what a cancelled write left is not sent later)
        writing.set_write_buffer_limits(high=0)  # a write waits until the pipe took it all
        yield _PipeLines(reader), _PipeOut(writing, flow)


def _abort(transport: asyncio.WriteTransport) -> None:
    if not transport.is_closing():  # (a pipe its reader closed is closed already)
        transport.abort()


def _text(line: bytes) -> str:
    """A line read as text (invalid UTF-8 replaced, as by the SDK's reader), or a mark."""
    text = line.decode("utf-8", "replace")
    try:
        bad_id = has_bad_id(json.loads(text))
    except (ValueError, RecursionError):
        bad_id = False
    return _BAD_ID if bad_id else text


class _PipeLines:
    """The lines of a pipe read on the loop, as :class:`_BoundedLines` reads them."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            try:
                line = await self.reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:  # the last line, unended
                line = end.partial
            except asyncio.LimitOverrunError as overrun:
                head = await self.reader.readexactly(min(overrun.consumed, _ID_BYTES))
                ended = await self._skipped(overrun.consumed - len(head))
                yield _too_long(_leading_id(head))
                if ended:
                    continue
                return
            if not line:
                return
            if line.strip():
                yield _text(line)

    async def _skipped(self, held: int) -> bool:
        """Drop a line too long to hold, as it arrives; False if the input ends within it.

        *held*: the bytes of it the reader holds (dropped first).
        """
        while True:
            await self.reader.readexactly(held)
            try:
                await self.reader.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                return False
            except asyncio.LimitOverrunError as overrun:
                held = overrun.consumed
            else:
                return True


class _Flow(asyncio.Protocol):
    """A pipe's writing side: paused while the pipe is full; its end, when the reader left."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.lost: BaseException | None = None

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = exc or BrokenPipeError("the client closed its end of stdout")
        self.writable.set()


class _PipeOut:
    """Writes to a pipe on the loop: each waits until the pipe took it (nothing to flush)."""

    def __init__(self, transport: asyncio.WriteTransport, flow: _Flow) -> None:
        self.transport, self.flow = transport, flow

    async def write(self, text: str) -> None:
        if self.flow.lost is not None:
            raise self.flow.lost
        self.transport.write(text.encode())
        await self.flow.writable.wait()

    async def flush(self) -> None:
        """Nothing: what is written goes out as the pipe takes it."""


class _Lines(io.TextIOWrapper):
    """Text written to descriptor *fd*, each write flushed (a worker thread's)."""

    def __init__(self, fd: int) -> None:
        super().__init__(io.FileIO(fd, "wb", closefd=False), encoding="utf-8", write_through=True)


class _BoundedLines(io.TextIOWrapper):
    """The lines of descriptor *fd*, read by :meth:`readline` only (no other read method).

    A line longer than *limit* bytes (its newline aside) is read as :func:`_too_long`; bytes that
    are not UTF-8 are replaced (U+FFFD), as by the SDK's own reader.
    """

    def __init__(self, fd: int, limit: int) -> None:
        self.source = io.BufferedReader(io.FileIO(fd, "rb", closefd=False))
        super().__init__(self.source, encoding="utf-8", errors="replace")
        self.limit = limit

    def readline(self, size: int = -1, /) -> str:  # type: ignore[override]  # as typeshed's own
        """The next line that is not blank (*size* is ignored); ``""`` at the end of the input."""
        del size
        while True:
            line = self.source.readline(self.limit + 1)
            if len(line) > self.limit and not line.endswith(b"\n"):
                request = _leading_id(line)
                while line and not line.endswith(b"\n"):  # the rest of it, as it arrives
                    line = self.source.readline(1 << 16)
                return _too_long(request)
            if not line or line.strip():
                return _text(line)


class _Unanswered:
    """Ids of the client's requests that no reply has answered yet."""

    def __init__(self) -> None:
        self._ids: set[object] = set()
        self._answered = anyio.Event()

    def add(self, request_id: RequestId) -> None:
        self._ids.add(request_id)

    def discard(self, request_id: object) -> None:
        self._ids.discard(request_id)
        if not self._ids:
            self._answered.set()

    async def drain(self) -> None:
        """Wait until every request is answered, for ``_DRAIN_SECONDS`` at most."""
        with anyio.move_on_after(_DRAIN_SECONDS):
            while self._ids:
                self._answered = anyio.Event()
                await self._answered.wait()


class _Stream(AsyncResource):
    """Closing, and use as an async context manager, of a wrapped stream."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream  # the SDK's stdio transport's, which it does not type

    async def aclose(self) -> None:
        await self.stream.aclose()


class _Replies(_Stream):
    """The server's messages to the client; each reply answers its request."""

    def __init__(self, stream: Any, unanswered: _Unanswered) -> None:
        super().__init__(stream)
        self.unanswered = unanswered

    async def send(self, message: SessionMessage, /) -> None:
        await self.stream.send(message)
        if isinstance(message.message, JSONRPCResponse | JSONRPCError):
            self.unanswered.discard(message.message.id)


class _Requests(_Stream):
    """The client's messages; a line that is no message is answered here and skipped."""

    def __init__(
        self, stream: Any, replies: _Replies, unanswered: _Unanswered, *, max_line_bytes: int
    ) -> None:
        super().__init__(stream)
        self.replies = replies
        self.unanswered = unanswered
        self.max_line_bytes = max_line_bytes

    async def receive(self) -> SessionMessage:
        """The next message; ``EndOfStream`` once the client closed its end."""
        while True:
            try:
                item: SessionMessage | Exception = await self.stream.receive()
            except anyio.EndOfStream:
                await self.unanswered.drain()
                raise
            if isinstance(item, Exception):
                error, request = _refusal(item, self.max_line_bytes)
                await self.replies.send(
                    SessionMessage(JSONRPCError(jsonrpc="2.0", id=request, error=error))
                )
                continue
            message = item.message
            if isinstance(message, JSONRPCRequest):
                self.unanswered.add(message.id)
            elif (
                isinstance(message, JSONRPCNotification)
                and message.method == "notifications/cancelled"
            ):
                cancelled = request_id((message.params or {}).get("requestId"))
                if cancelled is not None:
                    self.unanswered.discard(cancelled)
            return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def _refusal(error: Exception, max_line_bytes: int) -> tuple[ErrorData, str | int | None]:
    """The JSON-RPC error answering a line the SDK could not read as a message (*error*).

    And the id of the request it answers, where the line tells it (else None).
    """
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        line = first["input"] if isinstance(first["input"], str) else ""
        if line.startswith(_TOO_LONG):
            message = f"Invalid Request: the line is longer than {max_line_bytes} bytes"
            request = json.loads(line.removeprefix(_TOO_LONG))
            return ErrorData(code=INVALID_REQUEST, message=message), request
        if line == _BAD_ID:
            return BAD_ID, None
        if first["type"] == "json_invalid":
            request = _leading_id(line.encode())
            try:
                parsed = json.loads(line)
            except (ValueError, RecursionError):
                return ErrorData(
                    code=PARSE_ERROR, message="Parse error: the line is not JSON"
                ), request
            found = request_id(parsed.get("id")) if isinstance(parsed, dict) else None
            request = request if found is None else found
            message = (  # (JSON that Python's reader takes, the SDK's not: a lone surrogate)
                "Parse error: the line's JSON nests too deeply to read"
                if "recursion limit" in first["msg"]
                else f"Parse error: {first['msg'].removeprefix('Invalid JSON: ')}"
            )
            return ErrorData(code=PARSE_ERROR, message=message), request
    message = "Invalid Request: the line is not a JSON-RPC message"
    return ErrorData(code=INVALID_REQUEST, message=message), None


def _too_long(request: str | int | None) -> str:
    """What a line too long to read is read as: :data:`_TOO_LONG`, then its *request*'s id."""
    return f"{_TOO_LONG}{json.dumps(request)}\n"


def _leading_id(head: bytes) -> str | int | None:
    """The id a message's first bytes give before its params (its request's), if any."""
    head = head[:_ID_BYTES]
    found = _LEADING_ID.search(head)
    params = head.find(b'"params"')
    if found is None or -1 < params < found.start():
        return None
    try:
        return request_id(json.loads(found.group(1)))
    except ValueError:
        return None
