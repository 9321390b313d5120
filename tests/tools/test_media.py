"""``read`` of images and PDFs through ``FsToolset.execute``, on the memory backend and fs-local.

Images are made with Pillow and PDFs written by hand (tests/tools/media.py), in
memory; what the model is sent is decoded again and checked against what the
result says it is.
"""

from __future__ import annotations

import io
import json
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from ctxfs.core import (
    ABSENT,
    Backend,
    Context,
    ErrorCode,
    Fs,
    MemoryBackend,
    NotObserved,
    Stale,
    TextOptions,
)
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset, ReadData, ToolResult, ToolsetOptions
from ctxfs.tools.builtin.read import media
from ctxfs.tools.builtin.read.images import prepared_image
from ctxfs.tools.builtin.read.pdfs import pdf_text
from tests.tools.conftest import Seed
from tests.tools.media import animation, dimensions, encrypted, image, pdf, turned

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "local"])
async def fs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Fs]:
    """The memory backend and fs-local (how a read searches does not matter here)."""
    backend: Backend = MemoryBackend()
    if request.param == "local":
        (tmp_path / "root").mkdir()
        backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    options = TextOptions(max_output_chars=2_000, max_line_chars=200)
    async with Fs(backend, load_entrypoints=False, text_options=options) as opened:
        yield opened


async def read(tools: FsToolset, ctx: Context, path: str, **arguments: Any) -> ToolResult:
    return await tools.execute(ctx, "read", {"file_path": path, **arguments})


def image_of(result: ToolResult) -> ReadData:
    assert not result.is_error, result.text
    data = result.data_as(ReadData)
    assert data.kind == "image"
    assert data.image is not None
    (part,) = result.media
    assert (
        dimensions(part.data)[1]
        == (data.image.width, data.image.height)
        == (part.width, part.height)
    )
    assert part.media_type == data.image.media_type
    assert "data" not in json.dumps(result.structured["image"])  # metadata only, never bytes
    return data


# -- images ------------------------------------------------------------------------------------


async def test_a_small_image_is_sent_as_it_is(
    tools: FsToolset, ctx: Context, seed: Seed, fs: Fs
) -> None:
    png = image((64, 48))
    await seed("logo.png", png)
    result = await read(tools, ctx, "logo.png")
    data = image_of(result)
    assert result.media[0].data == png
    assert data.image is not None
    assert data.image.unchanged
    assert (data.image.original_width, data.image.original_height) == (64, 48)
    assert data.version == (await fs.backend.read("logo.png")).version
    assert result.text == (
        f"Returned the image logo.png (image/png, 64x48 px, {len(png)} B), as it is."
    )
    assert data.content is None
    assert "content" not in result.structured  # None: left out


