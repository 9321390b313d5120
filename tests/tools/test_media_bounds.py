"""What one ``read`` of an image or a PDF may cost: time, memory, and room in the process.

The costly cases of issue 29 run in a fresh process each, which reads one generated
file and reports its own peak RSS (``resource.getrusage``): the growth is the read's.
The bounds are generous; the code before them went far past each (noted at the case).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest

from ctxfs.core import Context, ErrorCode, Fs, MemoryBackend
from ctxfs.tools import FsToolset, ReadData, ToolResult, ToolsetOptions
from ctxfs.tools.builtin.read import media
from ctxfs.tools.builtin.read.pdfs import pdf_text
from tests.tools.conftest import Seed
from tests.tools.media import (
    deep_png,
    deflated_pdf,
    image,
    pdf,
    shared_pdf,
    slow_second_page_pdf,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

_MEASURE = """
import asyncio, json, resource, sys, time
from pathlib import Path
from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.tools import FsToolset, ToolsetOptions

async def main(path, options):
    async with Fs(MemoryBackend(), load_entrypoints=False) as fs:
        await fs.backend.write(path.name, path.read_bytes(), expect=ABSENT)
        tools = FsToolset(ToolsetOptions(**options))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.monotonic()
        result = await tools.execute(fs.context(owner="a"), "read", {"file_path": path.name})
        seconds = time.monotonic() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    grown = (peak - before) / 1024  # KiB on Linux
    print(json.dumps({"seconds": seconds, "mib": grown, "text": result.text,
                      "data": result.structured}))

