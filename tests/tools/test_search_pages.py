"""A search stops at its page, and the next page reads only what it needs.

The backend records every file it reads, so "no full rescan" is counted, not timed.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ctxfs.core import ABSENT, Context, Fs, MemoryBackend, Operation, hookimpl
from ctxfs.tools import FsToolset, ToolResult, ToolsetOptions
from ctxfs.tools.builtin.grep.query import PROGRESS_GAP

pytestmark = pytest.mark.anyio

FILES = 400


class RecordingBackend(MemoryBackend):
    """The memory backend, recording the path of every read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    async def _enter(self, method: str, path: str) -> None:
        if method == "read":
            self.reads.append(path)
        await super()._enter(method, path)

    def take_reads(self) -> list[str]:
        reads, self.reads = self.reads, []
        return reads


@pytest.fixture
async def backend() -> RecordingBackend:
    store = RecordingBackend()
    for index in range(FILES):
        marks = "needle\n" * (index % 3)  # 0, 1 or 2 matching lines
        await store.write(
            f"d{index // 100}/f{index:03}.txt", f"a\n{marks}b\n".encode(), expect=ABSENT
        )
    return store


@pytest.fixture
async def ctx(backend: RecordingBackend) -> AsyncIterator[Context]:
    async with Fs(backend, load_entrypoints=False) as fs:
        yield fs.context(owner="agent")


async def grep(tools: FsToolset, ctx: Context, **arguments: Any) -> ToolResult:
    result = await tools.execute(ctx, "grep", {"pattern": "needle", **arguments})
    assert result.error_code is None, result.text
    return result


def _items(result: ToolResult) -> list[dict[str, Any]]:
    data = result.structured
    items: list[dict[str, Any]] = data["matches" if data["output_mode"] == "content" else "files"]
    return items


async def test_the_first_page_stops_early_and_says_its_total_is_a_lower_bound(
    backend: RecordingBackend, ctx: Context
) -> None:
    backend.take_reads()
    first = await grep(FsToolset(), ctx, limit=5)
    assert len(backend.take_reads()) < FILES // 4
    data = first.structured
    assert (data["total_exact"], data["next_offset"]) == (False, 6)
    assert data["total"] > 5
    assert f"of at least {data['total']} in" in first.text


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
async def test_the_next_page_reads_none_of_the_files_before_it(
    backend: RecordingBackend, ctx: Context, mode: str
) -> None:
    tools = FsToolset()
    first = await grep(tools, ctx, output_mode=mode, limit=50)
    before_page_two = {item["path"] for item in _items(first)}
    backend.take_reads()
    second = await grep(tools, ctx, output_mode=mode, offset=51, limit=50)
    reads = backend.take_reads()
    shown = {item["path"] for item in _items(second)}
    assert shown
    assert not shown & before_page_two - {min(shown)}
    assert not set(reads) & (before_page_two - shown), "a file of page 1 was read again"
    assert len(reads) < FILES // 2


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
async def test_pages_join_into_one_whole_search(ctx: Context, mode: str) -> None:
    tools = FsToolset(ToolsetOptions(grep_limit=10_000))
    whole = await grep(
        FsToolset(ToolsetOptions(grep_limit=10_000)), ctx, output_mode=mode, context=1
    )
    assert whole.structured["total_exact"]
    joined: list[dict[str, Any]] = []
    offset: int | None = 1
    while offset is not None:
        page = await grep(tools, ctx, output_mode=mode, offset=offset, limit=37, context=1)
        joined += _items(page)
        offset = page.structured.get("next_offset")
    assert joined == _items(whole)
    assert page.structured["total_exact"]  # the last page searched to the end
    assert page.structured["total"] == whole.structured["total"]


async def test_a_page_past_the_end_says_so(ctx: Context) -> None:
    tools = FsToolset()
    past = await grep(tools, ctx, output_mode="files_with_matches", offset=100_000)
    assert not past.structured.get("files")
    total = past.structured["total"]
    assert past.text.startswith(f"(no matching files from offset 100000: there are {total} ")
    listed = await tools.execute(ctx, "list_dir", {"path": "", "offset": 100_000})
    assert listed.text.startswith("(no entries from offset 100000: there are ")


