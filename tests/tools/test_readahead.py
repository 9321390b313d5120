"""On a store with latency, a search reads files ahead, a bounded number at once, in order."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.tools import FsToolset

pytestmark = pytest.mark.anyio

WIDTH = 6


class SlowStore(MemoryBackend):
    """The memory backend with a round trip per call, reads *WIDTH* at once, and a record."""

    capabilities = dataclasses.replace(MemoryBackend.capabilities, concurrent_reads=WIDTH)

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = self.most_in_flight = 0
        self.reads: list[str] = []

    async def _enter(self, method: str, path: str) -> None:
        if method != "read":
            await super()._enter(method, path)
            return
        self.reads.append(path)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await super()._enter(method, path)
        finally:
            self.in_flight -= 1


async def _store(files: int) -> SlowStore:
    store = SlowStore()
    for n in range(files):
        body = b"needle\n" if n % 4 == 0 else b"hay\n"
        await store.write(f"f{n:03}.txt", body, expect=ABSENT)
    store.faults.latency = 0.01
    return store


async def _grep(store: SlowStore, **arguments: Any) -> dict[str, Any]:
    async with Fs(store, load_entrypoints=False) as fs:
        result = await FsToolset().execute(
            fs.context(owner="a"), "grep", {"pattern": "needle", **arguments}
        )
    assert result.error_code is None, result.text
    return result.structured


async def test_reads_overlap_up_to_the_stores_width_and_results_keep_their_order() -> None:
    store = await _store(60)
    found = await _grep(store, output_mode="files_with_matches")
    assert [item["path"] for item in found["files"]] == [f"f{n:03}.txt" for n in range(0, 60, 4)]
    assert found["total_exact"]
    assert store.most_in_flight == WIDTH  # overlapping, and never more than the store allows
    assert sorted(store.reads) == [f"f{n:03}.txt" for n in range(60)]


async def test_a_search_stopped_at_its_page_reads_at_most_a_width_beyond_it() -> None:
    store = await _store(200)
    found = await _grep(store, limit=3)
    assert [m["path"] for m in found["matches"]] == ["f000.txt", "f004.txt", "f008.txt"]
    assert found["total_exact"] is False
    last_needed = 12  # the fourth match: the page is full and another follows
    assert len(store.reads) <= last_needed + 1 + WIDTH + 64  # the first batch holds 64 lines
    assert len(store.reads) < 200
