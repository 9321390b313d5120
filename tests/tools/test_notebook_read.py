"""read of a notebook: its cells with ids and outputs, its image outputs as images, in every shape.

And the read tool's ``encoding``: a file refused as ambiguous is read in a named candidate.
"""

from __future__ import annotations

import base64
import json
import sys

import pytest
from mcp import Client
from mcp.types import ImageContent, TextContent

from ctxfs.core import ABSENT, Context, ErrorCode, Fs, FsError, MemoryBackend, TextOptions
from ctxfs.tools import FsToolset, ToolResult, ToolsetOptions
from ctxfs.tools.builtin.read import ReadData
from ctxfs.tools.mcpserver import McpTools, create_server
from ctxfs.tools.results import anthropic_tool_result, openai_function_call_output
from tests.tools.conftest import Seed
from tests.tools.media import dimensions, image
from tests.tools.test_notebooks import NBFORMAT, code, markdown, notebook

pytestmark = pytest.mark.anyio

NB = "nb.ipynb"
PLOT = image((64, 48))


def plotted() -> bytes:
    display = {
        "output_type": "display_data",
        "data": {"image/png": base64.b64encode(PLOT).decode(), "text/plain": ["<Figure>"]},
        "metadata": {},
    }
    printed = {"output_type": "stream", "name": "stdout", "text": ["x = 3\n"]}
    return NBFORMAT.dumps(
        notebook(
            markdown("intro", "# Sales\n"),
            code("load", "x = 3\nprint(f'x = {x}')", printed, count=1),
            code("plot", "plt.plot([1, 2])", display, count=2),
        )
    )


async def read(tools: FsToolset, ctx: Context, **arguments: object) -> ToolResult:
    return await tools.execute(ctx, "read", {"file_path": NB, **arguments})


