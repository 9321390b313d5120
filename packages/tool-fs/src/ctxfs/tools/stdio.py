"""MCP over stdio, straight from the pipes to the server's message streams.

The ``mcp`` SDK's stdio transport reads and writes its pipes through worker
threads, one visit per line, and relays each message through a task and a
memory stream on each side; on a small machine those hops cost more than
serving a call. When stdin and stdout are pipes or sockets (as an MCP client
starts a server), :func:`stdio_pipes` gives the server a read stream that parses
each line as it arrives and a write stream that writes each message as it is
sent, on private non-blocking duplicates of the pipes, waiting on the event
loop. Meanwhile fds 0 and 1 point at ``/dev/null`` and stderr, so that stray
reads see EOF and stray prints miss the wire. On a terminal or a file it hands
over to the SDK's transport unchanged. :func:`serve_stdio` runs a server on
them.

On a handshake-era connection, ``serve_stdio`` may answer ``tools/call`` itself
(:mod:`ctxfs.tools.directcalls`), with the SDK's semantics and without its
per-request machinery; everything else goes to the SDK.

When the client closes stdin, the requests it sent before are answered first
(those it cancelled excepted, for 30 seconds at most); only then does the
server see the end, which would cancel them.

A line is at most ``max_message_bytes`` long (4 MiB, as the SDK's limit of an
HTTP body): a longer one is dropped as it arrives, never held. A line that is
too long, is not JSON, or is not a JSON-RPC message gets the error reply the
JSON-RPC spec names (id null), and the server reads on.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import anyio
import pydantic_core
from mcp.server.runner import serve_loop
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)

from ctxfs.tools.directcalls import DirectCalls, ToolCall

if TYPE_CHECKING:
    from mcp.server import Server

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "serve_stdio", "stdio_pipes"]

DEFAULT_MAX_MESSAGE_BYTES: Final = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The longest line a client may send (the SDK's limit of an HTTP request body)."""

_READ_SIZE: Final = 1 << 16
_DRAIN_SECONDS: Final = 30.0
"""How long the requests still running when the input ends may take to be answered."""
_CANCELLED: Final = "notifications/cancelled"


