"""What a read asks for (:class:`ReadRequest`) and a streamed read (:class:`ReadStream`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from ctxfs.core.errors import TooLarge
from ctxfs.core.versions import ContentHasher, Version

__all__ = ["DEFAULT_CHUNK_SIZE", "ReadRequest", "ReadStream"]

DEFAULT_CHUNK_SIZE = 1 << 20
"""Chunk size of streamed reads unless a caller asks otherwise (1 MiB)."""


@dataclass(frozen=True, kw_only=True)
class ReadRequest:
    """What a read asks for, checked by :meth:`Backend.read` before a primitive sees it."""

    start: int | None = None
    """First byte of the range (``None``: the start of the file)."""
    end: int | None = None
    """End of the range, exclusive (``None``: the end of the file)."""
    version: Version | None = None
    """Read only this version of the file: any other is ``Stale``, never mixed bytes."""
    max_size: int | None = None
    """Refuse a file larger than this many bytes, before reading its content if possible."""
    content_max: int | None = None
    """For an update (:meth:`Backend.open_update`): a file larger than this many bytes may be
    read for its version and size alone (None: read whole; see :class:`Update`)."""

    @property
    def whole(self) -> bool:
        """Whether the whole file is asked for, not a range."""
        return self.start is None and self.end is None

    def cut(self, data: bytes) -> bytes:
        """The requested range of a whole file's *data* (slice rules: clipped, maybe empty)."""
        return data if self.whole else data[self.start : self.end]

    def check(self, path: str | None, *, size: int) -> None:
        """Refuse *size* bytes over :attr:`max_size` (``TooLarge``, naming *path* if not None)."""
        if self.max_size is not None and size > self.max_size:
            raise TooLarge(
                f"{path or 'the object'} holds {size} bytes, "
                f"more than the {self.max_size} allowed here",
                path=path,
                details={"size": size, "max_size": self.max_size},
            )


class ReadStream:
    """One file's content as chunks (iterate once with ``async for``), and its version.

    :attr:`version` is the store's token, known at open, or else the hash of the
    chunks, known once iteration has finished.
    """

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        version: Version | None = None,
        size: int | None = None,
    ) -> None:
        self._chunks = chunks
        self._version = version
        self._hasher = None if version is not None else ContentHasher()
        self._finished = False
        self._iterator: AsyncIterator[bytes] | None = None
        self._recording: bytearray | None = None
        self._record_limit = 0
        self.size = size
        """The size of the file when known at open."""

    def record(self, limit: int) -> None:
        """Keep the chunks read from now on, up to *limit* bytes in all (see :attr:`recorded`)."""
        self._recording, self._record_limit = bytearray(), limit

    @property
    def recorded(self) -> bytes | None:
        """The whole content: if :meth:`record` came first, and all was read within its limit."""
        if self._recording is None or not self._finished:
            return None
        return bytes(self._recording)

    def __aiter__(self) -> AsyncIterator[bytes]:
        self._iterator = self._iterate()
        return self._iterator

    async def aclose(self) -> None:
        """Stop the stream early; the template calls this when ``open_read``'s context ends."""
        for iterator in (self._iterator, self._chunks):
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()

    async def _iterate(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            if self._hasher is not None:
                self._hasher.update(chunk)
            if self._recording is not None:
                if len(self._recording) + len(chunk) > self._record_limit:
                    self._recording = None
                else:
                    self._recording += chunk
            yield chunk
        self._finished = True

    @property
    def version(self) -> Version:
        """The version of the streamed content.

        Raises:
            RuntimeError: The version is a content hash and the stream is not yet exhausted.

        """
        if self._version is None:
            if not self._finished or self._hasher is None:
                raise RuntimeError("the version of a hashed stream is known only once it is read")
            self._version = self._hasher.version()
        return self._version