async def test_a_notebook_reads_as_cells_with_its_plot_as_an_image(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed(NB, plotted())
    result = await read(tools, ctx)
    assert result.error_code is None, result.text
    data = result.data_as(ReadData)
    assert data.kind == "notebook"
    assert data.notebook is not None
    assert (data.notebook.cells, data.notebook.first_cell, data.notebook.last_cell) == (1 + 2, 1, 3)
    assert data.notebook.next_cell is None
    assert data.notebook.images == 1
    for shown in ('<cell id="intro"', '<cell id="load"', "x = 3\n", "[image 1: image/png"):
        assert shown in result.text
    assert result.text.endswith("(end of notebook; change a cell with notebook_edit and its id)")
    (part,) = result.media
    assert part.media_type == "image/png"
    assert part.data == PLOT  # small enough to be sent as it is
    assert "image" not in json.dumps(result.structured["notebook"]).replace("images", "")
    assert "data" not in result.structured  # no bytes in the structured form


async def test_the_reply_of_each_provider_carries_the_plot(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed(NB, plotted())
    result = await read(tools, ctx)
    anthropic = anthropic_tool_result(result, "toolu_1")
    blocks = [block["type"] for block in anthropic["content"]]
    assert blocks == ["text", "image"]
    assert base64.b64decode(anthropic["content"][1]["source"]["data"]) == PLOT
    openai = openai_function_call_output(result, "call_1")
    kinds = [item["type"] for item in openai["output"]]
    assert kinds == ["input_text", "input_image"]
    assert openai["output"][1]["image_url"].startswith("data:image/png;base64,")


async def test_without_pillow_a_notebook_reads_with_its_plot_left_out(
    tools: FsToolset, ctx: Context, seed: Seed, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)  # as without ctxfs-tools[images]
    await seed(NB, plotted())
    result = await read(tools, ctx)
    assert result.error_code is None, result.text
    notebook = result.data_as(ReadData).notebook
    assert notebook is not None
    assert (notebook.images, notebook.left_out_images) == (0, 1)
    assert "[image/png image: not attached: " in result.text
    assert "[image 1:" not in result.text
    assert result.media == ()


async def test_cells_page_by_offset_and_limit_and_a_read_licenses_notebook_edit(
    fs: Fs, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed(NB, plotted())
    second = await read(tools, ctx, offset=2, limit=1)
    assert second.error_code is None, second.text
    info = second.data_as(ReadData).notebook
    assert info is not None
    assert (info.first_cell, info.last_cell, info.next_cell) == (2, 2, 3)
    assert '<cell id="load"' in second.text
    assert '<cell id="intro"' not in second.text
    assert "continue with offset=3, from cell plot" in second.text
    past = await read(tools, ctx, offset=9)
    assert past.error_code is ErrorCode.INVALID_ARGUMENT
    assert past.data.error is not None
    assert past.data.error.details["field"] == "offset"
    assert "no cell 9" in past.text
    replaced = await tools.execute(ctx, "write", {"file_path": NB, "content": "{}"})
    assert replaced.error_code is ErrorCode.NOT_OBSERVED  # (one cell of three was shown)
    assert "only part of nb.ipynb has been read" in replaced.text
    edited = await tools.execute(
        ctx, "notebook_edit", {"file_path": NB, "cell_id": "intro", "new_source": "# Costs\n"}
    )
    assert edited.error_code is None, edited.text
    assert json.loads((await fs.backend.read(NB)).data)["cells"][0]["source"] == "# Costs\n"


async def test_a_read_of_every_cell_licenses_writing_the_notebook_over(
    fs: Fs, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed(NB, plotted())
    assert (await read(tools, ctx)).error_code is None
    replaced = await tools.execute(ctx, "write", {"file_path": NB, "content": "{}\n"})
    assert replaced.error_code is None, replaced.text
    assert (await fs.backend.read(NB)).data == b"{}\n"


async def test_a_cell_cut_to_fit_the_read_licenses_no_write(tools: FsToolset) -> None:
    fs = Fs(
        MemoryBackend(), load_entrypoints=False, text_options=TextOptions(max_output_chars=3000)
    )
    big = json.dumps(notebook(code("big", "x = 1\n" * 2000))).encode()
    await fs.backend.write(NB, big, expect=ABSENT)
    ctx = fs.context(owner="a")
    shown = await read(tools, ctx)
    assert "the rest of this cell did not fit" in shown.text
    replaced = await tools.execute(ctx, "write", {"file_path": NB, "content": "{}\n"})
    assert replaced.error_code is ErrorCode.NOT_OBSERVED, replaced.text


async def test_a_notebook_changed_after_the_read_is_stale_for_notebook_edit(
    fs: Fs, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed(NB, plotted())
    await read(tools, ctx)
    current = await fs.backend.read(NB)
    changed = current.data.replace(b"# Sales", b"# Sold!")
    await fs.backend.write(NB, changed, expect=current.version)
    refused = await tools.execute(
        ctx, "notebook_edit", {"file_path": NB, "cell_id": "intro", "new_source": "x"}
    )
    assert refused.error_code is ErrorCode.STALE
    assert (await fs.backend.read(NB)).data == changed


async def test_a_file_named_ipynb_that_is_no_notebook_reads_as_text(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed(NB, b'{"not": "a notebook"}\n')
    result = await read(tools, ctx)
    assert result.error_code is None, result.text
    assert result.data_as(ReadData).kind == "text"
    assert result.text.startswith('1 {"not": "a notebook"}')


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"cells": [1, 2', "invalid JSON at line 1 column 16 (Expecting ',' delimiter)"),
        ('{"cells": {}, "nbformat": 4}\n', "its JSON has no list of cells"),
        ("[" * 200_000 + "]" * 200_000, "its JSON is nested too deep"),
    ],
    ids=["broken JSON", "cells not a list", "nested 200,000 deep"],
)
async def test_a_malformed_notebook_reads_as_text_saying_why_it_is_none(
    tools: FsToolset, ctx: Context, seed: Seed, content: str, why: str
) -> None:
    await seed(NB, content.encode())
    shown = await read(tools, ctx)
    assert shown.error_code is None, shown.text
    data = shown.data_as(ReadData)
    assert data.kind == "text"
    assert data.not_a_notebook is not None
    assert why in data.not_a_notebook
    assert shown.text.endswith(f"\n({data.not_a_notebook}; it is shown as text)")
    edited = await tools.execute(
        ctx, "notebook_edit", {"file_path": NB, "cell_id": "a", "new_source": "x"}
    )
    assert edited.structured["error"]["message"] == data.not_a_notebook  # the one reason


async def test_pages_do_not_apply_to_a_notebook_and_an_encoding_reads_it_as_text(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed(NB, plotted())
    refused = await read(tools, ctx, pages="1")
    assert refused.error_code is ErrorCode.INVALID_ARGUMENT
    assert refused.data.error is not None
    assert refused.data.error.details["field"] == "pages"
    as_text = await read(tools, ctx, encoding="utf-8", limit=2)
    assert as_text.text.startswith('1 {\n2  "cells": [\n'), as_text.text


async def test_mcp_clients_get_the_cells_as_text_and_the_plot_as_image_content() -> None:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    await fs.backend.write(NB, plotted(), expect=ABSENT)
    async with Client(create_server(McpTools(fs)), raise_exceptions=True) as client:
        shown = await client.call_tool("read", {"file_path": NB})
    assert not shown.is_error
    text, picture = shown.content
    assert isinstance(text, TextContent)
    assert '<cell id="plot"' in text.text
    assert isinstance(picture, ImageContent)
    assert picture.mime_type == "image/png"
    assert dimensions(base64.b64decode(picture.data)) == ("PNG", (64, 48))
    assert shown.structured_content is not None
    assert shown.structured_content["kind"] == "notebook"


async def test_a_file_refused_as_ambiguous_is_read_in_the_encoding_named(
    fs: Fs, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    raw = "שלום עולם\n".encode("cp1255")
    await seed("he.txt", raw)
    refused = await tools.execute(ctx, "read", {"file_path": "he.txt"})
    assert refused.error_code is ErrorCode.ENCODING_ERROR
    assert refused.data.error is not None
    candidates = refused.data.error.details["encodings"]
    assert "cp1255" in candidates
    assert all(name in refused.text for name in candidates)
    shown = await tools.execute(ctx, "read", {"file_path": "he.txt", "encoding": "cp1255"})
    assert shown.text.startswith("1 שלום עולם\n")
    assert "(decoded as cp1255; changes keep that encoding)" in shown.text
    edited = await tools.execute(
        ctx, "edit", {"file_path": "he.txt", "old_string": "עולם", "new_string": "חבר"}
    )
    assert edited.error_code is None, edited.text
    assert (await fs.backend.read("he.txt")).data == "שלום חבר\n".encode("cp1255")
    unknown = await tools.execute(ctx, "read", {"file_path": "he.txt", "encoding": "klingon"})
    assert unknown.error_code is ErrorCode.INVALID_ARGUMENT


async def test_a_refused_read_licenses_nothing(
    fs: Fs, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("blob.bin", b"\x00\x01binary\x00" * 10)
    await seed("big.png", image((300, 300), noise=True))
    small = FsToolset(options=ToolsetOptions(max_media_bytes=1_000))
    assert (await tools.execute(ctx, "read", {"file_path": "blob.bin"})).error_code is (
        ErrorCode.BINARY_FILE
    )
    refused = await small.execute(ctx, "read", {"file_path": "big.png"})
    assert refused.error_code is ErrorCode.TOO_LARGE, refused.text
    for name in ("blob.bin", "big.png"):
        deleted = await tools.execute(ctx, "delete", {"file_path": name})
        assert deleted.error_code is ErrorCode.NOT_OBSERVED, (name, deleted.text)
    assert (await fs.backend.read("blob.bin")).data.startswith(b"\x00\x01binary")


async def test_a_notebook_too_large_for_cells_is_read_and_edited_as_text(
    fs: Fs, ctx: Context, seed: Seed
) -> None:
    await seed("big.ipynb", plotted())
    small = FsToolset(options=ToolsetOptions(max_media_bytes=1_000))
    shown = await small.execute(ctx, "read", {"file_path": "big.ipynb", "limit": 3})
    assert not shown.is_error, shown.text
    assert shown.text.startswith('1 {\n2  "cells": [\n')
    assert "more than read shows as cells (1000 B); it is shown as text)" in shown.text
    paged = await small.execute(ctx, "read", {"file_path": "big.ipynb", "pages": "1"})
    assert paged.error_code is ErrorCode.INVALID_ARGUMENT
    edited = await small.execute(
        ctx, "edit", {"file_path": "big.ipynb", "old_string": '"cells"', "new_string": '"cells" '}
    )
    assert not edited.is_error, edited.text


async def test_a_notebook_not_in_utf_8_is_read_in_the_encoding_named_and_edited(
    fs: Fs, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("n.ipynb", '{"cells": [], "metadata": {"a": "é"}, "nbformat": 4}'.encode("cp1252"))
    named = await tools.execute(ctx, "read", {"file_path": "n.ipynb", "encoding": "cp1252"})
    assert not named.is_error, named.text
    assert "(decoded as cp1252; changes keep that encoding)" in named.text
    edited = await tools.execute(
        ctx, "edit", {"file_path": "n.ipynb", "old_string": '"a"', "new_string": '"b"'}
    )
    assert not edited.is_error, edited.text
    assert (await fs.backend.read("n.ipynb")).data.endswith(b'{"b": "\xe9"}, "nbformat": 4}')


async def test_a_byte_read_without_observing_licenses_nothing(
    fs: Fs, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", b"hello\n")
    peeked = await ctx.fs.read_bytes("a.txt", length=2, observe=False)
    assert (peeked.data, peeked.size) == (b"he", 6)
    with pytest.raises(FsError) as refused:
        await ctx.fs.delete("a.txt")
    assert refused.value.code is ErrorCode.NOT_OBSERVED


@pytest.mark.parametrize(
    "content",
    [
        '{"cells": [], "metadata": ' + "[" * 5000 + "]" * 5000 + ', "nbformat": 4}',
        '{"cells": [], "metadata": {"n": ' + "9" * 5000 + '}, "nbformat": 4}',
    ],
    ids=["nested too deep", "a number too long"],
)
async def test_json_no_reader_takes_is_text_to_read_and_refused_to_edit(
    tools: FsToolset, ctx: Context, seed: Seed, content: str
) -> None:
    await seed(NB, content.encode())
    shown = await read(tools, ctx)
    assert shown.error_code is None, shown.text
    assert shown.data_as(ReadData).kind == "text"
    edited = await tools.execute(
        ctx, "notebook_edit", {"file_path": NB, "cell_id": "a", "new_source": "x"}
    )
    assert edited.error_code is ErrorCode.INVALID_ARGUMENT, edited.text


async def test_a_cell_with_outputs_of_another_shape_is_still_replaced(
    fs: Fs, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    content = notebook(code("odd", "x = 1"))
    content["cells"][0]["outputs"] = 5
    await seed(NB, NBFORMAT.dumps(content))
    await read(tools, ctx)
    edited = await tools.execute(
        ctx, "notebook_edit", {"file_path": NB, "cell_id": "odd", "new_source": "x = 2"}
    )
    assert edited.error_code is None, edited.text
    assert json.loads((await fs.backend.read(NB)).data)["cells"][0]["outputs"] == 5


async def test_a_number_json_cannot_hold_is_never_written_as_infinity(
    fs: Fs, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    content = notebook(code("big", "x = 1"))
    content["cells"][0]["metadata"] = {"huge": 1e400}
    data = NBFORMAT.dumps(content).replace(b"Infinity", b"1e400")
    await seed(NB, data)
    await read(tools, ctx)
    edited = await tools.execute(
        ctx,
        "notebook_edit",
        {"file_path": NB, "cell_id": "big", "new_source": "# t", "cell_type": "markdown"},
    )
    written = (await fs.backend.read(NB)).data
    assert b"Infinity" not in written
    if edited.error_code is None:
        json.loads(written, parse_constant=lambda name: pytest.fail(f"{name} written"))
    else:
        assert edited.error_code is ErrorCode.INVALID_ARGUMENT, edited.text
        assert written == data


async def test_the_plots_one_read_returns_stay_within_a_request(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    plot = image((500, 400), noise=True)
    display = {
        "output_type": "display_data",
        "data": {"image/png": base64.b64encode(plot).decode()},
        "metadata": {},
    }
    cells = [code(f"c{n}", "plot()", display, count=n) for n in range(6)]
    await seed(NB, NBFORMAT.dumps(notebook(*cells)))
    small = FsToolset(options=ToolsetOptions(max_image_bytes=len(plot) + 10))
    result = await small.execute(ctx, "read", {"file_path": NB})
    info = result.data_as(ReadData).notebook
    assert info is not None
    assert len(result.media) == info.images == 2
    assert info.left_out_images == 4
    assert "4 image outputs not returned" in result.text
    assert result.text.count("[image/png image: not attached: no room left in this read]") == 4
    assert "[image 2: image/png, attached]" in result.text


async def test_an_image_output_left_out_is_named_so_and_the_attached_numbered_in_order(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    # The images come back unlabelled, in order: the text's numbers are theirs.
    outputs = [
        {"output_type": "display_data", "data": {"image/png": data}, "metadata": {}}
        for data in (base64.b64encode(b"\x89PNG\r\n\x1a\n damaged").decode(),
                     base64.b64encode(image((20, 10))).decode())
    ]  # fmt: skip
    said = markdown("doc", "A plot shows as\n[image 2: image/png, attached]")
    await seed(NB, NBFORMAT.dumps(notebook(said, code("c1", "plot()", *outputs))))
    result = await read(tools, ctx)
    assert len(result.media) == 1
    assert "[image/png image: not attached: starts like a PNG image but cannot be decoded" in (
        result.text
    )
    assert "[image 1: image/png, attached]" in result.text
    assert "A plot shows as\n[image 2: image/png, attached]\n</cell>" in result.text  # as it is