class _Stream:
    """Closing, and use as an async context manager, shared by both directions."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False

    async def aclose(self) -> None:
        """Stop using the descriptor (``stdio_pipes`` closes it)."""
        self.closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


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


class _WireWriter(_Stream):
    """Writes each message as one line; a lock keeps concurrent replies whole."""

    def __init__(self, fd: int, unanswered: _Unanswered) -> None:
        super().__init__(fd)
        self.lock = anyio.Lock(fast_acquire=True)
        self.unanswered = unanswered
        self.direct: DirectCalls | None = None

    async def send(self, message: SessionMessage, /) -> None:
        """Write *message* as one JSON line."""
        if self.closed:
            raise anyio.ClosedResourceError
        reply = message.message
        await self._write(reply)
        if isinstance(reply, JSONRPCResponse | JSONRPCError):
            self.unanswered.discard(reply.id)
            if self.direct is not None:
                self.direct.answered(reply)

    async def refuse(self, error: ErrorData) -> None:
        """Answer a line that is no message the JSON-RPC way: *error*, with id null."""
        await self._write(JSONRPCError(jsonrpc="2.0", id=None, error=error))

    async def _write(self, message: JSONRPCMessage) -> None:
        line = jsonrpc_message_adapter.dump_json(message, by_alias=True, exclude_unset=True)
        data = memoryview(line + b"\n")
        async with self.lock:
            while data:
                try:
                    written = os.write(self.fd, data)
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
                    continue
                data = data[written:]


class _WireReader(_Stream):
    """The client's messages, one JSON-RPC frame per line.

    A line that is too long or is no message is answered with its JSON-RPC
    error through *writer* and skipped. At the end of the input, the end is
    reported only once the requests read so far are answered (or were
    cancelled by the client): the server would cancel them on seeing it.
    """

    def __init__(
        self, fd: int, unanswered: _Unanswered, writer: _WireWriter, *, max_line_bytes: int
    ) -> None:
        super().__init__(fd)
        self.buffer = bytearray()
        self.scanned = 0  # the buffer holds no newline before this
        self.dropping = False  # the rest of an over-long line is dropped as it arrives
        self.eof = False
        self.unanswered = unanswered
        self.writer = writer
        self.max_line_bytes = max_line_bytes
        self.peeked: SessionMessage | None = None
        self.direct: DirectCalls | None = None
        """Takes the calls it answers itself, once set (by ``serve_stdio``)."""

    async def opens_handshake(self) -> bool:
        """Whether the client's first message is ``initialize``; it is still received next."""
        try:
            self.peeked = await self.receive()
        except anyio.EndOfStream:
            return False
        first = self.peeked.message
        return isinstance(first, JSONRPCRequest) and first.method == "initialize"

    async def receive(self) -> SessionMessage:
        """The next message; ``EndOfStream`` once the client closed its end."""
        if self.peeked is not None:
            peeked, self.peeked = self.peeked, None
            return peeked
        while True:
            try:
                line = await self._line()
            except anyio.EndOfStream:
                await self.unanswered.drain()
                if self.direct is not None:
                    await self.direct.stop()
                raise
            message = (
                _parse(line)
                if line is not None
                else ErrorData(
                    code=INVALID_REQUEST,
                    message=f"Invalid Request: the line is longer than {self.max_line_bytes} bytes",
                )
            )
            if message is None:
                continue
            if isinstance(message, ErrorData):
                await self.writer.refuse(message)
                continue
            if isinstance(message, JSONRPCRequest):
                self.unanswered.add(message.id)
            elif isinstance(message, JSONRPCNotification) and message.method == _CANCELLED:
                self.unanswered.discard((message.params or {}).get("requestId"))
            if self.direct is not None and self.direct.received(message):
                continue
            return SessionMessage(message)

    async def _line(self) -> bytes | None:
        """The next line, or None for one longer than the limit (dropped as it arrived).

        Each byte is searched for the newline once.
        """
        while True:
            if self.closed:
                raise anyio.ClosedResourceError
            end = self.buffer.find(b"\n", self.scanned)
            if end >= 0 or (self.eof and (self.buffer or self.dropping)):
                end = end if end >= 0 else len(self.buffer) - 1
                line = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                self.scanned, dropped, self.dropping = 0, self.dropping, False
                return None if dropped or len(line) > self.max_line_bytes + 1 else line
            if self.eof:
                raise anyio.EndOfStream
            self.scanned = len(self.buffer)
            if self.scanned > self.max_line_bytes:
                self.buffer.clear()
                self.scanned, self.dropping = 0, True
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                continue
            self.buffer += chunk
            self.eof = not chunk

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def _parse(line: bytes) -> JSONRPCMessage | ErrorData | None:
    """The message on *line*, the JSON-RPC error that answers it, or None for a blank line.

    Bytes that are not UTF-8 are replaced (U+FFFD), as the SDK's transport does.
    """
    text = line.decode("utf-8", "replace")
    if not text.strip():
        return None
    try:
        return jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        pass
    try:
        pydantic_core.from_json(text)
    except ValueError:
        return ErrorData(code=PARSE_ERROR, message="Parse error: the line is not JSON")
    return ErrorData(
        code=INVALID_REQUEST, message="Invalid Request: the line is not a JSON-RPC message"
    )


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def serve_stdio(
    server: Server[Any],
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    tool_call: ToolCall | None = None,
) -> None:
    """Serve *server* over this process's stdin and stdout until the client closes stdin.

    A client that opens with the ``initialize`` handshake (every client of the
    2025 protocol) is served by the SDK's handshake loop directly: the
    dual-era loop would relay each of its messages through one more task to
    learn what the first one already says. (Unlike the dual-era loop, it does
    not refuse a request that also carries the 2026 envelope on such a
    connection; it serves it as any other.) With *tool_call*, that
    connection's ``tools/call`` requests are answered by it straight from the
    wire (:mod:`ctxfs.tools.directcalls`).
    """
    options = server.create_initialization_options()
    async with stdio_pipes(max_message_bytes=max_message_bytes) as (read, write):
        if isinstance(read, _WireReader) and await read.opens_handshake():
            async with server.lifespan(server) as state, anyio.create_task_group() as calls:
                if tool_call is not None and isinstance(write, _WireWriter):
                    read.direct = write.direct = DirectCalls(tool_call, write.send, server, calls)
                    assert read.peeked is not None
                    read.direct.received(read.peeked.message)  # the initialize request
                await serve_loop(server, read, write, lifespan_state=state, init_options=options)
                calls.cancel_scope.cancel()  # the input ended and what it asked was answered
        else:
            await server.run(read, write, options)


@asynccontextmanager
async def stdio_pipes(
    *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams of an MCP session on this process's stdin and stdout."""
    from mcp.server.stdio import stdio_server  # noqa: PLC0415

    if not (_is_pipe(0) and _is_pipe(1)):
        async with stdio_server() as streams:
            yield streams
        return
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        os.set_blocking(wire_in, False)
        os.set_blocking(wire_out, False)
        unanswered = _Unanswered()
        writer = _WireWriter(wire_out, unanswered)
        reader = _WireReader(wire_in, unanswered, writer, max_line_bytes=max_message_bytes)
        yield reader, writer
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out, wire_in, wire_out):
            os.close(fd)
