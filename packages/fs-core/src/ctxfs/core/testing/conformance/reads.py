"""Conformance: ranged, pinned and streamed reads, and the size of one write."""

from __future__ import annotations

import pytest

from ctxfs.core.backend import Backend
from ctxfs.core.errors import InvalidArgument, NotFound, Stale, TooLarge
from ctxfs.core.testing.conformance.support import MIB, ConformanceBase
from ctxfs.core.versions import ABSENT

__all__ = ["ReadConformance"]


class ReadConformance(ConformanceBase):
    """Ranged, pinned and streamed reads, and the size of one write."""

    async def test_range_reads(self, backend: Backend) -> None:
        version = await backend.write("r.bin", b"0123456789", expect=ABSENT)
        cases = {(2, 5): b"234", (0, 10): b"0123456789", (7, None): b"789", (None, 3): b"012"}
        for (start, end), expected in cases.items():
            blob = await backend.read("r.bin", start=start, end=end)
            assert (blob.data, blob.version, blob.size) == (expected, version, 10)

    async def test_empty_and_past_the_end_ranges(self, backend: Backend) -> None:
        await backend.write("r.bin", b"0123456789", expect=ABSENT)
        assert (await backend.read("r.bin", start=4, end=4)).data == b""
        assert (await backend.read("r.bin", start=10)).data == b""
        assert (await backend.read("r.bin", start=12, end=20)).data == b""
        assert (await backend.read("r.bin", start=8, end=100)).data == b"89"

    async def test_negative_range_is_invalid(self, backend: Backend) -> None:
        await backend.write("r.bin", b"0123456789", expect=ABSENT)
        with pytest.raises(InvalidArgument):
            await backend.read("r.bin", start=-3)

    async def test_read_pinned_to_old_version_is_stale(self, backend: Backend) -> None:
        first = await backend.write("r.bin", b"0123456789", expect=ABSENT)
        second = await backend.write("r.bin", b"abcdefghij", expect=first)
        assert (await backend.read("r.bin", start=1, end=3, version=second)).data == b"bc"
        with pytest.raises(Stale):
            await backend.read("r.bin", start=1, end=3, version=first)

    async def test_stream_yields_content_and_version(self, backend: Backend) -> None:
        data = bytes(range(256)) * 1000
        version = await backend.write("s.bin", data, expect=ABSENT)
        async with backend.open_read("s.bin", chunk_size=4096) as stream:
            chunks = [chunk async for chunk in stream]
        assert b"".join(chunks) == data
        assert max(len(chunk) for chunk in chunks) <= 4096
        assert stream.version == version

    async def test_empty_file(self, backend: Backend) -> None:
        version = await backend.write("empty", b"", expect=ABSENT)
        blob = await backend.read("empty")
        assert (blob.data, blob.size, blob.version) == (b"", 0, version)
        async with backend.open_read("empty") as stream:
            assert [chunk async for chunk in stream if chunk] == []

    async def test_large_write_or_documented_refusal(self, backend: Backend) -> None:
        limit = backend.capabilities.max_cas_size
        if limit is not None and limit <= 64 * MIB:
            with pytest.raises(TooLarge):
                await backend.write("big.bin", b"x" * (limit + 1), expect=ABSENT)
            with pytest.raises(NotFound):
                await backend.stat("big.bin")
        else:
            data = bytes(range(251)) * (3 * MIB // 251)
            version = await backend.write("big.bin", data, expect=ABSENT)
            assert (await backend.read("big.bin")).data == data
            assert (await backend.read("big.bin", start=MIB, end=MIB + 5)).version == version
