"""delete, move and create_directory through FsToolset.execute: guarded like edit."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ctxfs.core import ABSENT, Context, Fs, MemoryBackend, open_fs
from ctxfs.tools import FsToolset, ToolResult

pytestmark = pytest.mark.anyio


@pytest.fixture
async def backend() -> MemoryBackend:
    store = MemoryBackend()
    await store.write("a.txt", b"alpha\n", expect=ABSENT)
    await store.write("b.txt", b"beta\n", expect=ABSENT)
    return store


@pytest.fixture
async def ctx(backend: MemoryBackend) -> AsyncIterator[Context]:
    async with Fs(backend, load_entrypoints=False) as fs:
        yield fs.context(owner="agent")


async def call(ctx: Context, tool: str, **arguments: Any) -> ToolResult:
    return await FsToolset().execute(ctx, tool, arguments)


async def test_delete_needs_a_read_then_removes_the_file(
    ctx: Context, backend: MemoryBackend
) -> None:
    refused = await call(ctx, "delete", file_path="a.txt")
    assert refused.error_code == "not_observed"
    assert (await backend.read("a.txt")).data == b"alpha\n"
    await call(ctx, "read", file_path="a.txt")
    done = await call(ctx, "delete", file_path="a.txt")
    assert done.error_code is None, done.text
    assert done.text == "Deleted a.txt."
    assert (await call(ctx, "read", file_path="a.txt")).error_code == "not_found"


async def test_move_renames_and_the_file_counts_as_read_there(
    ctx: Context, backend: MemoryBackend
) -> None:
    await call(ctx, "read", file_path="a.txt")
    moved = await call(ctx, "move", source_path="a.txt", destination_path="pkg/a.txt")
    assert moved.error_code is None, moved.text
    assert moved.text == "Moved a.txt to pkg/a.txt."
    assert moved.structured["destination"] == "pkg/a.txt"
    assert moved.structured["version"] == (await backend.read("pkg/a.txt")).version
    edited = await call(ctx, "edit", file_path="pkg/a.txt", old_string="alpha", new_string="ALPHA")
    assert edited.error_code is None, edited.text


async def test_move_over_a_file_needs_overwrite_and_a_read_of_it(
    ctx: Context, backend: MemoryBackend
) -> None:
    await call(ctx, "read", file_path="a.txt")
    exists = await call(ctx, "move", source_path="a.txt", destination_path="b.txt")
    assert exists.error_code == "already_exists"
    assert "overwrite" in exists.structured["error"]["hint"]
    unread = await call(ctx, "move", source_path="a.txt", destination_path="b.txt", overwrite=True)
    assert unread.error_code == "not_observed"
    await call(ctx, "read", file_path="b.txt")
    done = await call(ctx, "move", source_path="a.txt", destination_path="b.txt", overwrite=True)
    assert done.error_code is None, done.text
    assert done.text == "Moved a.txt to b.txt (replacing the file there)."
    assert (await backend.read("b.txt")).data == b"alpha\n"


async def test_create_directory_makes_parents_and_is_idempotent(ctx: Context) -> None:
    for _ in range(2):
        made = await call(ctx, "create_directory", path="src/pkg/sub")
        assert made.error_code is None, made.text
    listed = await call(ctx, "list_dir", path="src/pkg")
    assert "sub/" in listed.text


async def test_create_directory_on_a_store_without_directories_says_it_made_nothing() -> None:
    # (An undo after it would undo the change before it: the model is told there is none.)
    async with open_fs(f"fsspec+memory://ctxfs-{uuid.uuid4().hex}/root") as fs:
        ctx = fs.context(owner="agent")
        made = await call(ctx, "create_directory", path="build/out")
        assert made.structured["implicit"] is True
        assert made.text.startswith("Nothing to make: on this store build/out/ appears with")
        assert "nothing to undo" in made.text


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("delete", {"file_path": "../x"}),
        ("move", {"source_path": "a.txt", "destination_path": "/etc/x"}),
        ("create_directory", {"path": "a/../../x"}),
        ("move", {"source_path": "a.txt"}),
    ],
)
async def test_bad_arguments_are_clear_errors_and_change_nothing(
    ctx: Context, backend: MemoryBackend, tool: str, arguments: dict[str, Any]
) -> None:
    before = sorted(entry.path for entry in await backend.list(""))
    await call(ctx, "read", file_path="a.txt")
    failed = await call(ctx, tool, **arguments)
    assert failed.error_code in {"invalid_path", "outside_root", "invalid_argument"}
    assert sorted(entry.path for entry in await backend.list("")) == before


async def test_the_annotations_say_what_each_tool_does(ctx: Context) -> None:
    offered = {tool.name: tool for tool in await FsToolset().tools(ctx)}
    assert (offered["delete"].destructive, offered["delete"].idempotent) == (True, False)
    assert (offered["move"].destructive, offered["move"].idempotent) == (True, False)
    made = offered["create_directory"]
    assert (made.read_only, made.destructive, made.idempotent) == (False, False, True)


# -- multi_edit and dry runs -------------------------------------------------------------------

SOURCE = b"def one():\r\n    return 1\r\n\r\ndef two():\r\n    return 2\r\n"


@pytest.fixture
async def source(backend: MemoryBackend) -> bytes:
    await backend.write("code.py", SOURCE, expect=ABSENT)
    return SOURCE


async def test_multi_edit_applies_each_edit_to_what_the_last_left(
    ctx: Context, backend: MemoryBackend, source: bytes
) -> None:
    await call(ctx, "read", file_path="code.py")
    edits = [
        {"old_string": "def one():", "new_string": "def first():"},
        {"old_string": "first():\n    return 1", "new_string": "first():\n    return 10"},
        {"old_string": "return", "new_string": "yield", "replace_all": True},
    ]
    done = await call(ctx, "multi_edit", file_path="code.py", edits=edits)
    assert done.error_code is None, done.text
    assert done.structured["edits"] == 3
    assert done.structured["replacements"] == 4
    assert done.text.startswith("Edited code.py: 3 edits, 4 replacements, lines 1-5.")
    data = (await backend.read("code.py")).data
    assert data == b"def first():\r\n    yield 10\r\n\r\ndef two():\r\n    yield 2\r\n"
    assert data.count(b"\r\n") == source.count(b"\r\n")  # every ending kept


async def test_a_multi_edit_whose_third_edit_fails_changes_nothing(
    ctx: Context, backend: MemoryBackend, source: bytes
) -> None:
    await call(ctx, "read", file_path="code.py")
    before = await backend.read("code.py")
    edits = [
        {"old_string": "one", "new_string": "uno"},
        {"old_string": "two", "new_string": "dos"},
        {"old_string": "def three", "new_string": "def tres"},
    ]
    failed = await call(ctx, "multi_edit", file_path="code.py", edits=edits)
    assert failed.error_code == "no_match"
    error = failed.structured["error"]
    assert error["details"]["edit"] == 2
    assert error["message"].startswith("edit 3 of 3")
    after = await backend.read("code.py")
    assert (after.data, after.version) == (before.data, before.version) == (source, before.version)


@pytest.mark.parametrize(
    ("edits", "code"),
    [
        ([], "invalid_argument"),
        ([{"old_string": "", "new_string": "x"}], "empty_old_string"),
        ([{"old_string": "one", "new_string": "uno"}, {"old_string": "x", "new_string": "x"}],
         "no_change"),
        ([{"old_string": "return", "new_string": "yield"}], "ambiguous_match"),
    ],
)  # fmt: skip
async def test_each_failing_edit_is_named_and_nothing_is_written(
    ctx: Context, backend: MemoryBackend, source: bytes, edits: list[dict[str, Any]], code: str
) -> None:
    await call(ctx, "read", file_path="code.py")
    failed = await call(ctx, "multi_edit", file_path="code.py", edits=edits)
    assert failed.error_code == code
    if edits:
        assert failed.structured["error"]["details"]["edit"] == len(edits) - 1
    assert (await backend.read("code.py")).data == source


@pytest.mark.parametrize("tool", ["edit", "multi_edit"])
async def test_a_dry_run_shows_the_diff_and_changes_nothing(
    ctx: Context, backend: MemoryBackend, source: bytes, tool: str
) -> None:
    edit = {"old_string": "return 2", "new_string": "return 3"}
    arguments = {"edits": [edit]} if tool == "multi_edit" else edit
    unread = await call(ctx, tool, file_path="code.py", dry_run=True, **arguments)
    assert unread.error_code == "not_observed"  # the guards run as for the real thing
    read = await call(ctx, "read", file_path="code.py")
    dry = await call(ctx, tool, file_path="code.py", dry_run=True, **arguments)
    assert dry.error_code is None, dry.text
    assert dry.text.startswith("Dry run, nothing written: would edit code.py:")
    assert "-    return 2" in dry.text
    assert "+    return 3" in dry.text
    assert dry.structured["written"] is False
    assert dry.structured["version"] == dry.structured["previous_version"]
    assert dry.structured["version"] == read.structured["version"]
    assert (await backend.read("code.py")).data == source
    done = await call(ctx, tool, file_path="code.py", **arguments)  # still observed as read
    assert done.error_code is None, done.text
    assert done.structured["written"] is True


async def test_move_carries_a_directory_whole(ctx: Context, backend: MemoryBackend) -> None:
    await backend.write("pkg/a.py", b"a\n", expect=ABSENT)
    await backend.write("pkg/sub/b.py", b"b\n", expect=ABSENT)
    moved = await call(ctx, "move", source_path="pkg", destination_path="lib/pkg")
    assert moved.error_code is None, moved.text
    assert moved.text == "Moved directory pkg to lib/pkg (3 entries in it)."
    assert moved.structured["directory"] is True
    assert (moved.structured["moved"], moved.structured.get("version", "absent")) == (3, "absent")
    assert (await backend.read("lib/pkg/sub/b.py")).data == b"b\n"
    assert (await call(ctx, "list_dir", path="pkg")).error_code == "not_found"
    over = await call(ctx, "move", source_path="lib", destination_path="c", overwrite=True)
    assert over.error_code == "invalid_argument"
    assert over.structured["error"]["hint"]


async def test_move_description_and_output_schema_cover_directories(ctx: Context) -> None:
    move = {tool.name: tool for tool in await FsToolset().tools(ctx)}["move"]
    assert "directory" in move.description

    assert move.output_schema is not None
    assert {"directory", "moved", "version"} <= set(move.output_schema["properties"])
