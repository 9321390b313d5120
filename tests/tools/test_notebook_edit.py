"""notebook_edit through FsToolset.execute and through the MCP server: guarded like edit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from ctxfs.core import ABSENT, Context, ErrorCode, Fs, MemoryBackend
from ctxfs.tools import FsToolset, ToolResult
from ctxfs.tools.mcpserver import McpTools, create_server
from tests.tools.conftest import Seed
from tests.tools.test_notebooks import NBFORMAT, SAMPLE, Style, cell_spans, code, markdown, notebook

pytestmark = pytest.mark.anyio

NB = "analysis/nb.ipynb"


async def call(tools: FsToolset, ctx: Context, **arguments: Any) -> ToolResult:
    return await tools.execute(ctx, "notebook_edit", arguments)


async def stored(fs: Fs, path: str = NB) -> bytes:
    return (await fs.backend.read(path)).data


async def test_a_notebook_must_be_read_before_a_cell_changes(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed
) -> None:
    data = NBFORMAT.dumps(SAMPLE)
    await seed(NB, data)
    refused = await call(tools, ctx, file_path=NB, cell_id="load", new_source="x = 1")
    assert refused.error_code is ErrorCode.NOT_OBSERVED
    assert await stored(fs) == data


async def test_a_cell_replaced_after_a_read_and_every_other_byte_kept(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed
) -> None:
    style = Style(indent=2, sort_keys=False, crlf=True, bom=True)
    data = style.dumps(SAMPLE)
    await seed(NB, data)
    assert (await tools.execute(ctx, "read", {"file_path": NB, "limit": 3})).error_code is None
    done = await call(tools, ctx, file_path=NB, cell_id="load", new_source="import polars as pl\n")
    assert done.error_code is None, done.text
    assert done.text == f"Replaced the source of cell load (code) in {NB}."
    new = await stored(fs)
    assert done.structured["version"] == (await fs.backend.read(NB)).version
    assert (done.structured["cell_id"], done.structured["index"], done.structured["cells"]) == (
        "load",
        1,
        4,
    )
    assert done.structured["previous_version"] != done.structured["version"]
    text, spans = cell_spans(data)
    start, end = spans[1]
    assert new.startswith(text[:start].encode())
    assert new.endswith(text[end:].encode())
    expected = json.loads(json.dumps(SAMPLE))
    expected["cells"][1]["source"] = ["import polars as pl\n"]
    assert new == style.dumps(expected)


async def test_insert_and_delete_follow_on_from_the_agents_own_edits(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed
) -> None:
    await seed(NB, NBFORMAT.dumps(SAMPLE))
    await tools.execute(ctx, "read", {"file_path": NB})
    inserted = await call(
        tools, ctx, file_path=NB, cell_id="plot", new_source="## Results", cell_type="markdown",
        edit_mode="insert",
    )  # fmt: skip
    assert inserted.error_code is None, inserted.text
    new_id = inserted.structured["cell_id"]
    assert inserted.text == f"Inserted markdown cell {new_id} at position 3 in {NB} (5 cells now)."
    first = await call(
        tools, ctx, file_path=NB, new_source="import os", cell_type="code", edit_mode="insert"
    )
    assert first.structured["index"] == 0
    deleted = await call(
        tools, ctx, file_path=NB, cell_id="intro", new_source="", edit_mode="delete"
    )
    assert deleted.text == f"Deleted cell intro (markdown) from {NB} (5 cells left)."
    retyped = await call(
        tools, ctx, file_path=NB, cell_id="load", new_source="Loading.", cell_type="markdown"
    )
    assert (
        retyped.text
        == f"Replaced cell load of {NB}: now markdown (was code and its outputs dropped)."
    )
    cells = json.loads(await stored(fs))["cells"]
    assert [cell.get("id") for cell in cells] == [
        first.structured["cell_id"], "load", "plot", new_id, "end",
    ]  # fmt: skip
    assert cells[1] == markdown("load", ["Loading."])


async def test_a_notebook_changed_since_the_read_is_stale_and_left_alone(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed
) -> None:
    await seed(NB, NBFORMAT.dumps(SAMPLE))
    await tools.execute(ctx, "read", {"file_path": NB})
    theirs = json.loads(json.dumps(SAMPLE))
    theirs["cells"][2]["source"] = "plt.show()\n"
    await fs.backend.write(NB, NBFORMAT.dumps(theirs), expect=None)  # a person saved it meanwhile
    refused = await call(tools, ctx, file_path=NB, cell_id="load", new_source="x = 1")
    assert refused.error_code is ErrorCode.STALE
    assert await stored(fs) == NBFORMAT.dumps(theirs)
    await tools.execute(ctx, "read", {"file_path": NB})  # read again: the edit goes through
    again = await call(tools, ctx, file_path=NB, cell_id="load", new_source="x = 1")
    assert again.error_code is None, again.text
    assert json.loads(await stored(fs))["cells"][2]["source"] == "plt.show()\n"


async def test_a_wrong_cell_id_lists_the_known_ones(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed
) -> None:
    data = NBFORMAT.dumps(SAMPLE)
    await seed(NB, data)
    await tools.execute(ctx, "read", {"file_path": NB})
    wrong = await call(tools, ctx, file_path=NB, cell_id="cell-x", new_source="x")
    assert wrong.error_code is ErrorCode.INVALID_ARGUMENT
    assert wrong.structured["error"]["details"]["known_ids"] == ["intro", "load", "plot", "end"]
    assert "intro, load, plot, end" in wrong.text
    untyped = await call(tools, ctx, file_path=NB, new_source="x", edit_mode="insert")
    assert untyped.structured["error"]["details"]["field"] == "cell_type"
    assert await stored(fs) == data


@pytest.mark.parametrize("edit_mode", ["replace", "delete", "insert"])
async def test_an_id_two_cells_share_is_ambiguous_and_each_is_named_by_position(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed, edit_mode: str
) -> None:
    data = NBFORMAT.dumps(notebook(code("dup", "first"), code("once", "x"), code("dup", "second")))
    await seed(NB, data)
    await tools.execute(ctx, "read", {"file_path": NB})
    arguments = {"cell_id": "dup", "new_source": "y", "cell_type": "code", "edit_mode": edit_mode}
    refused = await call(tools, ctx, file_path=NB, **arguments)
    assert refused.error_code is ErrorCode.AMBIGUOUS_MATCH, refused.text
    assert refused.structured["error"]["details"] == {"field": "cell_id", "cells": [0, 2]}
    assert "cell-0, cell-2" in refused.text
    assert await stored(fs) == data
    done = await call(tools, ctx, file_path=NB, **(arguments | {"cell_id": "cell-2"}))
    assert not done.is_error, done.text
    assert json.loads(await stored(fs))["cells"][0]["source"] == "first"


async def test_an_ambiguous_id_offers_no_position_another_cell_is_named(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed
) -> None:
    data = NBFORMAT.dumps(notebook(code("dup", "a"), code("cell-2", "b"), code("dup", "c")))
    await seed(NB, data)
    await tools.execute(ctx, "read", {"file_path": NB})
    refused = await call(tools, ctx, file_path=NB, cell_id="dup", new_source="y")
    assert refused.error_code is ErrorCode.AMBIGUOUS_MATCH
    assert "cell-2" not in refused.structured["error"]["hint"]
    assert await stored(fs) == data


async def test_a_file_that_is_not_a_notebook_is_refused_untouched(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed
) -> None:
    await seed("broken.ipynb", b'{"cells": [\n')
    await tools.execute(ctx, "read", {"file_path": "broken.ipynb"})
    refused = await call(tools, ctx, file_path="broken.ipynb", cell_id="cell-0", new_source="x")
    assert refused.error_code is ErrorCode.INVALID_ARGUMENT
    assert refused.structured["error"]["details"]["reason"] == "json"
    assert "is not a notebook: invalid JSON at line 2" in refused.text
    assert await stored(fs, "broken.ipynb") == b'{"cells": [\n'


async def test_a_notebook_without_ids_is_edited_by_index(
    fs: Fs, ctx: Context, tools: FsToolset, seed: Seed
) -> None:
    await seed(NB, NBFORMAT.dumps(notebook(markdown(None, "a"), code(None, "b"), minor=4)))
    await tools.execute(ctx, "read", {"file_path": NB})
    done = await call(
        tools, ctx, file_path=NB, cell_id="cell-0", new_source="c", cell_type="raw",
        edit_mode="insert",
    )  # fmt: skip
    assert done.structured["cell_id"] == "cell-1"
    assert done.text.endswith("Cells after it are numbered anew: use the new cell-N ids.")
    assert "id" not in json.loads(await stored(fs))["cells"][1]


async def test_the_schema_asks_what_a_cell_edit_needs(tools: FsToolset, ctx: Context) -> None:
    (offered,) = [tool for tool in await tools.definitions(ctx) if tool["name"] == "notebook_edit"]
    schema = offered["parameters"]
    assert schema["required"] == ["file_path", "new_source"]
    assert set(schema["properties"]) == {
        "file_path", "cell_id", "new_source", "cell_type", "edit_mode",
    }  # fmt: skip
    assert schema["properties"]["edit_mode"]["enum"] == ["replace", "insert", "delete"]
    strict = await tools.definitions(ctx, provider="openai")
    (function,) = [t["function"] for t in strict if t["function"]["name"] == "notebook_edit"]
    assert function["strict"] is True


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_notebook_edit_through_the_mcp_client() -> None:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    await fs.backend.write(NB, NBFORMAT.dumps(SAMPLE), expect=ABSENT)
    async with Client(create_server(McpTools(fs)), raise_exceptions=True) as client:
        tool = {tool.name: tool for tool in (await client.list_tools()).tools}["notebook_edit"]
        assert tool.annotations is not None
        assert tool.annotations.destructive_hint is True
        arguments = {"file_path": NB, "cell_id": "plot", "new_source": "plt.savefig('a.png')"}
        unread = await client.call_tool("notebook_edit", arguments)
        assert unread.is_error
        assert unread.structured_content is not None
        assert unread.structured_content["error"]["code"] == "not_observed"
        await client.call_tool("read", {"file_path": NB})
        done = await client.call_tool("notebook_edit", arguments)
        assert not done.is_error
        assert done.structured_content is not None
        assert done.structured_content["cell_id"] == "plot"
    cells = json.loads((await fs.backend.read(NB)).data)["cells"]
    assert cells[2]["source"] == "plt.savefig('a.png')"  # a string, as it was
