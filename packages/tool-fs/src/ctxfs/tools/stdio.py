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

When the client closes stdin, the requests it sent before are answered first
(those it cancelled excepted, for 30 seconds at most); only then does the
server see the end, which would cancel them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import anyio
from mcp.server.runner import serve_loop
from mcp.shared.message import SessionMessage
from mcp.types import (
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)

if TYPE_CHECKING:
    from mcp.server import Server

__all__ = ["serve_stdio", "stdio_pipes"]

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


class _WireReader(_Stream):
    """The client's messages, one JSON-RPC frame per line.

    A line that does not parse arrives as its exception, as from the SDK's
    transport: the server logs it and reads on. At the end of the input, the
    end is reported only once the requests read so far are answered (or were
    cancelled by the client): the server would cancel them on seeing it.
    """

    def __init__(self, fd: int, unanswered: _Unanswered) -> None:
        super().__init__(fd)
        self.buffer = bytearray()
        self.eof = False
        self.unanswered = unanswered
        self.peeked: SessionMessage | Exception | None = None

    async def opens_handshake(self) -> bool:
        """Whether the client's first message is ``initialize``; it is still received next."""
        try:
            self.peeked = await self.receive()
        except anyio.EndOfStream:
            return False
        first = getattr(self.peeked, "message", None)
        return isinstance(first, JSONRPCRequest) and first.method == "initialize"

    async def receive(self) -> SessionMessage | Exception:
        """The next message; ``EndOfStream`` once the client closed its end."""
        if self.peeked is not None:
            peeked, self.peeked = self.peeked, None
            return peeked
        try:
            line = await self._line()
        except anyio.EndOfStream:
            await self.unanswered.drain()
            raise
        try:
            message = jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            return exc
        if isinstance(message, JSONRPCRequest):
            self.unanswered.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == _CANCELLED:
            self.unanswered.discard((message.params or {}).get("requestId"))
        return SessionMessage(message)

    async def _line(self) -> str:
        while True:
            if self.closed:
                raise anyio.ClosedResourceError
            end = self.buffer.find(b"\n")
            if end >= 0 or (self.eof and self.buffer):
                end = end if end >= 0 else len(self.buffer) - 1
                line = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                return line.decode("utf-8", "replace")
            if self.eof:
                raise anyio.EndOfStream
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                continue
            self.buffer += chunk
            self.eof = not chunk

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _WireWriter(_Stream):
    """Writes each message as one line; a lock keeps concurrent replies whole."""

    def __init__(self, fd: int, unanswered: _Unanswered) -> None:
        super().__init__(fd)
        self.lock = anyio.Lock(fast_acquire=True)
        self.unanswered = unanswered

    async def send(self, message: SessionMessage, /) -> None:
        """Write *message* as one JSON line."""
        if self.closed:
            raise anyio.ClosedResourceError
        reply = message.message
        text = reply.model_dump_json(by_alias=True, exclude_unset=True)
        data = memoryview((text + "\n").encode("utf-8"))
        async with self.lock:
            while data:
                try:
                    written = os.write(self.fd, data)
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
                    continue
                data = data[written:]
        if isinstance(reply, JSONRPCResponse | JSONRPCError):
            self.unanswered.discard(reply.id)


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve *server* over this process's stdin and stdout until the client closes stdin.

    A client that opens with the ``initialize`` handshake (every client of the
    2025 protocol) is served by the SDK's handshake loop directly: the
    dual-era loop would relay each of its messages through one more task to
    learn what the first one already says. (Unlike the dual-era loop, it does
    not refuse a request that also carries the 2026 envelope on such a
    connection; it serves it as any other.)
    """
    options = server.create_initialization_options()
    async with stdio_pipes() as (read, write):
        if isinstance(read, _WireReader) and await read.opens_handshake():
            async with server.lifespan(server) as state:
                await serve_loop(server, read, write, lifespan_state=state, init_options=options)
        else:
            await server.run(read, write, options)


@asynccontextmanager
async def stdio_pipes() -> AsyncIterator[tuple[Any, Any]]:
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
        yield _WireReader(wire_in, unanswered), _WireWriter(wire_out, unanswered)
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out, wire_in, wire_out):
            os.close(fd)