asyncio.run(main(Path(sys.argv[1]), json.loads(sys.argv[2])))
"""


def measured(folder: Path, name: str, data: bytes, **options: Any) -> dict[str, Any]:
    """A read of *data* (as file *name*) in a fresh process: its seconds, MiB of peak RSS
    growth, text and structured data."""
    path = folder / name
    path.write_bytes(data)
    ran = subprocess.run(
        [sys.executable, "-W", "error", "-c", _MEASURE, str(path), json.dumps(options)],
        capture_output=True,
        text=True,
        check=True,
        timeout=100,
    )
    report: dict[str, Any] = json.loads(ran.stdout)
    return report


def test_a_pdf_read_stops_at_its_deadline(tmp_path: Path) -> None:
    # 300 pages sharing one stream of 20,000 empty Tj (0.2 s a page here): before, a minute
    # for all of them, with no deadline. (Few pages: it opens in a fraction of its deadline.)
    document = shared_pdf(300, b"BT /F1 12 Tf " + b"() Tj " * 20_000 + b"ET")
    run = measured(tmp_path, "slow.pdf", document, pdf_seconds=0.5)
    shown = run["data"]["pdf"]
    assert shown["time_limit_reached"] is True
    assert 1 < shown["next_page"] == shown["last_page"] + 1 < 300
    assert run["text"].endswith(
        f"of 300 of the PDF slow.pdf; stopped at the time limit: "
        f"continue with pages='{shown['next_page']}-')"
    )
    assert run["seconds"] < 2.5
    assert run["mib"] < 60


def test_a_pdf_slower_to_open_than_a_read_may_take_is_too_large_at_the_deadline(
    tmp_path: Path,
) -> None:
    # 20 MiB of objects and no end marker: pypdf looks for one a line at a time from the end.
    # Before, 6 s of parsing here (12 s for 40 MiB), then "cannot be parsed".
    document = b"%PDF-1.4\n" + b"1 0 obj\n<< >>\nendobj\n" * 1_000_000
    run = measured(tmp_path, "slow-open.pdf", document, pdf_seconds=0.5)
    assert run["data"]["error"]["code"] == "too_large"
    assert "opening this PDF takes longer than a read may (0.5 s)" in run["text"]
    assert run["seconds"] < 2.5


def test_a_page_whose_objects_load_past_the_deadline_is_left_for_the_next_read() -> None:
    # Before, loading page 2 (a dictionary of 90,000 entries) ran past the deadline, 0.8 s
    # here. pypdf goes on past a stopped read with what it had read: the read must still
    # leave the page for the next one, not show it as a page without text.
    document = slow_second_page_pdf(90_000)
    started = time.monotonic()
    shown = pdf_text(document, None, max_chars=10_000, seconds=0.1, path="x.pdf")
    assert time.monotonic() - started < 0.5
    assert (shown.last_page, shown.next_page, shown.time_limit_reached) == (1, 2, True)
    assert "Hello one" in shown.text
    whole = pdf_text(document, None, max_chars=10_000, seconds=30, path="x.pdf")
    assert (whole.last_page, whole.next_page, whole.time_limit_reached) == (2, None, False)
    assert "Hello two" in whole.text


def test_a_page_flooded_with_operators_is_shown_without_its_text(tmp_path: Path) -> None:
    # One page of 900,000 empty Tj (5.4 MB): before, 7.6 s and +238 MiB.
    run = measured(tmp_path, "flood.pdf", shared_pdf(1, b"BT " + b"() Tj " * 900_000 + b"ET"))
    assert run["data"]["pdf"]["skipped_pages"] == [1]
    assert "(its text is not extracted: its content is too large to parse here)" in run["text"]
    assert run["seconds"] < 3
    assert run["mib"] < 100


def test_what_a_pdf_page_inflated_goes_before_the_next_page(tmp_path: Path) -> None:
    # Six pages, each of its own 40 MB of deflated spaces: before, pypdf kept every page's
    # inflated content for the whole read (+163 MiB here, 40 more with every page in time).
    run = measured(tmp_path, "deflated.pdf", deflated_pdf(6, 40_000_000), pdf_seconds=60)
    assert run["data"]["pdf"]["textless_pages"] == [1, 2, 3, 4, 5, 6]
    assert run["mib"] < 80


def test_a_62_megapixel_16_bit_png_is_too_large_before_it_is_decoded(tmp_path: Path) -> None:
    # 62.3 million pixels of 16-bit RGB (1.7 MB of PNG, within the pixel limit): before,
    # decoded and copied at full size, +706 MiB.
    run = measured(tmp_path, "huge.png", deep_png((7_000, 8_900), color=True))
    error = run["data"]["error"]
    assert error["code"] == "too_large"
    assert error["details"]["decoded_bytes"] == 7_000 * 8_900 * 4
    assert error["details"]["max_decoded_bytes"] == ToolsetOptions().max_image_decoded_bytes
    assert "takes 237.7 MB decoded; the limit is 192.0 MB" in run["text"]
    assert error["hint"].startswith("It cannot be shown. A smaller copy")
    assert run["seconds"] < 1
    assert run["mib"] < 40


def test_a_big_16_bit_gray_png_is_shrunk_in_about_its_decoded_size(tmp_path: Path) -> None:
    # 40 million pixels of 16-bit gray, 76 MiB decoded: before, converted to 32 bits and
    # copied at full size, +440 MiB.
    run = measured(tmp_path, "gray.png", deep_png((8_000, 5_000), color=False))
    sent = run["data"]["image"]
    assert (sent["width"], sent["height"], sent["media_type"]) == (1568, 980, "image/png")
    assert run["seconds"] < 5
    assert run["mib"] < 160


@pytest.fixture
async def fs() -> AsyncIterator[Fs]:
    """The memory backend (how files are stored does not matter here)."""
    async with Fs(MemoryBackend(), load_entrypoints=False) as opened:
        yield opened


async def read(tools: FsToolset, ctx: Context, path: str, **arguments: Any) -> ToolResult:
    return await tools.execute(ctx, "read", {"file_path": path, **arguments})


async def test_an_image_is_reckoned_decoded_at_the_scale_it_decodes_at(
    ctx: Context, seed: Seed
) -> None:
    tools = FsToolset(ToolsetOptions(max_image_decoded_bytes=16 << 20))
    await seed("colour.png", image((2_500, 2_000)))  # 4 bytes a pixel: 20 MB
    await seed("gray.png", image((2_500, 2_000), mode="L"))  # 1 byte a pixel: 5 MB
    await seed("photo.jpg", image((4_000, 3_000), "JPEG"))  # 48 MB whole, 12 MB at 1/2 scale
    refused = await read(tools, ctx, "colour.png")
    assert refused.error_code is ErrorCode.TOO_LARGE
    assert "colour.png is an image of 2500x2000 pixels that takes 19.1 MB decoded" in refused.text
    assert refused.structured["error"]["details"] == {
        "width": 2_500,
        "height": 2_000,
        "decoded_bytes": 20_000_000,
        "max_decoded_bytes": 16 << 20,
    }
    for name in ("gray.png", "photo.jpg"):
        shown = (await read(tools, ctx, name)).data_as(ReadData).image
        assert shown is not None
        assert shown.width == 1568


async def test_a_progressive_jpeg_is_reckoned_with_every_coefficient_it_holds(
    ctx: Context, seed: Seed
) -> None:
    # libjpeg holds a progressive JPEG's coefficients at full size (2 bytes a band a pixel),
    # whatever the scale it decodes at: before, 16 MP read as 12 MB at 1/2 scale (+96 MB).
    tools = FsToolset(ToolsetOptions(max_image_decoded_bytes=64 << 20))
    await seed("baseline.jpg", image((4_000, 4_000), "JPEG"))
    await seed("progressive.jpg", image((4_000, 4_000), "JPEG", progressive=True))
    assert not (await read(tools, ctx, "baseline.jpg")).is_error
    refused = await read(tools, ctx, "progressive.jpg")
    assert refused.error_code is ErrorCode.TOO_LARGE
    details = refused.structured["error"]["details"]
    assert details["decoded_bytes"] == 2_000 * 2_000 * 4 + 4_000 * 4_000 * 3 * 2


async def test_a_pdf_read_out_of_time_says_so_and_always_moves_on(ctx: Context, seed: Seed) -> None:
    tools = FsToolset(ToolsetOptions(pdf_seconds=0.05))  # (each page takes 0.2 s here)
    await seed("report.pdf", shared_pdf(3, b"BT /F1 12 Tf " + b"() Tj " * 20_000 + b"ET"))
    first = await read(tools, ctx, "report.pdf")
    shown = first.data_as(ReadData).pdf
    assert shown is not None
    assert (shown.last_page, shown.next_page, shown.skipped_pages) == (1, 2, [1])
    assert shown.time_limit_reached
    assert first.text == (
        "--- page 1 of 3 ---\n"
        "(its text is not extracted: the page alone takes longer than a read may)\n"
        "(page 1 of 3 of the PDF report.pdf; stopped at the time limit: continue with "
        "pages='2-')"
    )
    last = (await read(tools, ctx, "report.pdf", pages="3-")).data_as(ReadData).pdf
    assert last is not None
    assert (last.last_page, last.next_page, last.time_limit_reached) == (3, None, False)
    enough = await read(FsToolset(), ctx, "report.pdf")
    assert enough.structured["pdf"]["time_limit_reached"] is False
    assert enough.text.endswith("end of document)")


async def test_media_reads_beyond_the_limit_wait_their_turn_across_toolsets(
    ctx: Context, seed: Seed, monkeypatch: pytest.MonkeyPatch
) -> None:
    running: set[int] = set()  # the threads extracting now
    most = 0
    lock, go, two_run = threading.Lock(), threading.Event(), anyio.Event()

    def held(*args: Any, **kwargs: Any) -> Any:
        nonlocal most
        with lock:
            running.add(threading.get_ident())
            most = max(most, len(running))
            second = len(running) == 2
        if second:
            anyio.from_thread.run_sync(two_run.set)
        try:
            go.wait(10)
            return pdf_text(*args, **kwargs)
        finally:
            with lock:
                running.discard(threading.get_ident())

    monkeypatch.setattr(media, "pdf_text", held)
    await seed("report.pdf", pdf("one"))
    results: list[ToolResult] = []

    async def one(tools: FsToolset) -> None:
        results.append(await read(tools, ctx, "report.pdf"))

    toolsets = [FsToolset(ToolsetOptions(max_media_reads=2)) for _ in range(2)]
    async with anyio.create_task_group() as reads:
        for tools in toolsets * 3:
            reads.start_soon(one, tools)
        try:
            with anyio.fail_after(10):
                await two_run.wait()
            await anyio.sleep(0.2)  # time for more to start, were they let
        finally:
            go.set()
    assert most == 2
    assert [result.error_code for result in results] == [None] * 6
