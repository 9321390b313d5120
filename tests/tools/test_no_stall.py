"""No call holds the event loop: while one session runs the heaviest inputs, another reads.

Each case is an input that used to keep the loop busy for seconds to minutes (a
``replace_all`` with 64k matches, the diagnosis of a long near-miss, grep patterns that
backtrack per line or add up over lines). A second session reads a small file every few
milliseconds meanwhile; the worst wait, counted from when the read was due, must stay
under a quarter of a second: far below the seconds those inputs held it, with room for a slow
machine's scheduling under a parallel test run.
"""

from __future__ import annotations

import gc
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxfs.core import Context, ErrorCode, Fs
from ctxfs.core.policies import PathRules
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset, ToolResult, ToolsetOptions
from tests.tools.conftest import Seed, skip_without_ripgrep
from tests.tools.media import shared_pdf

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DUE_EVERY = 0.005
WORST_WAIT = 0.25


async def worst_read_wait(
    fs: Fs, busy: Callable[[], Awaitable[ToolResult]]
) -> tuple[float, int, ToolResult]:
    """Run *busy*; meanwhile another session reads. The worst wait, the reads, the result."""
    other = fs.context(owner="other session")
    tools, worst, reads = FsToolset(), 0.0, 0
    done = anyio.Event()
    result: ToolResult | None = None

    async def reader() -> None:
        nonlocal worst, reads
        while not done.is_set():
            due = time.perf_counter() + DUE_EVERY
            await anyio.sleep(DUE_EVERY)
            read = await tools.execute(other, "read", {"file_path": "small.txt"})
            assert read.error_code is None, read.text
            worst, reads = max(worst, time.perf_counter() - due), reads + 1

    async def heavy() -> None:
        nonlocal result
        await anyio.sleep(DUE_EVERY * 4)  # the reader is under way
        result = await busy()
        done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            tasks.start_soon(heavy)
    assert result is not None
    return worst, reads, result


@pytest.fixture(autouse=True)
def settled_heap() -> Iterator[None]:
    """Leave the objects of earlier tests out of garbage collection meanwhile.

    The test process holds millions of them; a full collection walks them all and pauses
    every thread for a third of a second, whatever this test runs.
    """
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


async def call(tools: FsToolset, ctx: Context, name: str, **arguments: Any) -> ToolResult:
    return await tools.execute(ctx, name, arguments)


@pytest.fixture
async def small(seed: Seed) -> None:
    await seed("small.txt", b"a small file\n")


@pytest.mark.usefixtures("small")
async def test_replace_all_with_64k_matches(fs: Fs, ctx: Context, seed: Seed) -> None:
    await seed("many.txt", b"x y\r\n" * 64_000)  # 320 KB, 64k matches, CRLF to re-spell
    tools = FsToolset()
    await call(tools, ctx, "read", file_path="many.txt", limit=1)
    worst, reads, result = await worst_read_wait(
        fs,
        lambda: call(
            tools,
            ctx,
            "edit",
            file_path="many.txt",
            old_string="x",
            new_string="z\n",
            replace_all=True,
        ),
    )
    assert result.error_code is None, result.text
    assert result.structured["replacements"] == 64_000
    assert reads > 0
    assert worst < WORST_WAIT, f"a read waited {worst:.3f} s"


@pytest.mark.usefixtures("small")
async def test_the_diagnosis_of_a_long_near_miss(fs: Fs, ctx: Context, seed: Seed) -> None:
    # Lines of 20,000 distinct-ish characters, and an old_string that differs from each in
    # every fiftieth character: the closest-line search compares long, nearly equal lines.
    line = "".join(chr(0x4E00 + (index * 7919) % 20_000) for index in range(20_000))
    await seed("long.txt", ((line + "\n") * 40).encode())
    near = "".join("Z" if index % 50 == 0 else char for index, char in enumerate(line))
    tools = FsToolset()
    await call(tools, ctx, "read", file_path="long.txt", limit=1)
    worst, reads, result = await worst_read_wait(
        fs, lambda: call(tools, ctx, "edit", file_path="long.txt", old_string=near, new_string="x")
    )
    assert result.error_code is ErrorCode.NO_MATCH
    assert "the closest lines are 1, 2, 3" in result.text
    assert reads > 0
    assert worst < WORST_WAIT, f"a read waited {worst:.3f} s"


@pytest.mark.usefixtures("small")
async def test_a_pattern_cubic_per_line(fs: Fs, ctx: Context, seed: Seed, engine: str) -> None:
    await seed("src/a.txt", (b"a" * 2_000 + b"\n") * 4)
    tools = FsToolset(ToolsetOptions(grep_line_seconds=0.5))
    worst, reads, result = await worst_read_wait(
        fs, lambda: call(tools, ctx, "grep", pattern="a*a*a*[bc]", path="src")
    )
    if engine == "ripgrep":  # linear: no match, at once
        assert (result.error_code, result.structured["total"]) == (None, 0)
    else:
        assert result.error_code is ErrorCode.INVALID_ARGUMENT
        assert "backtracks catastrophically" in result.text
    assert reads > 0
    assert worst < WORST_WAIT, f"a read waited {worst:.3f} s"


