"""Every tool through ``FsToolset.execute``, on the memory backend and on fs-local.

Each success and each error code a tool can return is asserted in both
projections: the model's text and the structured data.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxfs.core import (
    ABSENT,
    Context,
    Denied,
    ErrorCode,
    Fs,
    FsError,
    MemoryBackend,
    NotARegularFile,
    Operation,
    OpKind,
    PermissionDenied,
    Unavailable,
    hookimpl,
)
from ctxfs.core.text import TextEncoding, encodings, window
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset, ReadData, ToolResult, ToolsetOptions
from tests.tools.conftest import DEFAULT_TOOLS, Seed

pytestmark = pytest.mark.anyio


async def run(tools: FsToolset, ctx: Context, name: str, **arguments: Any) -> ToolResult:
    return await tools.execute(ctx, name, arguments)


# -- successes -------------------------------------------------------------------------------


async def test_read_projects_numbered_lines_and_an_exact_footer(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("notes.md", "".join(f"line {n}\n" for n in range(1, 11)).encode())
    first = await run(tools, ctx, "read", file_path="notes.md", limit=3)
    assert first.text == "1 line 1\n2 line 2\n3 line 3\n(lines 1-3 of 10; continue with offset=4)"
    assert first.structured == {
        "status": "ok",
        "tool": "read",
        "target": "notes.md",
        "kind": "text",
        "content": "line 1\nline 2\nline 3\n",
        "version": first.structured["version"],
        "offset": 1,
        "returned_lines": 3,
        "total_lines": 10,
        "next_offset": 4,
        "partial": True,
        "encoding": "utf-8",
    }  # what holds nothing is left out: None (error, image, ...) and empty defaults
    assert first.data_as(ReadData).truncated_lines == []  # (defaults the schema states)
    assert first.data_as(ReadData).output_capped is False
    assert first.structured["version"].startswith("xxh3:")
    rest = await run(tools, ctx, "read", file_path="notes.md", offset=9)
    assert rest.text.endswith("10 line 10\n(end of file; lines 9-10 of 10)")
    assert rest.data_as(ReadData).next_offset is None
    assert "next_offset" not in rest.structured


async def test_read_of_empty_and_short_files(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    await seed("empty.txt", b"")
    await seed("short.txt", b"only\n")
    assert (await run(tools, ctx, "read", file_path="empty.txt")).text == "(empty.txt is empty)"
    past = await run(tools, ctx, "read", file_path="short.txt", offset=5)
    assert not past.is_error
    assert past.text == "(no lines at offset 5: short.txt has 1 line; use an offset from 1 to 1)"


async def test_read_says_which_lines_were_cut_and_which_encoding(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("long.txt", b"short\n" + b"y" * 3000 + b"\n")
    await seed("latin.txt", "Café\r\n".encode("cp1252"))
    cut = await run(tools, ctx, "read", file_path="long.txt")
    assert "(line 2 cut where marked: too long to show whole)" in cut.text
    assert "[line cut here; it holds 3000 bytes]" in cut.text
    assert cut.structured["truncated_lines"] == [2]
    latin = await run(tools, ctx, "read", file_path="latin.txt")
    assert (
        latin.text
        == "1 Café\n(end of file; lines 1-1 of 1)\n(decoded as cp1252; changes keep that encoding)"
    )


async def test_read_judges_the_whole_file_where_a_byte_past_its_start_misleads(
    tools: FsToolset, ctx: Context, seed: Seed, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = b"x = 1  # plain ascii\n" * ((3 << 20) // 21)  # past what decides at first
    lines = head.count(b"\n") + 1
    await seed("tail.txt", head + "# café au lait, naïve façade\n".encode("cp1252"))
    judged: list[int] = []  # the bytes each detection weighed
    detect = encodings.detect_encoding

    def weighing(data: bytes, *args: Any, **kwargs: Any) -> TextEncoding:
        judged.append(len(data))
        return detect(data, *args, **kwargs)

    monkeypatch.setattr(window, "detect_encoding", weighing)
    tail = await run(tools, ctx, "read", file_path="tail.txt", offset=lines)
    assert tail.text.startswith(f"{lines} # café au lait, naïve façade\n"), tail.text
    assert tail.structured["encoding"] == "cp1252"
    assert max(judged) > 3 << 20  # the whole file, once
    judged.clear()
    again = await run(tools, ctx, "read", file_path="tail.txt", offset=lines, fresh=True)
    assert again.text == tail.text
    assert max(judged) < 2 << 20  # the start only: the whole was judged before
    named = await run(tools, ctx, "read", file_path="tail.txt", offset=lines, encoding="cp1250")
    assert named.text.startswith(f"{lines} # café au lait, naďve façade\n"), named.text
    monkeypatch.setattr("ctxfs.core.reads.JUDGED_WHOLE_BYTES", 2 << 20)  # too large to judge
    await seed("other.txt", head + "# café au lait, naïve façade\n".encode("cp1252") + b"\n")
    shown = await run(tools, ctx, "read", file_path="other.txt", offset=lines)
    assert shown.text.startswith(f"{lines} # caf\ufffd au lait, na\ufffdve fa\ufffdade\n")
    assert shown.structured["encoding"] == "utf-8, invalid bytes shown as \ufffd"
    assert "(bytes that are not valid text show as \ufffd; keep them out of old_string)" in (
        shown.text
    )


async def test_write_creates_then_updates_after_a_full_read(tools: FsToolset, ctx: Context) -> None:
    created = await run(tools, ctx, "write", file_path="src/new.py", content="a = 1\nb = 2\n")
    assert created.text == "Created src/new.py (2 lines, 12 bytes)."
    assert created.structured["created"] is True
    assert "previous_version" not in created.structured  # None: left out
    updated = await run(tools, ctx, "write", file_path="src/new.py", content="a = 1\nb = 3\n")
    assert (
        updated.text
        == "Updated src/new.py: line 2 changed (2 lines now).\n@@ -2,1 +2,1 @@\n-b = 2\n+b = 3"
    )
    assert updated.structured["previous_version"] == created.structured["version"]
    same = await run(tools, ctx, "write", file_path="src/new.py", content="a = 1\nb = 3\n")
    assert same.text == "Wrote src/new.py: the content was already identical; nothing changed."


async def test_edit_says_what_changed_with_a_diff(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("app.py", b"def f():\r\n    return 1\r\n")
    await run(tools, ctx, "read", file_path="app.py", limit=1)
    result = await run(
        tools,
        ctx,
        "edit",
        file_path="app.py",
        old_string="2     return 1",
        new_string="2     return 2",
    )
    assert result.text == (
        "Edited app.py: 1 replacement, line 2. (The line numbers pasted into old_string were "
        "ignored.)\n@@ -2,1 +2,1 @@\n-    return 1\n+    return 2"
    )
    assert result.structured["stripped_line_numbers"] is True
    assert result.structured["replacements"] == 1
    check = await run(tools, ctx, "read", file_path="app.py")
    assert check.structured["content"] == "def f():\n    return 2\n"


async def test_list_dir_sorts_marks_and_pages(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    for name in ("b.txt", "a.txt", "sub/c.txt", "odd\u202ename", "zz.txt"):
        await seed(name, b"12345")
    listing = await run(tools, ctx, "list_dir")
    assert listing.text == (
        "a.txt  (5 B)\nb.txt  (5 B)\nodd\\u202ename  (5 B)\nsub/\nzz.txt  (5 B)\n(5 entries)"
    )
    assert [entry["name"] for entry in listing.structured["entries"]] == [
        "a.txt", "b.txt", "odd\u202ename", "sub", "zz.txt",
    ]  # fmt: skip
    page = await run(tools, ctx, "list_dir", offset=2, limit=2)
    assert (
        page.text
        == "b.txt  (5 B)\nodd\\u202ename  (5 B)\n(entries 2-3 of 5; continue with offset=4)"
    )
    assert (
        page.structured["total"],
        page.structured["next_offset"],
        page.structured["truncated"],
    ) == (5, 4, True)


async def test_control_characters_in_names_are_escaped(tools: FsToolset, tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "z\nline").write_bytes(b"x")
    async with Fs(
        LocalBackend(tmp_path / "root", state_dir=tmp_path / "s"), load_entrypoints=False
    ) as fs:
        listing = await tools.execute(fs.context(owner="a"), "list_dir", {})
    assert listing.text == "z\\x0aline  (1 B)\n(1 entry)"
    assert listing.structured["entries"][0]["name"] == "z\nline"


async def test_a_name_that_is_not_utf8_is_moved_by_its_escaped_spelling(
    tools: FsToolset, tmp_path: Path
) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / os.fsdecode(b"root/caf\xe9.txt")).write_bytes(b"x\n")
    async with Fs(
        LocalBackend(tmp_path / "root", state_dir=tmp_path / "s"), load_entrypoints=False
    ) as fs:
        ctx = fs.context(owner="a")
        listing = await tools.execute(ctx, "list_dir", {})
        assert listing.text.startswith("caf\\xe9.txt")
        assert (await tools.execute(ctx, "read", {"file_path": "caf\\xe9.txt"})).error_code is None
        moved = await tools.execute(
            ctx, "move", {"source_path": "caf\\xe9.txt", "destination_path": "cafe.txt"}
        )
    assert moved.error_code is None, moved.text
    assert sorted(os.listdir(tmp_path / "root")) == ["cafe.txt"]


async def test_glob_is_sorted_counted_paged_and_skips_ignored_dirs(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    for path in ("src/b.py", "src/a.py", "src/deep/c.py", "README.md", ".git/hooks/x.py",
                 "node_modules/m/index.py", "tests/test_a.py"):  # fmt: skip
        await seed(path, b"x = 1\n")
    everything = await run(tools, ctx, "glob", pattern="*.py")
    assert everything.structured["paths"] == [
        "src/a.py",
        "src/b.py",
        "src/deep/c.py",
        "tests/test_a.py",
    ]
    assert everything.text.endswith("(4 files match)")
    anchored = await run(tools, ctx, "glob", pattern="src/*.py")
    assert anchored.structured["paths"] == ["src/a.py", "src/b.py"]
    below = await run(tools, ctx, "glob", pattern="**/*.py", path="src")
    assert below.structured["paths"] == ["src/a.py", "src/b.py", "src/deep/c.py"]
    page = await run(tools, ctx, "glob", pattern="*.py", offset=2, limit=2)
    assert page.structured["paths"] == ["src/b.py", "src/deep/c.py"]
    assert page.text.endswith("(files 2-3 of 4 matching; continue with offset=4)")


def whole_line(path: str, line: int, text: str, column: int = 1) -> dict[str, object]:
    """A grep match of a line shown whole (as plain data: no `line_chars`, no `end_line`)."""
    return {
        "path": path,
        "line": line,
        "text": text,
        "column": column,
        "cut": False,
        "text_column": 1,
        "before": [],
        "after": [],
    }


async def test_write_after_reading_every_window_of_a_long_file(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("long.txt", "".join(f"line {n}\n" for n in range(1, 3001)).encode())
    first = await run(tools, ctx, "read", file_path="long.txt")
    assert first.structured["next_offset"] is not None
    refused = await run(tools, ctx, "write", file_path="long.txt", content="short\n")
    assert refused.error_code is ErrorCode.NOT_OBSERVED
    rest = await run(
        tools, ctx, "read", file_path="long.txt", offset=first.structured["next_offset"]
    )
    assert "next_offset" not in rest.structured  # None (the end): left out
    written = await run(tools, ctx, "write", file_path="long.txt", content="short\n")
    assert written.error_code is None, written.text


async def test_grep_finds_counts_pages_and_skips_binaries(
    tools: FsToolset, ctx: Context, seed: Seed, engine: str
) -> None:
    await seed("src/a.py", b"import os\nTODO: one\n")
    await seed("src/b.py", b"# todo two\nTODO: three\n")
    await seed("src/blob.bin", b"\x00TODO\x00")
    await seed("docs/notes.md", b"TODO in docs\n")
    hits = await run(tools, ctx, "grep", pattern="TODO")
    # ripgrep searches a binary file up to its first NUL and counts it searched
    footer = (
        ["(3 matches in 4 files searched)"]
        if engine == "ripgrep"
        else ["(3 matches in 3 files searched)", "(1 file skipped: 1 binary)"]
    )
    assert hits.text.splitlines() == [
        "docs/notes.md:1: TODO in docs",
        "src/a.py:2: TODO: one",
        "src/b.py:2: TODO: three",
        *footer,
    ]
    assert hits.structured["files_skipped"] == (0 if engine == "ripgrep" else 1)
    folded = await run(tools, ctx, "grep", pattern="todo", ignore_case=True, glob="*.py")
    assert folded.structured["total"] == 3
    assert [m["line"] for m in folded.structured["matches"]] == [2, 1, 2]
    page = await run(tools, ctx, "grep", pattern="TODO", offset=2, limit=1)
    assert page.structured["matches"] == [whole_line("src/a.py", 2, "TODO: one")]
    searched = 4 if engine == "ripgrep" else 3
    assert f"(matches 2-2 of 3 in {searched} files searched; continue with offset=3)" in page.text
    one_file = await run(tools, ctx, "grep", pattern="import", path="src/a.py")
    assert one_file.structured["matches"] == [whole_line("src/a.py", 1, "import os")]


async def test_grep_finds_a_match_past_the_line_cap_and_shows_the_line_cut_around_it(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    cap = ctx.opened_fs.text_options.max_line_chars
    line = "x" * (3 * cap) + "NEEDLE" + "y" * (3 * cap)
    await seed("long.txt", f"{line}\r\nshort NEEDLE\r\n".encode())
    found = await run(tools, ctx, "grep", pattern="NEEDLE")
    first, second = found.structured["matches"]
    assert found.structured["total"] == 2
    assert (first["line"], first["column"], first["cut"]) == (1, 3 * cap + 1, True)
    assert first["line_chars"] == len(line)
    assert len(first["text"]) == cap
    start = first["column"] - first["text_column"]
    assert first["text"][start : start + 6] == "NEEDLE"
    assert line[first["text_column"] - 1 :].startswith(first["text"])
    assert second == whole_line("long.txt", 2, "short NEEDLE", column=7)
    shown = found.text.splitlines()
    assert shown[0].startswith("long.txt:1: … x")
    assert shown[0].endswith("y …")
    assert "NEEDLE" in shown[0]
    assert len(shown[0]) < 400
    assert shown[1] == "long.txt:2: short NEEDLE"
    assert "(long lines are shown around their first match, … marks a cut)" in shown


async def test_grep_stops_a_pattern_that_backtracks_catastrophically(
    ctx: Context, seed: Seed, engine: str
) -> None:
    # (a|aa)+$ against "aaa...!" tries every way to split 60 a's into ones and twos (about
    # 2**41) before it fails: without a limit, the search never ends. ripgrep's engine has
    # no backtracking: it answers at once (no match).
    await seed("src/a.txt", b"TODO\n" + b"a" * 60 + b"!\n")
    tools = FsToolset(ToolsetOptions(grep_line_seconds=0.05))
    stopped = await run(tools, ctx, "grep", pattern="(a|aa)+$")
    if engine == "ripgrep":
        assert (stopped.error_code, stopped.structured["total"]) == (None, 0)
        return
    assert stopped.error_code is ErrorCode.INVALID_ARGUMENT
    assert stopped.structured["error"]["details"] == {
        "field": "pattern",
        "path": "src/a.txt",
        "line": 2,
    }
    assert "line 2 of src/a.txt" in stopped.text
    assert "backtracks catastrophically" in stopped.text
    assert "overlapping alternatives" in stopped.structured["error"]["hint"]
    fine = await run(tools, ctx, "grep", pattern="a+!$")
    assert fine.structured["matches"] == [whole_line("src/a.txt", 2, "a" * 60 + "!")]


async def test_a_line_too_slow_deep_in_a_large_file_fails_the_grep(
    ctx: Context, seed: Seed, engine: str
) -> None:
    # The bad line comes after several batches of lines: its failure is the pattern's, not
    # the file's (the file is not skipped, and no batch is counted twice). Counting needs
    # every line of the file (a page of lines would stop the search before it).
    await seed("src/a.txt", b"TODO\n" * 20_000 + b"a" * 60 + b"!\n")
    await seed("src/b.txt", b"TODO\n")
    tools = FsToolset(ToolsetOptions(grep_line_seconds=0.05))
    stopped = await run(tools, ctx, "grep", pattern="(TODO|(a|aa)+$)", output_mode="count")
    if engine == "ripgrep":  # its engine does not backtrack: the line is as quick as any other
        assert stopped.structured["lines_matched"] == 20_001, stopped.text
        return
    assert stopped.error_code is ErrorCode.INVALID_ARGUMENT, stopped.text
    assert stopped.structured["error"]["details"] == {
        "field": "pattern",
        "path": "src/a.txt",
        "line": 20_001,
    }


async def test_grep_stops_at_its_deadline_inside_a_large_file(
    ctx: Context, seed: Seed, engine: str
) -> None:
    await seed("big.txt", b"line of text\n" * 400_000)
    # ripgrep counts a file's lines only when it is done with it: stop it before that
    tools = FsToolset(ToolsetOptions(grep_seconds=0.0005 if engine == "ripgrep" else 0.05))
    stopped = await run(tools, ctx, "grep", pattern="text", output_mode="count")
    assert stopped.error_code is None, stopped.text
    assert stopped.structured["timed_out"] is True
    assert stopped.structured["total_exact"] is False
    assert (0 if engine == "ripgrep" else 1) <= stopped.structured["lines_matched"] < 400_000
    assert "the search stopped at its time limit" in stopped.text


async def test_a_cancelled_grep_stops_between_files(tmp_path: Path) -> None:
    # Files this small are read without suspending, so only grep's own checkpoints let the
    # cancel of the caller land before every file has been searched.
    for n in range(50):
        (tmp_path / f"f{n:02d}.txt").write_text("needle\n")
    opened: list[str] = []
    scope = anyio.CancelScope()

    class CancelOnSecondFile:
        @hookimpl
        def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
            if op.kind is OpKind.READ:
                opened.append(op.path)
                if len(opened) == 2:
                    scope.cancel()

    fs = Fs(LocalBackend(tmp_path), plugins=[CancelOnSecondFile()], load_entrypoints=False)
    with scope:
        await FsToolset().execute(fs.context(owner="a"), "grep", {"pattern": "needle"})
    assert scope.cancelled_caught
    assert opened == ["f00.txt", "f01.txt"]


async def test_searching_does_not_license_an_edit(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.py", b"x = 1\n")
    await run(tools, ctx, "grep", pattern="x")
    result = await run(tools, ctx, "edit", file_path="a.py", old_string="x = 1", new_string="x = 2")
    assert result.error_code is ErrorCode.NOT_OBSERVED


# -- every error code, in text and data ------------------------------------------------------

Setup = Callable[[FsToolset, Context, Seed], Awaitable[None]]


async def nothing(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    return None


async def files(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    await seed("a.txt", b"alpha\nbeta\nalpha\n")
    await seed("dir/inner.txt", b"x\n")
    await seed("bin.dat", b"\x00\x01\x02")
    await seed("bad.txt", bytes(range(0x80, 0x100)) * 2)


async def files_read(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    await files(tools, ctx, seed)
    await tools.execute(ctx, "read", {"file_path": "a.txt", "limit": 1})


async def changed_after_read(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    await files_read(tools, ctx, seed)
    other = ctx.opened_fs.context(owner="someone-else")
    await other.fs.read("a.txt")
    await other.fs.edit("a.txt", "beta", "gamma")


@dataclass(frozen=True)
class Failure:
    case: str
    tool: str
    arguments: dict[str, Any]
    code: ErrorCode
    says: str
    setup: Setup = files
    data: dict[str, Any] = field(default_factory=dict)


FAILURES = [
    Failure("read missing", "read", {"file_path": "missing.txt"}, ErrorCode.NOT_FOUND,
            "missing.txt does not exist"),
    Failure("read a directory", "read", {"file_path": "dir"}, ErrorCode.IS_DIRECTORY,
            "dir is a directory"),
    Failure("read binary", "read", {"file_path": "bin.dat"}, ErrorCode.BINARY_FILE,
            "text tools cannot read or edit it"),
    Failure("read undecodable", "read", {"file_path": "bad.txt"}, ErrorCode.ENCODING_ERROR,
            "is not UTF-8"),
    Failure("read outside", "read", {"file_path": "../etc/passwd"}, ErrorCode.OUTSIDE_ROOT,
            "'..' segment"),
    Failure("read bad path", "read", {"file_path": "a\x00b"}, ErrorCode.INVALID_PATH,
            "control character"),
    Failure("read bad offset", "read", {"file_path": "a.txt", "offset": 0},
            ErrorCode.INVALID_ARGUMENT, "offset: Input should be greater than or equal to 1",
            data={"field": "offset"}),
    Failure("write over unread", "write", {"file_path": "a.txt", "content": "x"},
            ErrorCode.NOT_OBSERVED, "read it before changing it"),
    Failure("write after a partial read", "write", {"file_path": "a.txt", "content": "x"},
            ErrorCode.NOT_OBSERVED, "read the whole file", files_read,
            data={"partial_observation": True}),
    Failure("write stale", "write", {"file_path": "a.txt", "content": "x"}, ErrorCode.STALE,
            "read it again, then redo the change", changed_after_read),
    Failure("write a directory", "write", {"file_path": "dir", "content": "x"},
            ErrorCode.IS_DIRECTORY, "dir is a directory"),
    Failure("write under a file", "write", {"file_path": "a.txt/x", "content": "x"},
            ErrorCode.NOT_A_DIRECTORY, "not a directory"),
    Failure("write U+FFFD", "write", {"file_path": "new.txt", "content": "lost \ufffd"},
            ErrorCode.ENCODING_ERROR, "replacement characters"),
    Failure("write no content", "write", {"file_path": "new.txt"}, ErrorCode.INVALID_ARGUMENT,
            "content: Field required", data={"field": "content"}),
    Failure("edit unread", "edit", {"file_path": "a.txt", "old_string": "beta", "new_string": "b"},
            ErrorCode.NOT_OBSERVED, "Read the file first"),
    Failure("edit stale", "edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "b",
            "replace_all": True}, ErrorCode.STALE, "changed since it was last read",
            changed_after_read),
    Failure("edit empty", "edit", {"file_path": "a.txt", "old_string": "", "new_string": "b"},
            ErrorCode.EMPTY_OLD_STRING, "old_string is empty", files_read),
    Failure("edit no change", "edit", {"file_path": "a.txt", "old_string": "b", "new_string": "b"},
            ErrorCode.NO_CHANGE, "identical", files_read),
    Failure("edit no match", "edit", {"file_path": "a.txt", "old_string": "betta", "new_string": "b"},
            ErrorCode.NO_MATCH, "Closest text in the file:\n2 beta", files_read),
    Failure("edit ambiguous", "edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "b"},
            ErrorCode.AMBIGUOUS_MATCH, "occurs 2 times in a.txt, at lines 1, 3", files_read,
            data={"count": 2, "lines": [1, 3]}),
    Failure("edit missing", "edit", {"file_path": "nope.txt", "old_string": "a", "new_string": "b"},
            ErrorCode.NOT_FOUND, "nope.txt does not exist"),
    Failure("edit binary", "edit", {"file_path": "bin.dat", "old_string": "a", "new_string": "b"},
            ErrorCode.BINARY_FILE, "binary data"),
    Failure("edit bad type", "edit", {"file_path": "a.txt", "old_string": "a", "new_string": "b",
            "replace_all": "maybe"}, ErrorCode.INVALID_ARGUMENT, "replace_all:"),
    Failure("list missing", "list_dir", {"path": "missing"}, ErrorCode.NOT_FOUND, "does not exist"),
    Failure("list a file", "list_dir", {"path": "a.txt"}, ErrorCode.NOT_A_DIRECTORY,
            "not a directory"),
    Failure("glob unclosed class", "glob", {"pattern": "src/[ab"}, ErrorCode.INVALID_ARGUMENT,
            "unclosed '['", data={"field": "pattern"}),
    Failure("glob empty pattern", "glob", {"pattern": ""}, ErrorCode.INVALID_ARGUMENT,
            "pattern is empty"),
    Failure("glob missing dir", "glob", {"pattern": "*", "path": "missing"}, ErrorCode.NOT_FOUND,
            "does not exist"),
    Failure("grep bad regex", "grep", {"pattern": "(unclosed"}, ErrorCode.INVALID_ARGUMENT,
            "not a valid regular expression", data={"field": "pattern"}),
    Failure("grep bad glob", "grep", {"pattern": "x", "glob": "[z"}, ErrorCode.INVALID_ARGUMENT,
            "unclosed '['"),
    Failure("glob reversed range", "glob", {"pattern": "*.[z-a]"}, ErrorCode.INVALID_ARGUMENT,
            "has a bad class '[z-a]': bad character range z-a", data={"field": "pattern"}),
    Failure("grep reversed range", "grep", {"pattern": "x", "glob": "f[9-0]"},
            ErrorCode.INVALID_ARGUMENT, "has a bad class '[9-0]'"),
    Failure("unknown tool", "shell", {"command": "ls"}, ErrorCode.INVALID_ARGUMENT,
            "the tools offered are: " + ", ".join(DEFAULT_TOOLS)),
]  # fmt: skip


@pytest.mark.parametrize("failure", FAILURES, ids=[failure.case for failure in FAILURES])
async def test_every_error_has_its_code_message_and_next_action(
    tools: FsToolset, ctx: Context, seed: Seed, failure: Failure
) -> None:
    await failure.setup(tools, ctx, seed)
    before = await snapshot(ctx)
    result = await tools.execute(ctx, failure.tool, failure.arguments)
    assert result.is_error
    assert result.error_code is failure.code
    assert result.text.startswith(f"Error [{failure.code.value}]: ")
    assert failure.says in result.text, result.text
    assert "\nNext: " in result.text
    error = result.structured["error"]
    assert (result.structured["status"], result.structured["tool"]) == ("error", failure.tool)
    assert error["code"] == failure.code.value
    assert error["hint"]
    assert error["hint"] in result.text
    assert isinstance(error["retryable"], bool)
    for key, value in failure.data.items():
        assert error["details"][key] == value
    assert await snapshot(ctx) == before, "a failed call changed nothing"


async def snapshot(ctx: Context) -> dict[str, bytes]:
    """Every file of the store, with its bytes."""
    backend, found, pending = ctx.opened_fs.backend, {}, [""]
    while pending:
        for entry in await backend.list(pending.pop()):
            if entry.kind.value == "directory":
                pending.append(entry.path)
            else:
                found[entry.path] = (await backend.read(entry.path)).data
    return found


async def test_a_held_lock_is_busy_and_retryable(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", b"alpha\n")
    await tools.execute(ctx, "read", {"file_path": "a.txt"})
    key = (await ctx.opened_fs.backend.locate("a.txt")).key
    async with ctx.opened_fs.file_context.locks.hold(key, timeout=5):
        result = await tools.execute(
            ctx, "edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"}
        )
    assert result.error_code is ErrorCode.BUSY
    assert result.structured["error"]["retryable"] is True
    assert "retry shortly" in result.text


class NoSecrets:
    @hookimpl
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> FsError | None:
        if op.path == "secrets" or op.path.startswith("secrets/"):
            return Denied(f"{op.path} is off limits", path=op.path)
        return None


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("read", {"file_path": "secrets/key"}), ("write", {"file_path": "secrets/key", "content": "x"}),
     ("list_dir", {"path": "secrets"}), ("grep", {"pattern": "x", "path": "secrets/key"})],
)  # fmt: skip
async def test_a_policy_refusal_is_denied(
    tools: FsToolset, tool: str, arguments: dict[str, Any]
) -> None:
    fs = Fs(MemoryBackend(), plugins=[NoSecrets()], load_entrypoints=False)
    result = await tools.execute(fs.context(owner="a"), tool, arguments)
    assert result.error_code is ErrorCode.DENIED
    assert "off limits" in result.text
    assert "do not retry" in result.text


async def test_store_failures_are_typed_and_bugs_are_contained(tools: FsToolset) -> None:
    backend = MemoryBackend()
    ctx = Fs(backend, load_entrypoints=False).context(owner="a")
    backend.faults.fail_next("write", Unavailable("the store is down"))
    down = await tools.execute(ctx, "write", {"file_path": "a.txt", "content": "x"})
    assert down.error_code is ErrorCode.UNAVAILABLE
    assert down.structured["error"]["retryable"] is True
    backend.faults.fail_next("read", RuntimeError("a bug in some backend"))
    bug = await tools.execute(ctx, "read", {"file_path": "a.txt"})
    assert bug.error_code is ErrorCode.BACKEND_ERROR
    assert "read failed unexpectedly" in bug.text
    assert "a bug in some backend" not in bug.text


async def test_fs_local_special_files_are_refused(tools: FsToolset, tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    os.mkfifo(tmp_path / "root" / "pipe")
    async with Fs(
        LocalBackend(tmp_path / "root", state_dir=tmp_path / "s"), load_entrypoints=False
    ) as fs:
        result = await tools.execute(fs.context(owner="a"), "read", {"file_path": "pipe"})
    assert result.error_code is ErrorCode.NOT_A_REGULAR_FILE
    assert "FIFO" in result.text


async def test_arguments_may_come_as_a_json_string(tools: FsToolset, ctx: Context) -> None:
    ok = await tools.execute(ctx, "write", '{"file_path": "a.txt", "content": "x\\n"}')
    assert not ok.is_error
    bad = await tools.execute(ctx, "write", "{not json")
    assert bad.error_code is ErrorCode.INVALID_ARGUMENT
    assert "not valid JSON" in bad.text
    listed = await tools.execute(ctx, "write", "[1, 2]")
    assert "must be a JSON object" in listed.text


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read", '{"file_path": "a.txt", "offset": 1%s}' % ("0" * 5000)),  # (JSON's limit)
        ("read", {"file_path": "a.txt", "offset": 10**5000}),
        ("read", {"file_path": "a.txt", "limit": 2**63}),
        (
            "str_replace_based_edit_tool",
            {"command": "view", "path": "a.txt", "view_range": [1, 10**5000]},
        ),
        (
            "str_replace_based_edit_tool",
            {"command": "insert", "path": "a.txt", "insert_line": 10**5000, "insert_text": "x"},
        ),
        (
            "multi_edit",
            {
                "file_path": "a.txt",
                "edits": [{"old_string": "a", "new_string": "b", "replace_all": -(10**5000)}],
            },
        ),
        ("str_replace_based_edit_tool", {"command": 10**5000, "path": "a.txt"}),
    ],
)
async def test_a_number_beyond_64_bits_is_an_invalid_argument(
    tools: FsToolset, ctx: Context, seed: Seed, name: str, arguments: dict[str, object] | str
) -> None:
    await seed("a.txt", b"a\n")
    await tools.execute(ctx, "read", {"file_path": "a.txt"})
    result = await tools.execute(ctx, name, arguments, provider="anthropic")
    assert result.error_code is ErrorCode.INVALID_ARGUMENT, result.text
    assert "a number" in result.text
    assert (await ctx.fs.read("a.txt")).text == "a\n"


async def test_too_large_files_are_refused_before_reading(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    from ctxfs.core import TextOptions  # noqa: PLC0415

    await seed("big.txt", b"x\n" * 100)
    await tools.execute(ctx, "read", {"file_path": "big.txt"})
    ctx.opened_fs.text_options = TextOptions(max_edit_bytes=50)
    for name, arguments in (
        (
            "edit",
            {"file_path": "big.txt", "old_string": "x", "new_string": "y", "replace_all": True},
        ),
        ("write", {"file_path": "big.txt", "content": "small\n"}),
    ):
        result = await tools.execute(ctx, name, arguments)
        assert result.error_code is ErrorCode.TOO_LARGE
        assert "200 bytes, more than the 50 allowed" in result.text
        assert result.structured["error"]["details"] == {"size": 200, "max_size": 50}


@pytest.mark.parametrize(
    ("error", "code"),
    [(PermissionDenied("the store said no", path="a.txt"), ErrorCode.PERMISSION_DENIED),
     (NotARegularFile("a.txt is a device", path="a.txt"), ErrorCode.NOT_A_REGULAR_FILE)],
)  # fmt: skip
async def test_store_refusals_reach_the_model_with_their_code(
    tools: FsToolset, error: FsError, code: ErrorCode
) -> None:
    backend = MemoryBackend()
    await backend.write("a.txt", b"x\n", expect=ABSENT)
    ctx = Fs(backend, load_entrypoints=False).context(owner="a")
    for name, arguments in (("read", {"file_path": "a.txt"}),
                            ("edit", {"file_path": "a.txt", "old_string": "x", "new_string": "y"})):  # fmt: skip
        backend.faults.fail_next("read", error)
        result = await tools.execute(ctx, name, arguments)
        assert result.error_code is code
        assert result.structured["target"] == "a.txt"


async def test_arguments_nested_too_deeply_are_an_invalid_argument(
    tools: FsToolset, ctx: Context
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for arguments in (deep, json.dumps({"name": "undo", "arguments": deep})):
        name = "undo" if arguments is deep else "call_tool"
        result = await tools.execute(ctx, name, arguments)
        assert result.error_code is ErrorCode.INVALID_ARGUMENT, result.text


async def test_a_null_inside_a_list_of_edits_takes_its_default(
    tools: FsToolset, ctx: Context
) -> None:
    await tools.execute(ctx, "write", {"file_path": "a.txt", "content": "hello hello\n"})
    result = await tools.execute(
        ctx,
        "multi_edit",
        {
            "file_path": "a.txt",
            "edits": [{"old_string": "hello hello", "new_string": "bye", "replace_all": None}],
            "dry_run": None,
        },
    )  # (what OpenAI's strict mode sends for what the model leaves out)
    assert not result.is_error, result.text


@pytest.mark.parametrize("encoding", ["hex", "rot13", "zlib_codec", "undefined", "\ud800", "\0"])
async def test_an_encoding_that_is_no_text_encoding_is_an_invalid_argument(
    tools: FsToolset, ctx: Context, encoding: str
) -> None:
    await tools.execute(ctx, "write", {"file_path": "a.txt", "content": "caf\u00e9\n"})
    result = await tools.execute(ctx, "read", {"file_path": "a.txt", "encoding": encoding})
    assert result.error_code is ErrorCode.INVALID_ARGUMENT, result.text
    assert result.structured["error"]["details"]["field"] == "encoding"


async def test_edits_that_cancel_out_are_no_change_and_write_nothing(
    tools: FsToolset, ctx: Context, fs: Fs
) -> None:
    await tools.execute(ctx, "write", {"file_path": "a.txt", "content": "a\nb\n"})
    before = await fs.backend.stat("a.txt")
    edits = [{"old_string": "a", "new_string": "X"}, {"old_string": "X", "new_string": "a"}]
    result = await tools.execute(ctx, "multi_edit", {"file_path": "a.txt", "edits": edits})
    assert result.error_code is ErrorCode.NO_CHANGE, result.text
    assert await fs.backend.stat("a.txt") == before  # (fs-local: the same inode and time)
