"""The session memory, as the model meets it: short re-reads, stale diffs, changes, undo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxfs.core import ABSENT, Context, ErrorCode, Fs, NotFound, open_fs
from ctxfs.tools import Exposure, FsToolset, ToolsetOptions
from ctxfs.tools.builtin.read import ReadData
from ctxfs.tools.mcpserver import FORGET_SHOWN_META_KEY, McpTools, create_server
from ctxfs.tools.results import ToolResult, UndoData

pytestmark = pytest.mark.anyio

EDITOR = "str_replace_based_edit_tool"
CTXFS = [sys.executable, "-m", "ctxfs.tools.cli"]


@pytest.fixture(params=["memory", "local"])
async def fs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Fs]:
    where = "memory://" if request.param == "memory" else str(tmp_path)
    async with open_fs(where, load_entrypoints=False, lock_timeout=0.5) as opened:
        yield opened


@pytest.fixture
def ctx(fs: Fs) -> Context:
    return fs.context(owner="agent")


@pytest.fixture
def other(fs: Fs) -> Context:
    return fs.context(owner="someone-else")


async def call(
    ctx: Context, name: str, arguments: dict[str, Any], *, tools: FsToolset | None = None
) -> ToolResult:
    toolset = tools or FsToolset()
    if name == EDITOR:
        return await toolset.execute(ctx, name, arguments, provider="anthropic")
    return await toolset.execute(ctx, name, arguments)


async def deferred(ctx: Context, name: str, arguments: dict[str, Any]) -> ToolResult:
    """A call of a deferred tool, as the model makes it: through call_tool."""
    return await call(ctx, "call_tool", {"name": name, "arguments": arguments})


async def written(ctx: Context, path: str, content: str) -> None:
    result = await call(ctx, "write", {"file_path": path, "content": content})
    assert not result.is_error, result.text


# -- an unchanged re-read is one line ------------------------------------------------------------


async def test_a_reread_after_the_owners_own_edit_of_a_file_it_saw_whole_is_one_line(
    ctx: Context, other: Context
) -> None:
    await written(ctx, "notes.md", "one\ntwo\nthree\n")
    await written(ctx, "part.md", "".join(f"line {n}\n" for n in range(50)))
    assert not (await call(ctx, "read", {"file_path": "notes.md"})).is_error
    assert not (await call(ctx, "read", {"file_path": "part.md", "limit": 10})).is_error
    for path, old in (("notes.md", "two"), ("part.md", "line 3\n")):
        edit = {"file_path": path, "old_string": old, "new_string": "changed"}
        assert not (await call(ctx, "edit", edit)).is_error
    again = await call(ctx, "read", {"file_path": "notes.md"})
    assert again.data_as(ReadData).unchanged  # it saw the whole file, and made the change
    window = await call(ctx, "read", {"file_path": "part.md", "limit": 10})
    assert not window.data_as(ReadData).unchanged  # a window only: its lines may have moved
    edit = {"file_path": "notes.md", "old_string": "one", "new_string": "1"}
    assert not (await call(other, "read", {"file_path": "notes.md"})).is_error
    assert not (await call(other, "edit", edit)).is_error
    theirs = await call(ctx, "read", {"file_path": "notes.md"})
    assert theirs.text.startswith("1 1\n")  # someone else's change: the text


async def test_an_unchanged_reread_is_one_line_until_asked_fresh_or_forgotten(
    ctx: Context, other: Context
) -> None:
    await written(ctx, "notes.md", "one\ntwo\nthree\n")
    first = await call(ctx, "read", {"file_path": "notes.md"})
    assert first.text.startswith("1 one\n")
    again = await call(ctx, "read", {"file_path": "notes.md"})
    version = first.data_as(ReadData).version
    assert again.text == (
        "(notes.md is as you last saw it (your reads and your own changes): "
        f"version {version}, 3 lines; pass fresh: true to see it again)"
    )
    assert "content" not in again.structured
    assert again.structured["unchanged"] is True
    assert (again.structured["version"], again.structured["total_lines"]) == (version, 3)
    assert "unchanged" not in first.structured  # at its default: left out
    fresh = await call(ctx, "read", {"file_path": "notes.md", "fresh": True})
    assert fresh.text == first.text
    assert (await call(ctx, "read", {"file_path": "notes.md"})).data_as(ReadData).unchanged
    ctx.forget_shown()  # the harness compacted the conversation
    assert (await call(ctx, "read", {"file_path": "notes.md"})).text == first.text
    assert (await call(other, "read", {"file_path": "notes.md"})).text == first.text  # its own
    edit = {"file_path": "notes.md", "old_string": "two", "new_string": "2"}
    assert not (await call(other, "edit", edit)).is_error
    changed = await call(ctx, "read", {"file_path": "notes.md"})  # another version
    assert changed.text.startswith("1 one\n2 2\n")
    assert changed.structured["content"] == "one\n2\nthree\n"


async def test_a_version_seen_before_another_is_shown_again(ctx: Context, other: Context) -> None:
    await written(ctx, "notes.md", "one\ntwo\n")
    first = await call(ctx, "read", {"file_path": "notes.md"})
    edit = {"file_path": "notes.md", "old_string": "two", "new_string": "2"}
    assert not (await call(ctx, "edit", edit)).is_error
    assert not (await deferred(ctx, "undo", {})).is_error  # back to the version first shown
    assert (await call(ctx, "read", {"file_path": "notes.md"})).text == first.text
    assert not (await call(other, "read", {"file_path": "notes.md"})).is_error
    assert not (await call(other, "edit", edit)).is_error  # someone else's version, then
    assert (await call(ctx, "read", {"file_path": "notes.md"})).text.startswith("1 one\n2 2\n")
    back = {"file_path": "notes.md", "old_string": "2", "new_string": "two"}
    assert not (await call(other, "edit", back)).is_error  # ... the first one again
    assert (await call(ctx, "read", {"file_path": "notes.md"})).text == first.text


async def test_a_window_is_its_offset_and_limit_as_asked(ctx: Context) -> None:
    await written(ctx, "notes.md", "one\ntwo\nthree\n")
    head = {"file_path": "notes.md", "limit": 2}
    assert (await call(ctx, "read", head)).text.startswith("1 one\n2 two\n")
    assert (await call(ctx, "read", {"file_path": "notes.md"})).text.startswith("1 one\n")
    short = await call(ctx, "read", head)
    assert short.text.startswith("(lines 1-2 of notes.md are unchanged since you read them")
    assert short.text.endswith("; continue with offset=3)")
    assert (await call(ctx, "read", {**head, "offset": 2})).text.startswith("2 two\n3 three\n")


async def test_a_window_not_shown_whole_or_decoded_on_request_is_shown_again(
    ctx: Context,
) -> None:
    await written(ctx, "long.txt", "x" * 5000 + "\n")  # cut at the line limit
    for _ in range(2):
        read = await call(ctx, "read", {"file_path": "long.txt"})
        assert read.structured["truncated_lines"] == [1]
    await written(ctx, "latin.txt", "caf\u00e9\n")
    for _ in range(2):
        read = await call(ctx, "read", {"file_path": "latin.txt", "encoding": "utf-8"})
        assert read.structured["content"] == "caf\u00e9\n"


async def test_short_rereads_can_be_turned_off(ctx: Context) -> None:
    tools = FsToolset(ToolsetOptions(short_rereads=False))
    await written(ctx, "notes.md", "one\n")
    texts = [(await call(ctx, "read", {"file_path": "notes.md"}, tools=tools)).text for _ in "ab"]
    assert texts == ["1 one\n(end of file; lines 1-1 of 1)"] * 2


async def test_the_text_editor_s_view_always_shows_the_text(ctx: Context) -> None:
    await written(ctx, "notes.md", "one\n")
    view = {"command": "view", "path": "notes.md"}
    texts = [(await call(ctx, EDITOR, view)).text for _ in "ab"]
    assert texts == ["1 one\n(end of file; lines 1-1 of 1)"] * 2
    assert (await call(ctx, "read", {"file_path": "notes.md"})).data_as(ReadData).unchanged


# -- a stale edit shows the diff; the corrected edit needs no read ---------------------------------


async def test_a_stale_edit_shows_the_diff_and_the_corrected_edit_needs_no_read(
    ctx: Context, other: Context
) -> None:
    await written(ctx, "app.py", "x = 1\ny = 2\n")
    await call(other, "read", {"file_path": "app.py"})
    assert not (await call(other, "edit", _edit("app.py", "x = 1", "x = 10"))).is_error
    stale = await call(ctx, "edit", _edit("app.py", "x = 1", "x = 3"))
    assert stale.error_code is ErrorCode.STALE
    assert "-x = 1\n+x = 10" in stale.text
    assert "no read needed" in stale.text
    corrected = await call(ctx, "edit", _edit("app.py", "x = 10", "x = 3"))
    assert not corrected.is_error, corrected.text


# -- changes -----------------------------------------------------------------------------------------


async def test_changes_lists_the_files_changed_since_with_their_diffs(
    ctx: Context, other: Context
) -> None:
    await written(ctx, "src/app.py", "x = 1\n")
    await written(ctx, "notes.md", "notes\n")
    await written(ctx, "gone.md", "bye\n")
    assert (await deferred(ctx, "changes", {})).text == "(no file you read or wrote changed since)"
    for path in ("src/app.py", "gone.md"):
        await call(other, "read", {"file_path": path})
    assert not (await call(other, "edit", _edit("src/app.py", "x = 1", "x = 2"))).is_error
    assert not (await call(other, "delete", {"file_path": "gone.md"})).is_error
    listed = await deferred(ctx, "changes", {})
    assert not listed.is_error, listed.text
    files = {file["path"]: file for file in listed.structured["files"]}
    assert set(files) == {"src/app.py", "gone.md"}
    assert files["src/app.py"]["diff_whole"] is True
    assert "-x = 1\n+x = 2" in files["src/app.py"]["diff"]
    assert "current" not in files["gone.md"]
    assert "src/app.py: version xxh3:" in listed.text
    assert "-x = 1\n+x = 2" in listed.text
    assert "gone.md: deleted (you saw version" in listed.text
    assert listed.text.endswith("(read a file again before you change it)")
    under = await deferred(ctx, "changes", {"path": "src"})
    assert [file["path"] for file in under.structured["files"]] == ["src/app.py"]
    stale = await call(ctx, "edit", _edit("src/app.py", "x = 2", "x = 3"))
    assert stale.error_code is ErrorCode.STALE  # listing changes is no read


async def test_changes_says_what_took_a_files_place(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    names = ["dir.txt", "fifo.txt", "gone.txt", "link.txt", "loop.txt", "sub/below.txt"]
    async with open_fs(str(root), load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        for name in names:
            (root / name).write_text("x\n")
            await ctx.fs.read(name)
        for name in names[:5]:
            (root / name).unlink()
        (root / "dir.txt").mkdir()
        os.mkfifo(root / "fifo.txt")
        (root / "link.txt").symlink_to(outside / "secret.txt")
        (root / "loop.txt").symlink_to("loop.txt")
        (root / "sub").rename(root / "moved")
        (root / "sub").symlink_to(outside)
        listed = await deferred(ctx, "changes", {})
    files = listed.structured["files"]
    assert [(file["path"], file.get("current_kind")) for file in files] == [
        ("dir.txt", "directory"),
        ("fifo.txt", "other"),
        ("gone.txt", None),
        ("link.txt", "symlink"),
        ("loop.txt", "symlink"),
        ("sub/below.txt", "symlink"),
    ]
    lines = [line.split(" (you saw")[0] for line in listed.text.splitlines()[1:-1]]
    assert lines == [
        "dir.txt: a directory now",
        "fifo.txt: a special file now (not a regular file)",
        "gone.txt: deleted",
        "link.txt: a link out of the root or in a loop now (it or a parent directory)",
        "loop.txt: a link out of the root or in a loop now (it or a parent directory)",
        "sub/below.txt: a link out of the root or in a loop now (it or a parent directory)",
    ]
    assert "secret" not in listed.text


async def test_changes_holds_diffs_up_to_the_output_limit(
    fs: Fs, ctx: Context, other: Context
) -> None:
    fs.text_options = replace(fs.text_options, max_output_chars=2_000, max_line_chars=100)
    paths = [f"f{number:02}.txt" for number in range(20)]
    for path in paths:
        await written(ctx, path, "old line\n" * 50)
        await call(other, "read", {"file_path": path})
        rewritten = await call(other, "write", {"file_path": path, "content": "new line\n" * 50})
        assert not rewritten.is_error, rewritten.text
    listed = await deferred(ctx, "changes", {})
    files = listed.structured["files"]
    assert [file["path"] for file in files] == paths
    shown = [file for file in files if "diff" in file]
    assert shown
    assert sum(len(file["diff"]) for file in shown) <= 2_000
    assert all(file["diff_left_out"] for file in files[len(shown) :])
    assert [bool(file.get("diff_whole")) for file in files] == [True] * len(shown) + [False] * (
        len(paths) - len(shown)
    )
    assert len(listed.text) < 2_000 + 200 * len(paths)  # each file a line or two besides
    assert "(diff left out, the answer being long: ask for this path alone)" in listed.text
    alone = await deferred(ctx, "changes", {"path": paths[-1]})
    assert "-old line" in alone.text


# -- undo ----------------------------------------------------------------------------------------


async def test_undo_puts_back_the_last_change(fs: Fs, ctx: Context) -> None:
    await written(ctx, "app.py", "x = 1\n")
    assert not (await call(ctx, "edit", _edit("app.py", "x = 1", "x = 2"))).is_error
    dry = await deferred(ctx, "undo", {"dry_run": True})
    assert not dry.is_error, dry.text
    assert dry.text.startswith("Dry run, nothing written: undoing your last change would put back")
    assert dry.structured["written"] is False
    assert (await fs.backend.read("app.py")).data == b"x = 2\n"
    undone = await deferred(ctx, "undo", {})
    assert not undone.is_error, undone.text
    assert undone.text.startswith("Undid your last change: put back 1 file.\n  app.py: back to")
    assert undone.data_as(UndoData).steps == [2]
    assert (await fs.backend.read("app.py")).data == b"x = 1\n"
    removed = await deferred(ctx, "undo", {})
    assert "app.py: removed (you had created it or moved it there)" in removed.text
    assert not await exists(fs, "app.py")
    nothing = await deferred(ctx, "undo", {})
    assert nothing.error_code is ErrorCode.INVALID_ARGUMENT


async def test_undo_says_a_directory_moved_back_is_back(fs: Fs, ctx: Context) -> None:
    await written(ctx, "src/pkg/mod.py", "x = 1\n")
    moved = await call(ctx, "move", {"source_path": "src/pkg", "destination_path": "lib/pkg"})
    assert not moved.is_error, moved.text
    undone = await deferred(ctx, "undo", {})
    assert not undone.is_error, undone.text
    assert undone.text.startswith("Undid your last change: moved back 1 directory and removed")
    assert "  src/pkg/: moved back from lib/pkg/, with its files" in undone.text
    assert "you had created" not in undone.text
    assert undone.structured["files"] == [{"path": "src/pkg", "moved_back_from": "lib/pkg"}]
    assert (await fs.backend.read("src/pkg/mod.py")).data == b"x = 1\n"


async def test_a_write_that_changes_nothing_is_no_step_to_undo(fs: Fs, ctx: Context) -> None:
    await written(ctx, "app.py", "x = 1\n")
    assert not (await call(ctx, "edit", _edit("app.py", "x = 1", "x = 2"))).is_error
    same = await call(ctx, "write", {"file_path": "app.py", "content": "x = 2\n"})
    assert "nothing changed" in same.text
    same = await call(ctx, EDITOR, {"command": "create", "path": "app.py", "file_text": "x = 2\n"})
    assert not same.is_error, same.text
    undone = await call(ctx, EDITOR, {"command": "undo_edit", "path": "app.py"})
    assert undone.text.startswith("Undid your last edit of app.py: put back 1 file."), undone.text
    assert (await fs.backend.read("app.py")).data == b"x = 1\n"


async def test_undo_removes_the_directory_create_directory_made(fs: Fs, ctx: Context) -> None:
    made = await call(ctx, "create_directory", {"path": "pkg/sub"})
    assert not made.is_error, made.text
    await written(ctx, "pkg/sub/mod.py", "x = 1\n")
    dry = await deferred(ctx, "undo", {"steps": 2, "dry_run": True})
    assert dry.text.splitlines()[:3] == [
        "Dry run, nothing written: undoing your last 2 changes would put back 1 file and "
        "remove 2 directories.",
        "  pkg/sub/: removed (you had made the directory)",
        "  pkg/: removed (you had made the directory)",
    ]
    undone = await deferred(ctx, "undo", {"steps": 2})
    assert undone.text.startswith(
        "Undid your last 2 changes: put back 1 file and removed 2 directories."
    )
    assert undone.data_as(UndoData).directories == ["pkg/sub", "pkg"]
    assert not await exists(fs, "pkg")


async def test_undo_rewinds_to_a_checkpoint_by_id_or_label(fs: Fs, ctx: Context) -> None:
    await written(ctx, "app.py", "x = 1\n")
    mark = await ctx.fs.checkpoint("prompt 1")
    assert not (await call(ctx, "edit", _edit("app.py", "x = 1", "x = 2"))).is_error
    await written(ctx, "notes.md", "done\n")
    unknown = await deferred(ctx, "undo", {"checkpoint": "nope"})
    assert unknown.error_code is ErrorCode.INVALID_ARGUMENT
    assert f"yours: {mark.id} (prompt 1)" in unknown.text
    both = await deferred(ctx, "undo", {"checkpoint": mark.id, "steps": 2})
    assert both.error_code is ErrorCode.INVALID_ARGUMENT
    dry = await deferred(ctx, "undo", {"checkpoint": "prompt 1", "dry_run": True})
    assert {file["path"] for file in dry.structured["files"]} == {"app.py", "notes.md"}
    assert await exists(fs, "notes.md")
    rewound = await deferred(ctx, "undo", {"checkpoint": mark.id})
    assert not rewound.is_error, rewound.text
    assert rewound.text.startswith(f"Undid every change since checkpoint {mark.id}: put back 2")
    assert (await fs.backend.read("app.py")).data == b"x = 1\n"
    assert not await exists(fs, "notes.md")
    again = await deferred(ctx, "undo", {"checkpoint": mark.id})
    assert again.text == f"Nothing to undo: you changed nothing since checkpoint {mark.id}."


async def test_a_stale_undo_names_the_file_and_changes_nothing(
    fs: Fs, ctx: Context, other: Context
) -> None:
    await written(ctx, "app.py", "x = 1\n")
    assert not (await call(ctx, "edit", _edit("app.py", "x = 1", "x = 2"))).is_error
    await call(other, "read", {"file_path": "app.py"})
    assert not (await call(other, "edit", _edit("app.py", "x = 2", "x = 3"))).is_error
    for arguments in ({"dry_run": True}, {}):
        refused = await deferred(ctx, "undo", arguments)
        assert refused.error_code is ErrorCode.STALE
        assert refused.text.startswith("Error [stale]: app.py changed since your step(s)")
        assert "-x = 2\n+x = 3" in refused.text
    assert (await fs.backend.read("app.py")).data == b"x = 3\n"


async def test_undo_needs_the_session_memory() -> None:
    async with open_fs("memory://", load_entrypoints=False, session_memory=False) as fs:
        ctx = fs.context(owner="agent")
        refused = await deferred(ctx, "undo", {})
        assert refused.error_code is ErrorCode.NOT_ENABLED
        editor = await call(ctx, EDITOR, {"command": "undo_edit", "path": "a.md"})
        assert editor.error_code is ErrorCode.NOT_ENABLED
        assert "str_replace" in editor.text


# -- the text editor's undo_edit -------------------------------------------------------------------


async def test_undo_edit_undoes_the_newest_change_of_that_file_only(fs: Fs, ctx: Context) -> None:
    await written(ctx, "app.py", "x = 1\n")
    replace = {"command": "str_replace", "path": "app.py", "old_str": "x = 1", "new_str": "x = 2"}
    assert not (await call(ctx, EDITOR, replace)).is_error
    undone = await call(ctx, EDITOR, {"command": "undo_edit", "path": "app.py"})
    assert not undone.is_error, undone.text
    assert undone.text.startswith("Undid your last edit of app.py: put back 1 file.")
    assert (await fs.backend.read("app.py")).data == b"x = 1\n"
    await written(ctx, "notes.md", "done\n")
    later = await call(ctx, EDITOR, {"command": "undo_edit", "path": "app.py"})
    assert later.error_code is ErrorCode.INVALID_ARGUMENT
    assert "your newest change, and it changed notes.md, not app.py" in later.text
    told = later.structured["error"]["hint"].partition("call_tool with ")[2]
    told = json.loads(told.partition(", which undoes")[0])  # in call_tool's own schema
    assert told == {"name": "undo", "arguments": '{"steps": 2}'}
    assert (await fs.backend.read("app.py")).data == b"x = 1\n"
    never = await call(ctx, EDITOR, {"command": "undo_edit", "path": "other.py"})
    assert never.error_code is ErrorCode.INVALID_ARGUMENT
    assert "no change of yours to other.py" in never.text


@pytest.mark.parametrize(
    "options",
    [ToolsetOptions(exposure={"undo": Exposure.HIDDEN}),
     ToolsetOptions(tools=frozenset({"read", "write", "edit", "list_dir"}))],
    ids=["undo hidden", "undo not chosen"],
)  # fmt: skip
async def test_undo_edit_is_refused_where_undo_is_not_offered(
    fs: Fs, ctx: Context, options: ToolsetOptions
) -> None:
    tools = FsToolset(options)
    await written(ctx, "app.py", "x = 1\n")
    replace = {"command": "str_replace", "path": "app.py", "old_str": "x = 1", "new_str": "x = 2"}
    assert not (await call(ctx, EDITOR, replace, tools=tools)).is_error
    refused = await call(ctx, EDITOR, {"command": "undo_edit", "path": "app.py"}, tools=tools)
    assert refused.error_code is ErrorCode.NOT_ENABLED
    assert "undo is not offered" in refused.text
    assert (await fs.backend.read("app.py")).data == b"x = 2\n"


# -- over MCP, with the mcp client ---------------------------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the MCP SDK's client runs on asyncio
async def test_rereads_and_undo_over_mcp(fs: Fs) -> None:
    await fs.backend.write("notes.md", b"one\n", expect=ABSENT)
    async with Client(create_server(McpTools(fs)), raise_exceptions=True) as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        assert listed[-2:] == ["search_tools", "call_tool"]
        first = await client.call_tool("read", {"file_path": "notes.md"})
        again = await client.call_tool("read", {"file_path": "notes.md"})
        assert first.structured_content is not None
        assert again.structured_content is not None
        assert first.structured_content["content"] == "one\n"
        assert again.structured_content["unchanged"] is True
        assert "content" not in again.structured_content
        compacted = await client.call_tool(
            "read",
            {"file_path": "notes.md"},
            meta={FORGET_SHOWN_META_KEY: True},  # type: ignore[arg-type]
        )
        assert compacted.structured_content is not None
        assert compacted.structured_content["content"] == "one\n"  # the text again
        edit = _edit("notes.md", "one", "two")
        assert not (await client.call_tool("edit", edit)).is_error
        undo = await client.call_tool("call_tool", {"name": "undo", "arguments": "{}"})
        assert not undo.is_error, undo.content
        assert undo.structured_content is not None
        assert undo.structured_content["files"][0]["path"] == "notes.md"
    assert (await fs.backend.read("notes.md")).data == b"one\n"


# -- the command line: where the session memory lives ------------------------------------------------


def ctxfs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CTXFS, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_call_keeps_the_session_memory_for_the_next_call_unless_told(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    where = ["--root", str(root), "--owner", "me"]
    edit = json.dumps(_edit("a.txt", "one", "two"))
    undo = json.dumps({"name": "undo", "arguments": {}})
    assert ctxfs("call", *where, "read", '{"file_path": "a.txt"}').returncode == 0
    assert ctxfs("call", *where, "edit", edit).returncode == 0
    forgotten = ctxfs("call", *where, "--sessions", "memory://", "call_tool", undo)
    assert "only 0 step(s) to undo" in forgotten.stderr
    undone = ctxfs("call", *where, "call_tool", undo)  # the default: the root's own file
    assert undone.returncode == 0, undone.stderr
    assert (root / "a.txt").read_text() == "one\n"
    shared = f"sqlite:///{tmp_path}/sessions.db"
    assert ctxfs("call", *where, "--sessions", shared, "edit", edit).returncode == 0
    assert ctxfs("call", *where, "--sessions", shared, "call_tool", undo).returncode == 0
    assert (root / "a.txt").read_text() == "one\n"
    empty = ctxfs("call", *where, "--sessions", "", "read", '{"file_path": "a.txt"}')
    assert (empty.returncode, empty.stderr) == (2, "ctxfs: --sessions '' is empty (an unset "
                                                   "variable?)\n")  # fmt: skip


async def exists(fs: Fs, path: str) -> bool:
    try:
        await fs.backend.stat(path)
    except NotFound:
        return False
    return True


def _edit(path: str, old: str, new: str) -> dict[str, str]:
    return {"file_path": path, "old_string": old, "new_string": new}