@pytest.mark.usefixtures("small")
async def test_a_pattern_slow_on_every_line_stops_at_the_call_deadline(
    fs: Fs, ctx: Context, seed: Seed, engine: str
) -> None:
    # Each line takes a good part of the line limit, never all of it: only the call's
    # deadline can stop the search, and the result says what it covered.
    probe = "a" * 22 + "!"
    started = time.perf_counter()
    await anyio.to_thread.run_sync(lambda: __import__("regex").search("(a|aa)+c", probe))
    per_line = time.perf_counter() - started
    lines = max(8, int(3 / max(per_line, 1e-3)))
    await seed("src/a.txt", ((probe + "\n") * lines).encode())
    tools = FsToolset(ToolsetOptions(grep_seconds=1.0, grep_line_seconds=30.0))
    worst, reads, result = await worst_read_wait(
        fs, lambda: call(tools, ctx, "grep", pattern="(a|aa)+c", path="src")
    )
    assert result.error_code is None, result.text
    if engine == "ripgrep":  # linear: every line searched, in no time
        assert "timed_out" not in result.structured  # false: left out
        assert result.structured["total"] == 0
    else:
        assert result.structured["timed_out"] is True
        assert "the search stopped at its time limit" in result.text
    assert reads > 0
    assert worst < WORST_WAIT, f"a read waited {worst:.3f} s"


@pytest.mark.usefixtures("small")
async def test_a_pdf_extracted_until_its_deadline(fs: Fs, ctx: Context, seed: Seed) -> None:
    # pypdf holds the GIL between its operations: the loop still gets its turns.
    await seed("slow.pdf", shared_pdf(300, b"BT /F1 12 Tf " + b"() Tj " * 20_000 + b"ET"))
    tools = FsToolset(ToolsetOptions(pdf_seconds=0.5))
    worst, reads, result = await worst_read_wait(
        fs, lambda: call(tools, ctx, "read", file_path="slow.pdf")
    )
    assert result.structured["pdf"]["time_limit_reached"] is True
    assert reads > 0
    assert worst < WORST_WAIT, f"a read waited {worst:.3f} s"


@pytest.fixture(params=["local", "ripgrep"])
async def wide_fs(request: pytest.FixtureRequest, memory_path: Path) -> AsyncIterator[Fs]:
    """fs-local on tmpfs, searching by its own walk or with ripgrep, holding 100 × 1,000
    one-line files under ``tree/`` and ``small.txt`` (made behind its back, at once), and a
    policy that hides a path."""
    if request.param == "ripgrep" and find_ripgrep() is None:
        skip_without_ripgrep()
    root = memory_path / "root"
    for directory in range(100):
        (root / "tree" / f"d{directory}").mkdir(parents=True)
        for number in range(1_000):
            (root / "tree" / f"d{directory}" / f"f{number}.txt").write_bytes(b"match\n")
    (root / "small.txt").write_bytes(b"a small file\n")
    backend = LocalBackend(
        root, state_dir=memory_path / "state", ripgrep=request.param == "ripgrep"
    )
    rules = PathRules(deny=["secret"])  # (every path of a listing is then asked about)
    async with Fs(backend, plugins=[rules], load_entrypoints=False) as opened:
        yield opened


LISTED: list[tuple[str, dict[str, Any]]] = [
    ("glob", {"pattern": "tree/**/*.txt"}),
    ("glob", {"pattern": "tree/**/*.txt", "sort": "modified"}),
    ("grep", {"pattern": "match", "output_mode": "count"}),
]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(("tool", "arguments"), LISTED, ids=["glob", "glob by time", "grep count"])
async def test_a_listing_of_100k_files(wide_fs: Fs, tool: str, arguments: dict[str, Any]) -> None:
    # Sorting and matching 100,000 paths takes a few hundred milliseconds, done in a thread.
    ctx = wide_fs.context(owner="agent")
    worst, reads, result = await worst_read_wait(
        wide_fs, lambda: call(FsToolset(), ctx, tool, **arguments)
    )
    assert result.error_code is None, result.text
    if tool == "glob":  # (a walk's grep may count only as far as the page: "at least")
        assert result.structured["total"] == 100_000
    if "sort" not in arguments:
        found = result.structured.get("paths") or [
            file["path"] for file in result.structured["files"]
        ]
        assert found[:3] == ["tree/d0/f0.txt", "tree/d0/f1.txt", "tree/d0/f10.txt"]
    assert reads > 0
    assert worst < WORST_WAIT, f"a read waited {worst:.3f} s"
