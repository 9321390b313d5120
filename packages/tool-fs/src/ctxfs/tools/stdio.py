"""MCP over stdio without a worker-thread visit per message.

The ``mcp`` SDK's stdio transport reads and writes its pipes through worker
threads, one visit per line; on a small machine those visits cost more than
serving the call. When stdin and stdout are pipes or sockets (as an MCP
client starts a server), :func:`stdio_pipes` serves the wire from private
non-blocking duplicates of them, waiting on the event loop instead, and points
fds 0 and 1 at ``/dev/null`` and stderr meanwhile, so that stray reads see EOF
and stray prints miss the wire. On a terminal or a file it hands over to the
SDK's transport unchanged.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio

__all__ = ["stdio_pipes"]

_READ_SIZE: Final = 1 << 16


class _Lines:
    """The lines of a non-blocking descriptor, as the SDK's transport iterates them."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.done = False

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                return line.decode("utf-8", "replace")
            if self.done:
                if self.buffer:
                    rest, self.buffer = bytes(self.buffer), bytearray()
                    return rest.decode("utf-8", "replace")
                raise StopAsyncIteration
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                continue
            if chunk:
                self.buffer += chunk
            else:
                self.done = True


class _Writer:
    """Writes to a non-blocking descriptor, as the SDK's transport writes them."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                written = os.write(self.fd, data)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            data = data[written:]

    async def flush(self) -> None:
        """Nothing is buffered."""


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
        async with stdio_server(_Lines(wire_in), _Writer(wire_out)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out, wire_in, wire_out):
            os.close(fd)
