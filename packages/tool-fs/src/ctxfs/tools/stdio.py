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
over to the SDK's transport unchanged.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Final, Self

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

__all__ = ["stdio_pipes"]

_READ_SIZE: Final = 1 << 16


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


class _WireReader(_Stream):
    """The client's messages, one JSON-RPC frame per line.

    A line that does not parse arrives as its exception, as from the SDK's
    transport: the server logs it and reads on.
    """

    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self.buffer = bytearray()
        self.eof = False

    async def receive(self) -> SessionMessage | Exception:
        """The next message; ``EndOfStream`` once the client closed its end."""
        line = await self._line()
        try:
            return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError as exc:
            return exc

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

    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self.lock = anyio.Lock(fast_acquire=True)

    async def send(self, message: SessionMessage, /) -> None:
        """Write *message* as one JSON line."""
        if self.closed:
            raise anyio.ClosedResourceError
        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
        data = memoryview((text + "\n").encode("utf-8"))
        async with self.lock:
            while data:
                try:
                    written = os.write(self.fd, data)
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
                    continue
                data = data[written:]


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


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
        yield _WireReader(wire_in), _WireWriter(wire_out)
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out, wire_in, wire_out):
            os.close(fd)