@pytest.mark.slow
async def test_a_huge_png_is_downscaled_within_the_limits(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("scan.png", image((6000, 6000)))
    result = await read(tools, ctx, "scan.png")
    data = image_of(result)
    assert data.image is not None
    options = tools.options
    assert (data.image.original_width, data.image.original_height) == (6000, 6000)
    assert (data.image.width, data.image.height) == (options.max_image_edge,) * 2
    assert data.image.sent_bytes == len(result.media[0].data) <= options.max_image_bytes
    assert not data.image.unchanged
    assert "(image/png, 6000x6000 px," in result.text
    assert "downscaled to 1568x1568 px as image/png" in result.text


async def test_an_image_too_big_in_bytes_is_re_encoded_and_shrunk_until_it_fits(
    ctx: Context, seed: Seed
) -> None:
    tools = FsToolset(ToolsetOptions(max_image_bytes=150_000))
    await seed("noise.png", image((700, 500), noise=True))  # about 1 MB of PNG
    data = image_of(result := await read(tools, ctx, "noise.png"))
    assert data.image is not None
    assert data.image.media_type == "image/jpeg"
    assert len(result.media[0].data) <= 150_000
    assert data.image.width <= 700
    assert (data.image.original_width, data.image.original_height) == (700, 500)


@pytest.mark.parametrize(
    ("name", "data", "media_type"),
    [
        ("photo.jpg", image((120, 80), "JPEG"), "image/jpeg"),
        ("still.gif", image((120, 80), "GIF", mode="P"), "image/gif"),
        ("still.webp", image((120, 80), "WEBP"), "image/webp"),
        ("picture.txt", image((120, 80)), "image/png"),  # the bytes decide, not the name
        ("no-name", image((120, 80), "WEBP"), "image/webp"),
    ],
)
async def test_each_image_type_is_read_by_its_bytes(
    tools: FsToolset, ctx: Context, seed: Seed, name: str, data: bytes, media_type: str
) -> None:
    await seed(name, data)
    result = await read(tools, ctx, name)
    shown = image_of(result)
    assert shown.image is not None
    assert (shown.image.media_type, shown.image.original_media_type) == (media_type, media_type)
    assert result.media[0].data == data


async def test_a_big_jpeg_is_downscaled_as_jpeg(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    await seed("photo.jpeg", image((4000, 3000), "JPEG"))
    data = image_of(await read(tools, ctx, "photo.jpeg"))
    assert data.image is not None
    assert (data.image.media_type, data.image.width, data.image.height) == (
        "image/jpeg",
        1568,
        1176,
    )


@pytest.mark.parametrize("format", ["GIF", "WEBP"])
async def test_an_animation_sends_its_first_frame_and_says_so(
    tools: FsToolset, ctx: Context, seed: Seed, format: str
) -> None:
    await seed("moving.bin", animation(3, format))
    result = await read(tools, ctx, "moving.bin")
    data = image_of(result)
    assert data.image is not None
    assert (data.image.frames, data.image.media_type, data.image.width) == (3, "image/png", 40)
    assert result.text.endswith("It is an animation: only its first of 3 frames is sent.")


async def test_files_named_like_images_holding_text_or_other_bytes_are_what_they_hold(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("fake.png", b"just text\n")
    assert (await read(tools, ctx, "fake.png")).text == "1 just text\n(end of file; lines 1-1 of 1)"
    await seed("blob.bin", b"\x00\x01\x02binary")
    refused = await read(tools, ctx, "blob.bin")
    assert refused.error_code is ErrorCode.BINARY_FILE


@pytest.mark.parametrize(
    ("data", "code", "said"),
    [
        (
            image((300, 200))[:400],
            ErrorCode.BINARY_FILE,
            "starts like a PNG image but cannot be decoded",
        ),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 60, ErrorCode.BINARY_FILE, "its header is not valid"),
        (image((300, 200), "JPEG")[:300], ErrorCode.BINARY_FILE, "starts like a JPEG image"),
    ],
)
async def test_a_damaged_image_is_a_clear_error(
    tools: FsToolset, ctx: Context, seed: Seed, data: bytes, code: ErrorCode, said: str
) -> None:
    await seed("broken.png", data)
    result = await read(tools, ctx, "broken.png")
    assert result.error_code is code
    assert said in result.text
    assert result.structured["error"]["hint"].startswith("The image is damaged")
    assert result.media == ()


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims *width* x *height* pixels in a few bytes (a decompression bomb's start)."""
    import struct  # noqa: PLC0415
    import zlib  # noqa: PLC0415

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00"))


async def test_an_image_of_too_many_pixels_is_too_large_before_decoding(
    ctx: Context, seed: Seed
) -> None:
    await seed("bomb.png", png_header(50_000, 50_000))
    result = await read(FsToolset(), ctx, "bomb.png")
    assert result.error_code is ErrorCode.TOO_LARGE
    assert "too many pixels" in result.text
    await seed("wide.png", image((400, 300)))
    limited = await read(FsToolset(ToolsetOptions(max_image_pixels=100_000)), ctx, "wide.png")
    assert limited.error_code is ErrorCode.TOO_LARGE
    assert limited.structured["error"]["details"] == {
        "width": 400,
        "height": 300,
        "max_pixels": 100_000,
    }


async def test_a_file_over_the_media_size_limit_is_too_large(ctx: Context, seed: Seed) -> None:
    await seed("logo.png", image((200, 200), noise=True))
    result = await read(FsToolset(ToolsetOptions(max_media_bytes=10_000)), ctx, "logo.png")
    assert result.error_code is ErrorCode.TOO_LARGE
    assert "read takes images, PDFs and notebooks up to 9.8 KB" in result.text


async def test_line_and_page_arguments_do_not_apply_to_an_image(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("logo.png", image((20, 20)))
    cases: list[tuple[dict[str, Any], str]] = [
        ({"offset": 3}, "offset"),
        ({"limit": 5}, "limit"),
        ({"pages": "1"}, "pages"),
    ]
    for arguments, field in cases:
        result = await read(tools, ctx, "logo.png", **arguments)
        assert result.error_code is ErrorCode.INVALID_ARGUMENT
        assert result.structured["error"]["details"]["field"] == field
        assert "file_path alone" in result.text
    assert not (await read(tools, ctx, "logo.png", offset=1)).is_error  # the default, spelled out


async def test_reading_an_image_licenses_replacing_it_and_staleness_is_still_caught(
    tools: FsToolset, ctx: Context, seed: Seed, fs: Fs
) -> None:
    await seed("logo.png", image((20, 20)))
    await read(tools, ctx, "logo.png")
    new = image((10, 10))
    await ctx.fs.write_bytes("logo.png", new)  # a whole read: a complete observation
    assert (await fs.backend.read("logo.png")).data == new
    again = image_of(await read(tools, ctx, "logo.png"))
    assert again.image is not None
    assert (again.image.width, again.image.height) == (10, 10)
    await seed("other.png", image((20, 20)))
    await read(tools, ctx, "other.png")
    current = await fs.backend.read("other.png")
    await fs.backend.write("other.png", image((30, 30)), expect=current.version)  # behind its back
    with pytest.raises(Stale):
        await ctx.fs.write_bytes("other.png", new)
    await fs.backend.write("unread.png", image((5, 5)), expect=ABSENT)
    with pytest.raises(NotObserved):
        await ctx.fs.write_bytes("unread.png", new)


async def test_a_result_with_an_image_round_trips_through_json(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("logo.png", image((20, 20)))
    result = await read(tools, ctx, "logo.png")
    restored = ToolResult.model_validate_json(result.model_dump_json())
    assert restored.media == result.media
    assert restored.structured == result.structured


async def test_the_anthropic_text_editor_views_an_image(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("logo.png", image((20, 20)))
    view = {"command": "view", "path": "logo.png"}
    result = await tools.execute(ctx, "str_replace_based_edit_tool", view, provider="anthropic")
    assert image_of(result).target == "logo.png"


async def test_the_read_description_says_what_read_returns(tools: FsToolset, ctx: Context) -> None:
    (read_tool,) = [d for d in await tools.definitions(ctx) if d["name"] == "read"]
    description = read_tool["description"]
    assert all(kind in description for kind in ("Images", "PDFs", "notebooks"))
    assert "pages" in read_tool["parameters"]["properties"]


# -- PDFs --------------------------------------------------------------------------------------

REPORT = pdf(*(f"Report page {n}\nline two of page {n}" for n in range(1, 6)))


def pages_of(result: ToolResult) -> ReadData:
    assert not result.is_error, result.text
    data = result.data_as(ReadData)
    assert (data.kind, result.media) == ("pdf", ())
    assert data.pdf is not None
    return data


async def test_text_that_only_starts_like_a_pdf_is_read_as_text(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("notes.md", b"%PDF-1.7 support: what our exporter writes.\nSecond line.\n")
    whole = await read(tools, ctx, "notes.md")
    assert whole.text.startswith("1 %PDF-1.7 support: what our exporter writes.\n2 Second line.\n")
    head = await tools.execute(ctx, "read", {"file_path": "notes.md", "limit": 1, "fresh": True})
    assert head.text.startswith("1 %PDF-1.7 support"), head.text
    assert (await tools.execute(ctx, "read", {"file_path": "notes.md", "pages": "1"})).is_error


async def test_a_pdf_reads_page_by_page_with_its_total_and_end(
    tools: FsToolset, ctx: Context, seed: Seed, fs: Fs
) -> None:
    await seed("report.pdf", REPORT)
    result = await read(tools, ctx, "report.pdf")
    data = pages_of(result)
    assert data.pdf is not None
    assert (data.pdf.total_pages, data.pdf.first_page, data.pdf.last_page) == (5, 1, 5)
    assert data.pdf.next_page is None
    assert result.text.startswith("--- page 1 of 5 ---\nReport page 1\nline two of page 1\n")
    assert result.text.endswith("(pages 1-5 of 5 of the PDF report.pdf; end of document)")
    assert data.content is not None
    assert result.text.startswith(data.content)
    assert data.version == (await fs.backend.read("report.pdf")).version


@pytest.mark.parametrize(
    ("pages", "shown", "next_page", "note"),
    [
        ("3", (3, 3), 4, "(page 3 of 5 of the PDF report.pdf; continue with pages='4-')"),
        ("2-4", (2, 4), 5, "(pages 2-4 of 5 of the PDF report.pdf; continue with pages='5-')"),
        ("4-", (4, 5), None, "(pages 4-5 of 5 of the PDF report.pdf; end of document)"),
        ("2-99", (2, 5), None, "(pages 2-5 of 5 of the PDF report.pdf; end of document)"),
    ],
)
async def test_pages_picks_the_pages(
    tools: FsToolset, ctx: Context, seed: Seed,
    pages: str, shown: tuple[int, int], next_page: int | None, note: str,
) -> None:  # fmt: skip
    await seed("report.pdf", REPORT)
    result = await read(tools, ctx, "report.pdf", pages=pages)
    data = pages_of(result)
    assert data.pdf is not None
    assert (data.pdf.first_page, data.pdf.last_page, data.pdf.next_page) == (*shown, next_page)
    assert result.text.startswith(f"--- page {shown[0]} of 5 ---\nReport page {shown[0]}\n")
    assert result.text.endswith(note)


async def test_a_pdf_read_stops_at_a_page_boundary_within_the_output_budget(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    long_pages = pdf(*("\n".join(f"page {n} line {i:03}" for i in range(45)) for n in range(1, 6)))
    await seed("long.pdf", long_pages)  # each page about 750 characters; the budget is 2,000
    result = await read(tools, ctx, "long.pdf")
    data = pages_of(result)
    assert data.pdf is not None
    assert (data.pdf.first_page, data.pdf.last_page, data.pdf.next_page) == (1, 2, 3)
    assert data.output_capped
    assert len(result.text) <= 2_000 + 200
    assert result.text.endswith("(pages 1-2 of 5 of the PDF long.pdf; continue with pages='3-')")
    rest = pages_of(await read(tools, ctx, "long.pdf", pages="3-"))
    assert rest.pdf is not None
    assert (rest.pdf.first_page, rest.pdf.last_page) == (3, 4)


async def test_a_page_larger_than_the_budget_is_cut_and_says_so(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("huge.pdf", pdf("\n".join(f"line {i:04} of a long page" for i in range(300)), "two"))
    result = await read(tools, ctx, "huge.pdf")
    data = pages_of(result)
    assert data.pdf is not None
    assert (data.pdf.last_page, data.pdf.cut_page, data.pdf.next_page) == (1, 1, 2)
    assert "[page cut here:" in result.text
    assert len(result.text) <= 2_000 + 200
    assert "page 1 was cut at the output limit; continue with pages='2-'" in result.text


async def test_pages_past_the_end_and_arguments_that_do_not_apply_are_invalid(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("report.pdf", REPORT)
    past = await read(tools, ctx, "report.pdf", pages="9")
    assert past.error_code is ErrorCode.INVALID_ARGUMENT
    assert past.text.startswith(
        "Error [invalid_argument]: report.pdf has 5 pages: there is no page 9"
    )
    assert past.structured["error"]["details"] == {"field": "pages", "total_pages": 5}
    lines = await read(tools, ctx, "report.pdf", offset=2, limit=3)
    assert lines.error_code is ErrorCode.INVALID_ARGUMENT
    assert "with pages ('3', '1-5' or '4-')" in lines.text
    await seed("notes.md", b"text\n")
    text = await read(tools, ctx, "notes.md", pages="1")
    assert text.error_code is ErrorCode.INVALID_ARGUMENT
    assert text.text.startswith(
        "Error [invalid_argument]: pages is for PDFs; notes.md is not a PDF"
    )


async def test_a_pdf_is_known_by_its_bytes(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    await seed("download", REPORT)
    assert pages_of(await read(tools, ctx, "download")).target == "download"


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (REPORT[: len(REPORT) // 3], "starts like a PDF but cannot be parsed"),
        (b"%PDF-1.7\n" + b"\x00\xff" * 50, "starts like a PDF but cannot be parsed"),
        (encrypted(REPORT, user_password="secret"), "is an encrypted PDF: its text cannot be read"),
    ],
)
async def test_a_damaged_or_locked_pdf_is_a_clear_error(
    tools: FsToolset, ctx: Context, seed: Seed, data: bytes, said: str
) -> None:
    await seed("bad.pdf", data)
    result = await read(tools, ctx, "bad.pdf")
    assert result.error_code is ErrorCode.BINARY_FILE
    assert said in result.text


async def test_a_pdf_locked_only_against_changes_is_read(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("locked.pdf", encrypted(REPORT, user_password=""))
    data = pages_of(await read(tools, ctx, "locked.pdf", pages="2"))
    assert data.content == "--- page 2 of 5 ---\nReport page 2\nline two of page 2\n"


async def test_a_page_without_text_says_it_may_be_a_scan(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("scan.pdf", pdf("words", ""))
    result = await read(tools, ctx, "scan.pdf")
    data = pages_of(result)
    assert data.pdf is not None
    assert data.pdf.textless_pages == [2]
    assert "--- page 2 of 2 ---\n(no text on this page: it may be a scanned image" in result.text


async def test_reading_every_page_of_a_pdf_licenses_replacing_it_and_some_pages_do_not(
    tools: FsToolset, ctx: Context, seed: Seed, fs: Fs
) -> None:
    await seed("report.pdf", REPORT)
    await read(tools, ctx, "report.pdf", pages="2-")  # all but the first page: partial
    with pytest.raises(NotObserved, match=r"only part of report\.pdf has been read"):
        await ctx.fs.write_bytes("report.pdf", pdf("new"))
    await ctx.fs.rewrite_bytes("report.pdf", bytes)  # an edit needs any part of it
    await read(tools, ctx, "report.pdf")  # every page
    await ctx.fs.write_bytes("report.pdf", pdf("new"))
    assert (await fs.backend.read("report.pdf")).data == pdf("new")


async def test_pillow_and_pypdf_run_off_the_event_loop(
    tools: FsToolset, ctx: Context, seed: Seed, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[threading.Thread] = []

    def spied(function: Callable[..., Any]) -> Callable[..., Any]:
        def spy(*args: Any, **kwargs: Any) -> Any:
            threads.append(threading.current_thread())
            return function(*args, **kwargs)

        return spy

    monkeypatch.setattr(media, "prepared_image", spied(prepared_image))
    monkeypatch.setattr(media, "pdf_text", spied(pdf_text))
    await seed("logo.png", image((20, 20)))
    await seed("report.pdf", REPORT)
    image_of(await read(tools, ctx, "logo.png"))
    pages_of(await read(tools, ctx, "report.pdf"))
    assert len(threads) == 2
    assert threading.main_thread() not in threads


async def test_a_16_bit_gray_png_keeps_its_tones_when_downscaled(ctx: Context, seed: Seed) -> None:
    deep = Image.new("I;16", (400, 100), 30_000)  # a little under half of white
    out = io.BytesIO()
    deep.save(out, "PNG")
    await seed("deep.png", out.getvalue())
    result = await read(FsToolset(ToolsetOptions(max_image_edge=200)), ctx, "deep.png")
    data = image_of(result)
    assert data.image is not None
    assert (data.image.width, data.image.height) == (200, 50)
    with Image.open(io.BytesIO(result.media[0].data)) as sent:
        assert sent.convert("L").getpixel((10, 10)) == 117


@pytest.mark.parametrize(
    ("module", "extra", "name", "data"),
    [("PIL", "images", "chart.png", image((16, 8))), ("pypdf", "pdf", "paper.pdf", pdf("text"))],
)
async def test_without_its_extra_a_media_read_is_not_enabled_naming_the_extra(
    fs: Fs, monkeypatch: pytest.MonkeyPatch, module: str, extra: str, name: str, data: bytes
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as after pip install ctxfs-tools
    await fs.backend.write(name, data, expect=ABSENT)
    result = await read(FsToolset(), fs.context(owner="agent"), name)
    assert result.error_code is ErrorCode.NOT_ENABLED, result.text
    assert f"pip install 'ctxfs-tools[{extra}]'" in result.text
    assert result.structured["error"]["details"]["install"] == f"ctxfs-tools[{extra}]"


@pytest.mark.parametrize(
    ("first", "then", "shown"),
    [("image", "pdf", "--- page 1 of 1 ---\nhello"), ("image", "text", "1 just text now"),
     ("pdf", "image", "Returned the image f.bin (image/png")],
)  # fmt: skip
async def test_a_file_replaced_by_another_kind_while_read_is_read_as_it_is_now(
    fs: Fs, monkeypatch: pytest.MonkeyPatch, first: str, then: str, shown: str
) -> None:
    # Its first bytes tell how a read goes on; a file replaced after them (another kind
    # saved in its place) is read again, as what it is now, not fed to the other reader.
    kinds = {"image": image((10, 10)), "pdf": pdf("hello"), "text": b"just text now\n"}
    await fs.backend.write("f.bin", kinds[first], expect=ABSENT)
    ctx = fs.context(owner="a")
    head_read = type(ctx.fs).read_bytes

    async def replaced_after_the_head(self: Any, path: str, **options: Any) -> Any:
        got = await head_read(self, path, **options)
        if options.get("observe") is False:  # (someone saves another kind in its place)
            await fs.backend.write(path, kinds[then], expect=None)
        return got

    monkeypatch.setattr(type(ctx.fs), "read_bytes", replaced_after_the_head)
    result = await read(FsToolset(), ctx, "f.bin")
    assert not result.is_error, result.text
    assert result.text.startswith(shown)


async def test_a_photo_stored_turned_is_sent_upright_whatever_its_size(fs: Fs, seed: Seed) -> None:
    # Small enough to send as it is, it was sent as stored (60x20, the tag left to the
    # provider); large, it was turned: one photo, two orientations.
    await seed("small.jpg", image((60, 20), "JPEG", exif=turned(6)))
    shown = image_of(await read(FsToolset(), fs.context(owner="a"), "small.jpg"))
    assert shown.image is not None
    assert (shown.image.width, shown.image.height) == (20, 60)