async def test_a_file_changed_between_pages_is_searched_again(
    backend: RecordingBackend, ctx: Context
) -> None:
    tools = FsToolset()
    await grep(tools, ctx, limit=20)
    first_file = "d0/f001.txt"  # one match: item 1
    version = (await backend.stat(first_file)).version
    await backend.write(first_file, b"needle\nneedle\nneedle\n", expect=version)
    backend.take_reads()
    second = await grep(tools, ctx, offset=2, limit=3)
    assert first_file in backend.take_reads()
    assert [(m["path"], m["line"]) for m in second.structured["matches"]] == [
        (first_file, 2),
        (first_file, 3),
        ("d0/f002.txt", 2),
    ]


async def test_another_owner_learns_nothing_from_a_search_it_did_not_run(
    backend: RecordingBackend, ctx: Context
) -> None:
    tools = FsToolset()
    await grep(tools, ctx, limit=50)
    other = ctx.opened_fs.context(owner="someone-else")
    backend.take_reads()
    await grep(tools, other, offset=51, limit=50)
    assert "d0/f001.txt" in backend.take_reads()


async def test_a_caller_that_asks_hears_the_search_go(ctx: Context) -> None:
    heard: list[tuple[float, float | None, str]] = []

    async def progress(done: float, total: float | None, message: str) -> None:
        heard.append((done, total, message))

    tools = FsToolset(ToolsetOptions(progress_seconds=0, grep_limit=1000))
    found = await tools.execute(
        ctx, "grep", {"pattern": "needle", "output_mode": "count"}, progress=progress
    )
    assert found.structured["total_exact"]
    assert heard
    assert {total for _, total, _ in heard} == {FILES}
    done, _, said = heard[-1]
    told = re.fullmatch(rf"(\d+) of {FILES} files searched, \d+ matching lines", said)
    assert told is not None, said
    assert int(told.group(1)) == done
    quiet: list[object] = []
    await FsToolset().execute(ctx, "grep", {"pattern": "needle"}, progress=quiet.append)  # type: ignore[arg-type]
    assert quiet == []  # a search quicker than a second says nothing


async def test_progress_from_the_first_moment_comes_at_most_every_tenth_of_a_second(
    ctx: Context,
) -> None:
    heard: list[float] = []

    async def progress(done: float, total: float | None, message: str) -> None:
        del done, total, message
        heard.append(time.monotonic())

    tools = FsToolset(ToolsetOptions(progress_seconds=0, grep_limit=1000))
    started = time.monotonic()
    await tools.execute(ctx, "grep", {"pattern": "needle"}, progress=progress)
    took = time.monotonic() - started
    assert heard
    assert len(heard) <= 2 + took / PROGRESS_GAP  # (not one at every batch of lines)


async def test_a_store_without_an_engine_sees_each_operation_reported_once(
    backend: RecordingBackend,
) -> None:
    # The engine primitives (a flat tree listing, ripgrep's counts and lines) are optional: a
    # store without them is not asked, so nothing is authorized or audited twice.
    reported: list[tuple[str, str]] = []

    class Ledger:
        @hookimpl
        def ctxfs_finished(self, ctx: Context, op: Operation, error: object) -> None:
            reported.append((str(op.kind), op.path))

    calls = (
        {"pattern": "needle", "output_mode": "count"},
        {"pattern": "needle", "path": "d0/f001.txt"},
    )
    async with Fs(backend, plugins=[Ledger()], load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        for arguments in calls:
            reported.clear()
            await FsToolset().execute(ctx, "grep", arguments)
            reads = [path for kind, path in reported if kind == "read"]
            assert reads, reported
            assert len(reads) == len(set(reads)), "a file was authorized twice"
            lists = [path for kind, path in reported if kind == "list"]
            assert len(lists) == len(set(lists)), "a directory was listed twice"
        assert reads == ["d0/f001.txt"]
        reported.clear()
        await FsToolset().execute(ctx, "glob", {"pattern": "**/*.txt"})
        assert sorted(path for _, path in reported) == ["", "d0", "d1", "d2", "d3"]
