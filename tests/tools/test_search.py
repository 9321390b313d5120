"""grep's and glob's ripgrep features: output modes, context, multiline, types, braces, ignores.

Every case runs through ``FsToolset.execute`` on the memory backend and on fs-local; one
runs through the MCP server with the real client.
"""

from __future__ import annotations

import dataclasses
import os
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import pytest

from ctxfs.core import (
    ABSENT,
    Context,
    ErrorCode,
    FileMatches,
    FileSearch,
    Fs,
    MemoryBackend,
    open_backend,
)
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset, ToolResult, ToolsetOptions
from tests.tools.conftest import Seed

pytestmark = pytest.mark.anyio


async def run(tools: FsToolset, ctx: Context, name: str, **arguments: Any) -> ToolResult:
    return await tools.execute(ctx, name, arguments)


def numbered(count: int, *, marks: dict[int, str]) -> bytes:
    """Lines ``line N``, with *marks* (line number -> text) in place of some."""
    return "".join(f"{marks.get(n, f'line {n}')}\n" for n in range(1, count + 1)).encode()


# -- output modes --------------------------------------------------------------------------------


async def test_files_with_matches_and_counts_page_over_files(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.py", b"TODO 1\nTODO 2\nx\n")
    await seed("b.py", b"nothing\n")
    await seed("c/d.py", b"TODO 3\n")
    await seed("e.md", b"TODO 4\nTODO 5\nTODO 6\n")
    files = await run(tools, ctx, "grep", pattern="TODO", output_mode="files_with_matches")
    assert [item["path"] for item in files.structured["files"]] == ["a.py", "c/d.py", "e.md"]
    assert "matches" not in files.structured  # no matches listed: left out
    assert files.structured["total"] == 3
    assert files.text.splitlines() == ["a.py", "c/d.py", "e.md", "(3 files in 4 files searched)"]
    counted = await run(tools, ctx, "grep", pattern="TODO", output_mode="count")
    assert counted.structured["files"] == [
        {"path": "a.py", "count": 2},
        {"path": "c/d.py", "count": 1},
        {"path": "e.md", "count": 3},
    ]
    assert counted.structured["lines_matched"] == 6
    assert counted.text.splitlines()[:3] == ["a.py:2", "c/d.py:1", "e.md:3"]
    assert "(6 matching lines in all)" in counted.text
    second = await run(tools, ctx, "grep", pattern="TODO", output_mode="count", offset=2, limit=1)
    assert second.structured["files"] == [{"path": "c/d.py", "count": 1}]
    assert (second.structured["total"], second.structured["next_offset"]) == (3, 3)
    assert "continue with offset=3" in second.text


async def test_a_page_never_counts_more_matching_files_than_it_searched(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    for n in range(400):  # (one match each: a batch fills at a file's last line)
        await seed(f"big/f{n:03d}.txt", b"needle\n")
    for mode in ("content", "files_with_matches", "count"):
        found = await run(tools, ctx, "grep", pattern="needle", output_mode=mode)
        searched = found.structured.get("files_searched")
        assert searched is None or found.structured["total"] <= searched, (mode, found.text)


async def test_a_multiline_pattern_that_matches_nothing_at_all_skips_an_empty_file(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("empty.txt", b"")
    await seed("a.txt", b"hello\n")
    for pattern in ("^", "$", "x*"):
        found = await run(tools, ctx, "grep", pattern=pattern, multiline=True)
        assert found.error_code is None, found.text
        assert {hit["path"] for hit in found.structured["matches"]} == {"a.txt"}


async def test_a_glob_under_a_file_is_not_a_directory_on_every_engine(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("d/a.txt", b"x\n")
    refused = await run(tools, ctx, "glob", pattern="**", path="d/a.txt")
    assert refused.error_code is ErrorCode.NOT_A_DIRECTORY, refused.text


async def test_a_glob_an_engine_stopped_at_its_time_limit_says_so_and_at_least(
    tools: FsToolset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stopped(self: object, search: FileSearch) -> FileMatches:
        return FileMatches(counts={"a.txt": 0, "b.txt": 0}, searched=2, complete=False)

    monkeypatch.setattr(LocalBackend, "search_files", stopped)  # (ripgrep, out of time)
    async with Fs(LocalBackend(tmp_path, state_dir=tmp_path.parent / "state")) as fs:
        found = await run(tools, fs.context(owner="a"), "glob", pattern="*.txt")
    assert found.structured["timed_out"] is True
    assert found.structured["walk_truncated"] is False
    assert "(files 1-2 of at least 2 matching)" in found.text
    assert "stopped at its time limit" in found.text
    assert "size limit" not in found.text


async def test_files_mode_stops_reading_a_file_at_its_first_match(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    # 20,000 lines: several batches; the match is in the first, so the rest are never searched.
    await seed("big.txt", numbered(20_000, marks={3: "NEEDLE", 19_999: "NEEDLE"}))
    files = await run(tools, ctx, "grep", pattern="NEEDLE", output_mode="files_with_matches")
    assert files.structured["files"] == [{"path": "big.txt"}]  # no count: left out
    counted = await run(tools, ctx, "grep", pattern="NEEDLE", output_mode="count")
    assert counted.structured["files"] == [{"path": "big.txt", "count": 2}]


# -- context -----------------------------------------------------------------------------------------


async def test_context_lines_merge_and_groups_are_separated(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", numbered(20, marks={5: "hit five", 6: "hit six", 15: "hit fifteen"}))
    found = await run(tools, ctx, "grep", pattern="hit", context=2)
    assert found.text.splitlines() == [
        "a.txt-3- line 3",
        "a.txt-4- line 4",
        "a.txt:5: hit five",
        "a.txt:6: hit six",
        "a.txt-7- line 7",
        "a.txt-8- line 8",
        "--",
        "a.txt-13- line 13",
        "a.txt-14- line 14",
        "a.txt:15: hit fifteen",
        "a.txt-16- line 16",
        "a.txt-17- line 17",
        "(3 matches in 1 file searched)",
    ]
    first = found.structured["matches"][0]
    assert first["before"] == [{"line": 3, "text": "line 3"}, {"line": 4, "text": "line 4"}]
    assert first["after"] == [{"line": 6, "text": "hit six"}, {"line": 7, "text": "line 7"}]
    lopsided = await run(tools, ctx, "grep", pattern="fifteen", before=1, after=0)
    assert lopsided.structured["matches"][0]["before"] == [{"line": 14, "text": "line 14"}]
    assert lopsided.structured["matches"][0]["after"] == []


async def test_context_stops_at_the_file_edges(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    await seed("a.txt", b"hit\nmiddle\n")
    await seed("b.txt", b"before\nhit\n")
    found = await run(tools, ctx, "grep", pattern="hit", context=3)
    first, second = found.structured["matches"]
    assert (first["before"], [line["line"] for line in first["after"]]) == ([], [2])
    assert ([line["line"] for line in second["before"]], second["after"]) == ([1], [])
    assert found.text.splitlines()[:5] == [
        "a.txt:1: hit",
        "a.txt-2- middle",
        "--",
        "b.txt-1- before",
        "b.txt:2: hit",
    ]


@pytest.mark.parametrize("at", [1, 2, 4095, 4096, 4097, 4098, 8192, 9999])
async def test_context_across_search_batches_is_whole(
    at: int, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    # Lines are searched 4,096 at a time: context must reach across a batch's edges.
    await seed("big.txt", numbered(10_000, marks={at: "NEEDLE"}))
    found = await run(tools, ctx, "grep", pattern="NEEDLE", context=3)
    (match,) = found.structured["matches"]
    assert [line["line"] for line in match["before"]] == list(range(max(1, at - 3), at))
    assert [line["line"] for line in match["after"]] == list(range(at + 1, min(10_000, at + 3) + 1))
    assert all(line["text"] == f"line {line['line']}" for line in match["before"] + match["after"])


# -- multiline ----------------------------------------------------------------------------------------


async def test_a_multiline_match_spans_lines(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    await seed("a.py", b"def f(\n    x,\n):\n    pass\ndef g(): pass\n")
    found = await run(tools, ctx, "grep", pattern=r"def f\(.*?\):", multiline=True)
    (match,) = found.structured["matches"]
    assert (match["line"], match["end_line"], match["column"]) == (1, 3, 1)
    assert match["text"] == "def f(\n    x,\n):"
    assert found.text.splitlines()[:4] == ["a.py:1-3:", "def f(", "    x,", "):"]
    single = await run(tools, ctx, "grep", pattern=r"^def \w+", multiline=True)
    assert [(m["line"], m.get("end_line")) for m in single.structured["matches"]] == [
        (1, None),
        (5, None),
    ]
    not_multiline = await run(tools, ctx, "grep", pattern=r"def f\(.*?\):")
    assert not_multiline.structured["total"] == 0
    counted = await run(tools, ctx, "grep", pattern=r"\n", multiline=True, output_mode="count")
    assert counted.structured["files"] == [{"path": "a.py", "count": 4}]


async def test_a_catastrophic_multiline_pattern_is_refused(ctx: Context, seed: Seed) -> None:
    from ctxfs.tools import ToolsetOptions  # noqa: PLC0415

    await seed("a.txt", b"a" * 60 + b"!\n")
    tools = FsToolset(ToolsetOptions(grep_line_seconds=0.05))
    stopped = await run(tools, ctx, "grep", pattern="(a|aa)+$", multiline=True)
    assert stopped.error_code is ErrorCode.INVALID_ARGUMENT
    assert "backtracks catastrophically" in stopped.text


# -- filters -------------------------------------------------------------------------------------------


async def test_type_and_brace_globs_filter_files(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    for path in ("a.py", "b.pyi", "c.ts", "d.tsx", "e.md", "f/g.py"):
        await seed(path, b"needle\n")

    async def paths(**filters: str) -> list[str]:
        found = await run(tools, ctx, "grep", pattern="needle", **filters)
        return [match["path"] for match in found.structured["matches"]]

    assert await paths(type="py") == ["a.py", "b.pyi", "f/g.py"]
    assert await paths(glob="**/*.{ts,tsx}") == ["c.ts", "d.tsx"]
    assert await paths(glob="*.{py,md}", type="py") == ["a.py", "f/g.py"]
    globbed = await run(tools, ctx, "glob", pattern="*.{ts,tsx,md}")
    assert globbed.structured["paths"] == ["c.ts", "d.tsx", "e.md"]


FILTERED_TREE = (
    "pkg1/d.py", "pkg1/mod4/a.py", "pkg1/mod4/b.txt", "pkg1/mod4/i.log", "pkg1/mod4/keep.log",
    "pkg1/mod7/c.py", "pkg3/e.py", "pkg3/.k.py", "pkg3/sub/g.pyi", "pkg3/sub/mod4/f.py",
    "build/mod4/h.py", ".hidden/mod4/j.py", "node_modules/mod4/l.py", "mod4/m.py", "é.py",
    "!x.py", "a b/n.py",
)  # fmt: skip
ONE_CHAR = [
    "a b/n.py", "mod4/m.py", "pkg1/d.py", "pkg1/mod4/a.py", "pkg1/mod7/c.py", "pkg3/e.py",
    "pkg3/sub/mod4/f.py", "é.py",
]  # fmt: skip
FILTER_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("**/mod4/*.py", {}, ["mod4/m.py", "pkg1/mod4/a.py", "pkg3/sub/mod4/f.py"]),
    ("pkg3/**/*.py", {}, ["pkg3/e.py", "pkg3/sub/mod4/f.py"]),
    ("pkg3/**/*.py", {"hidden": True}, ["pkg3/.k.py", "pkg3/e.py", "pkg3/sub/mod4/f.py"]),
    ("pkg3/**", {}, ["pkg3/e.py", "pkg3/sub/g.pyi", "pkg3/sub/mod4/f.py"]),
    ("/pkg3/e.py", {}, ["pkg3/e.py"]),
    ("**/pkg3/*.py", {}, ["pkg3/e.py"]),
    ("pkg1/*/*.{py,txt}", {}, ["pkg1/mod4/a.py", "pkg1/mod4/b.txt", "pkg1/mod7/c.py"]),
    ("{pkg1,pkg3/sub}/*.py*", {}, ["pkg1/d.py", "pkg3/sub/g.pyi"]),
    ("pkg[13]/mod[!7]/*.py", {}, ["pkg1/mod4/a.py"]),
    ("?.py", {}, ONE_CHAR),  # "?" is one character: é is two bytes
    ("!*.py", {}, ["!x.py"]),  # no negation: "!" is a character like another
    ("a b/*.py", {}, ["a b/n.py"]),
    ("*.log", {}, ["pkg1/mod4/keep.log"]),  # *.log ignored, !keep.log not
    ("*.log", {"include_ignored": True}, ["pkg1/mod4/i.log", "pkg1/mod4/keep.log"]),
    ("build/**", {}, []),
    ("build/**", {"include_ignored": True}, ["build/mod4/h.py"]),
    (".hidden/**", {}, []),
    (".hidden/**/*.py", {"hidden": True}, [".hidden/mod4/j.py"]),
    ("node_modules/**", {"hidden": True, "include_ignored": True}, []),
    ("pkg3/sub", {}, []),  # a directory: no file
    ("sub/**/*.py", {"path": "pkg3"}, ["pkg3/sub/mod4/f.py"]),
    ("*.py", {"path": "pkg1"}, ["pkg1/d.py", "pkg1/mod4/a.py", "pkg1/mod7/c.py"]),
    ("mod4/*.{py,txt}", {"path": "pkg1"}, ["pkg1/mod4/a.py", "pkg1/mod4/b.txt"]),
]


async def test_glob_filters_and_prefixes_find_the_same_files_on_every_engine(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    # glob, and grep's glob filter, on ripgrep (its walk narrowed by the glob) and on
    # ctxfs's own walk (which enters only the directories a match may lie in)
    await seed(".gitignore", b"build/\n*.log\n!keep.log\n")
    for path in FILTERED_TREE:
        await seed(path, b"needle\n")
    wrong = {}
    for pattern, options, expected in FILTER_CASES:
        globbed = await run(tools, ctx, "glob", pattern=pattern, **options)
        grepped = await run(
            tools, ctx, "grep", pattern="needle", glob=pattern, output_mode="files_with_matches",
            **options,
        )  # fmt: skip
        files = [item["path"] for item in grepped.structured.get("files", [])]
        found = (globbed.structured["paths"], files)
        if found != (expected, expected):
            wrong[pattern, str(options)] = found
    assert wrong == {}


async def test_a_filtered_grep_counts_only_the_files_it_searched(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    for package in range(3):
        for module in range(3):
            for name in ("a.py", "b.py", "c.txt"):
                path = f"pkg{package}/mod{module}/{name}"
                await seed(path, b"needle\n" if path == "pkg2/mod1/a.py" else b"hay\n")
    for glob, searched in (("**/mod1/*.py", 6), ("pkg2/**/*.py", 6), ("pkg2/mod1/*", 3)):
        found = await run(tools, ctx, "grep", pattern="needle", glob=glob)
        assert [match["path"] for match in found.structured["matches"]] == ["pkg2/mod1/a.py"]
        assert found.structured["files_searched"] == searched, glob
        assert f"(1 match in {searched} files searched)" in found.text


async def test_a_grep_never_counts_files_its_filter_leaves_out(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    # An engine reads "*.[ch]" as "*": it searched a.txt and b.py too, and said 4 files.
    for name in ("a.c", "b.h", "a.txt", "b.py"):
        await seed(name, b"x\n")
    found = await run(tools, ctx, "grep", pattern="x", glob="*.[ch]")
    assert [match["path"] for match in found.structured["matches"]] == ["a.c", "b.h"]
    assert found.structured.get("files_searched") in (None, 2)
    assert "4 files searched" not in found.text


async def test_a_walk_enters_only_the_directories_a_glob_may_match(
    ctx: Context, seed: Seed
) -> None:
    for n in range(20):
        await seed(f"big/f{n}.py", b"needle\n")
    await seed("pkg/sub/a.py", b"needle\n")
    tools = FsToolset(ToolsetOptions(max_walk_entries=10))  # big alone is more
    for name, arguments in (
        ("glob", {"pattern": "pkg/**/*.py"}),
        ("glob", {"pattern": "pkg/**/*.py", "sort": "modified"}),
        ("grep", {"pattern": "needle", "glob": "pkg/**/*.py"}),
    ):
        found = await run(tools, ctx, name, **arguments)
        assert found.structured["walk_truncated"] is False, arguments
        assert found.structured["total"] == 1, arguments


@pytest.mark.parametrize("fs", ["local", "ripgrep"], indirect=True)  # names as bytes, links
async def test_globs_match_names_that_are_not_utf8_and_never_follow_a_linked_directory(
    tools: FsToolset, fs: Fs, ctx: Context, seed: Seed
) -> None:
    root = os.fsencode(fs.backend.root)  # type: ignore[attr-defined]
    os.makedirs(os.path.join(root, b"d\xff/sub"))
    for name in (b"q\xff.py", b"d\xff/sub/r.py", b"d\xff/s.txt"):
        with open(os.path.join(root, name), "wb") as out:
            out.write(b"needle\n")
    os.symlink(b"d\xff", os.path.join(root, b"link"))
    cases = [  # a pattern may hold the byte as JSON's "\udcff" gives it; a path as \xff too
        ({"pattern": "*.py"}, ["d\\xff/sub/r.py", "q\\xff.py"]),
        ({"pattern": "q?.py"}, ["q\\xff.py"]),
        ({"pattern": "q\udcff*"}, ["q\\xff.py"]),
        ({"pattern": "d\udcff/*/*.py"}, ["d\\xff/sub/r.py"]),
        ({"pattern": "sub/*", "path": "d\\xff"}, ["d\\xff/sub/r.py"]),
        ({"pattern": "link/**"}, []),  # a link to a directory is not followed
    ]
    for arguments, expected in cases:
        globbed = await run(tools, ctx, "glob", **arguments)
        assert globbed.structured["paths"] == expected, arguments
        grep_arguments = {**arguments, "glob": arguments["pattern"], "pattern": "needle"}
        grepped = await run(tools, ctx, "grep", output_mode="count", **grep_arguments)
        assert [item["path"] for item in grepped.structured.get("files", [])] == expected


@pytest.mark.timeout(30)  # a search stuck on a FIFO would wait for a writer for ever
@pytest.mark.parametrize("fs", ["local", "ripgrep"], indirect=True)  # FIFOs
async def test_a_fifo_is_skipped_at_once_by_every_search(
    tools: FsToolset, fs: Fs, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", b"needle\n")
    await seed("dir/b.txt", b"needle\n")
    root = fs.backend.root  # type: ignore[attr-defined]
    os.mkfifo(root / "fifo")
    os.mkfifo(root / "dir" / "fifo.txt")
    for mode in ("content", "files_with_matches", "count"):
        alone = await run(tools, ctx, "grep", pattern="needle", path="fifo", output_mode=mode)
        assert alone.structured["total"] == 0
        assert alone.structured["skipped"] == {"not_a_regular_file": 1}
        assert "(1 file skipped: 1 not regular (FIFOs, sockets, devices))" in alone.text
    for path, expected in (("", ["a.txt", "dir/b.txt"]), ("dir", ["dir/b.txt"])):
        for options in ({}, {"glob": "**/*.txt"}, {"hidden": True, "include_ignored": True}):
            found = await run(tools, ctx, "grep", pattern="needle", path=path, **options)
            assert [m["path"] for m in found.structured["matches"]] == expected
        globbed = await run(tools, ctx, "glob", pattern="**", path=path)
        assert globbed.structured["paths"] == expected


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"type": "cobol"}, "type"),
        ({"glob": "src/[a"}, "pattern"),
        ({"glob": "{a,b}" * 11}, "pattern"),
        ({"pattern": "(unclosed"}, "pattern"),
    ],
)
async def test_bad_filters_are_clear_invalid_arguments(
    arguments: dict[str, str], field: str, tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.py", b"x\n")
    refused = await run(tools, ctx, "grep", **{"pattern": "x", **arguments})
    assert refused.error_code is ErrorCode.INVALID_ARGUMENT, refused.text
    assert refused.structured["error"]["details"]["field"] == field


async def test_context_beyond_the_cap_is_refused(tools: FsToolset, ctx: Context) -> None:
    refused = await run(tools, ctx, "grep", pattern="x", context=51)
    assert refused.error_code is ErrorCode.INVALID_ARGUMENT
    assert "context" in refused.text
    named = await run(tools, ctx, "grep", pattern="x", type="cobol")
    assert "py" in (named.structured["error"]["hint"] or "")


async def test_glob_sorts_by_modification_time_newest_first(
    tools: FsToolset, ctx: Context, seed: Seed, fs: Fs
) -> None:
    for name, age in {"old.py": 0, "new.py": 200, "mid.py": 100}.items():
        await seed(name, b"x\n")
        stamp = 1_000_000 + age
        if isinstance(fs.backend, MemoryBackend):
            files = fs.backend.store.files  # the fake's own clock
            files[name] = dataclasses.replace(files[name], mtime=stamp)
        else:
            os.utime(fs.backend.root / name, (stamp, stamp))  # type: ignore[attr-defined]
    newest = await run(tools, ctx, "glob", pattern="*.py", sort="modified")
    assert newest.structured["paths"] == ["new.py", "mid.py", "old.py"]
    by_path = await run(tools, ctx, "glob", pattern="*.py")
    assert by_path.structured["paths"] == ["mid.py", "new.py", "old.py"]


# -- ignore files and hidden names ---------------------------------------------------------------


IGNORED_TREE = {
    ".gitignore": b"build/\n*.log\n!keep.log\n/top.txt\n",
    ".git/info/exclude": b"excluded.txt\n",
    "excluded.txt": b"needle\n",
    "top.txt": b"needle\n",
    "sub/top.txt": b"needle\n",
    "build/out.txt": b"needle\n",
    "sub/build/deep.txt": b"needle\n",
    "x.log": b"needle\n",
    "keep.log": b"needle\n",
    "sub/.gitignore": b"!x.log\nlocal.txt\n",
    "sub/x.log": b"needle\n",
    "sub/local.txt": b"needle\n",
    "sub/.ignore": b"!local.txt\nsecret.txt\n",
    "sub/secret.txt": b"needle\n",
    "src/a.py": b"needle\n",
    ".hidden/h.txt": b"needle\n",
    ".env": b"needle\n",
}


async def test_ignore_files_and_hidden_names_follow_ripgreps_defaults(
    tools: FsToolset, ctx: Context, seed: Seed, engine: str
) -> None:
    for path, data in IGNORED_TREE.items():
        await seed(path, data)
    found = await run(tools, ctx, "grep", pattern="needle", output_mode="files_with_matches")
    kept = [item["path"] for item in found.structured["files"]]
    # build/ (a directory pattern, at any depth), *.log (but not keep.log), /top.txt (anchored
    # to the root only), .git/info/exclude; sub/.gitignore re-includes x.log; sub/.ignore
    # overrides sub/.gitignore for local.txt; hidden names are left out.
    assert kept == ["keep.log", "src/a.py", "sub/local.txt", "sub/top.txt", "sub/x.log"]
    if engine == "walk":  # ripgrep does not say what it left out
        # build, excluded, top, x.log, sub/build, secret; .gitignore, .hidden, .env, sub's two
        assert (found.structured["ignored_skipped"], found.structured["hidden_skipped"]) == (6, 5)
        assert "include_ignored=true includes them" in found.text
    below = await run(
        tools, ctx, "grep", pattern="needle", output_mode="files_with_matches", path="sub"
    )  # beneath sub, the root's rules still hold (build/ and *.log; sub/.gitignore keeps x.log)
    assert [item["path"] for item in below.structured["files"]] == [
        "sub/local.txt", "sub/top.txt", "sub/x.log",
    ]  # fmt: skip
    everything = await run(
        tools, ctx, "grep", pattern="needle", output_mode="files_with_matches",
        include_ignored=True, hidden=True,
    )  # fmt: skip
    assert len(everything.structured["files"]) == 13  # all but .git/info/exclude (in .git)
    globbed = await run(tools, ctx, "glob", pattern="**/*.txt")
    assert globbed.structured["paths"] == ["sub/local.txt", "sub/top.txt"]
    assert globbed.structured["ignored_skipped"] == (6 if engine == "walk" else 0)
    hidden = await run(tools, ctx, "glob", pattern="**/*.txt", hidden=True)
    assert hidden.structured["paths"] == [".hidden/h.txt", "sub/local.txt", "sub/top.txt"]


async def test_rgignore_overrides_ignore_as_in_ripgrep(
    tools: FsToolset, ctx: Context, seed: Seed, engine: str
) -> None:
    for path, data in {
        ".gitignore": b"c.txt\n",
        ".ignore": b"a.txt\n!c.txt\n",
        ".rgignore": b"!a.txt\nb.txt\n",
        "a.txt": b"needle\n",
        "b.txt": b"needle\n",
        "c.txt": b"needle\n",
        "d.txt": b"needle\n",
    }.items():
        await seed(path, data)
    found = await run(tools, ctx, "grep", pattern="needle", output_mode="files_with_matches")
    assert [item["path"] for item in found.structured["files"]] == ["a.txt", "c.txt", "d.txt"]
    globbed = await run(tools, ctx, "glob", pattern="*.txt")
    assert globbed.structured["paths"] == ["a.txt", "c.txt", "d.txt"]


KINDS_OF_IGNORE_FILE = {  # (each seen from ripgrep itself; the walk must agree)
    "a shallow .rgignore over a deeper .gitignore": (
        {".rgignore": b"x.txt\n", "sub/.gitignore": b"!x.txt\n"},
        ["sub/y.txt"],
    ),
    "a shallow .rgignore over a deeper .ignore": (
        {".rgignore": b"x.txt\n", "sub/.ignore": b"!x.txt\n"},
        ["sub/y.txt"],
    ),
    "a shallow .rgignore's negation over a deeper .ignore": (
        {".gitignore": b"*.txt\n", ".rgignore": b"!x.txt\n", "sub/.ignore": b"x.txt\n"},
        ["sub/x.txt"],
    ),
    "a deeper .gitignore over a shallower one": (
        {".gitignore": b"x.txt\n", "sub/.gitignore": b"!x.txt\n"},
        ["sub/x.txt", "sub/y.txt"],
    ),
}


@pytest.mark.parametrize("tree", list(KINDS_OF_IGNORE_FILE))
async def test_the_kind_of_ignore_file_decides_before_its_depth(
    tools: FsToolset, ctx: Context, seed: Seed, engine: str, tree: str
) -> None:
    files, kept = KINDS_OF_IGNORE_FILE[tree]
    for path, data in {**files, "sub/x.txt": b"needle\n", "sub/y.txt": b"needle\n"}.items():
        await seed(path, data)
    globbed = await run(tools, ctx, "glob", pattern="**/*.txt")
    assert globbed.structured["paths"] == kept
    found = await run(tools, ctx, "grep", pattern="needle", output_mode="files_with_matches")
    assert [item["path"] for item in found.structured["files"]] == kept


RIPGREPS_VERDICTS = {  # (each seen from ripgrep itself: the files kept, beneath the root and sub)
    "an allow-list at the root": (
        {".gitignore": b"*\n!*/\n!*.py\n", "a.py": b"", "a.txt": b"", "sub/b.py": b"",
         "sub/b.txt": b"", "sub/deep/c.py": b"", "docs/d.txt": b""},
        ["a.py", "sub/b.py", "sub/deep/c.py"],
        ["sub/b.py", "sub/deep/c.py"],
    ),
    "a directory's contents, not the directory": (
        {".gitignore": b"sub/**\n!sub/keep.txt\n", "sub/keep.txt": b"", "sub/x.txt": b"",
         "sub/deep/y.txt": b"", "other/o.txt": b""},
        ["other/o.txt", "sub/keep.txt"],
        ["sub/keep.txt"],
    ),
    "rules above the searched directory, anchored or not": (
        {".gitignore": b"generated/\n*.log\n/build\nsub/gen/\n", "sub/a.py": b"",
         "sub/generated/m.js": b"", "sub/gen/g.py": b"", "sub/build/b.py": b"", "build/x.py": b"",
         "sub/x.log": b"", "sub/logs/y.txt": b""},
        ["sub/a.py", "sub/build/b.py", "sub/logs/y.txt"],
        ["sub/a.py", "sub/build/b.py", "sub/logs/y.txt"],
    ),
    "a nested repository's exclude file, and the rules around it": (
        {".gitignore": b"top.py\n", ".git/info/exclude": b"rootex.py\n",
         "sub/.git/info/exclude": b"excl.py\n", "sub/excl.py": b"", "sub/deep/excl.py": b"",
         "sub/top.py": b"", "sub/rootex.py": b"", "sub/kept.py": b"", "other/excl.py": b"",
         "kept.py": b""},
        ["kept.py", "other/excl.py", "sub/kept.py"],
        ["sub/kept.py"],
    ),
    "a hidden name a rule re-includes stays hidden": (
        {".gitignore": b"!.env\n!sub/.cfg\n", ".env": b"", "sub/.cfg": b"", "v.txt": b""},
        ["v.txt"],
        [],
    ),
}  # fmt: skip


@pytest.mark.parametrize("tree", list(RIPGREPS_VERDICTS))
async def test_the_walk_keeps_what_ripgrep_keeps(
    tools: FsToolset, ctx: Context, seed: Seed, tree: str
) -> None:
    files, kept, kept_beneath_sub = RIPGREPS_VERDICTS[tree]
    for path, data in files.items():
        await seed(path, data or b"needle\n")
    for path, expected in (("", kept), ("sub", kept_beneath_sub)):
        globbed = await run(tools, ctx, "glob", pattern="**", path=path)
        assert globbed.structured["paths"] == expected, path
        found = await run(
            tools, ctx, "grep", pattern="needle", output_mode="files_with_matches", path=path
        )
        assert [item["path"] for item in found.structured.get("files", [])] == expected, path


@pytest.mark.parametrize("tree", list(RIPGREPS_VERDICTS))
async def test_a_store_listed_whole_keeps_what_ripgrep_keeps(tools: FsToolset, tree: str) -> None:
    # an object store lists the tree at once (the walk then reads that listing), and the
    # directories above the searched one by listing each
    files, kept, kept_beneath_sub = RIPGREPS_VERDICTS[tree]
    backend = open_backend(f"fsspec+memory://ctxfs-{uuid.uuid4().hex}/root")
    async with Fs(backend, load_entrypoints=False) as fs:
        assert backend.capabilities.tree_listing
        for path, data in files.items():
            await backend.write(path, data or b"needle\n", expect=ABSENT)
        ctx = fs.context(owner="agent")
        for path, expected in (("", kept), ("sub", kept_beneath_sub)):
            globbed = await run(tools, ctx, "glob", pattern="**", path=path)
            assert globbed.structured["paths"] == expected, path


async def test_an_oversized_ignore_file_gives_no_rules(
    tools: FsToolset, ctx: Context, seed: Seed, engine: str
) -> None:
    # A .gitignore past a megabyte is not read whole into memory: the walk takes no rules
    # from it (ripgrep reads it its own way).
    await seed(".gitignore", b"kept.txt\n" + b"#" * (1 << 20) + b"\n")
    await seed("kept.txt", b"needle\n")
    found = await run(tools, ctx, "grep", pattern="needle", output_mode="files_with_matches")
    paths = [item["path"] for item in found.structured.get("files", [])]
    assert paths == ([] if engine == "ripgrep" else ["kept.txt"])


# -- the page's lines from the engine ----------------------------------------------------------


async def test_the_engine_gives_the_pages_lines_even_of_a_long_line(
    tools: FsToolset, fs: Fs, ctx: Context, seed: Seed, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ripgrep hands over the matching and context lines, so a large file is not read again
    # in Python; a line over its cap comes cut around its match (tests/local/test_long_lines.py).
    await seed("big.txt", numbered(50_000, marks={7: "x needle 1", 49_990: "needle 2"}))
    await seed("long.txt", b"a" * (3 << 20) + b" needle 3\nnext\n")
    opened: list[str] = []
    open_read = fs.backend.open_read

    def counted(path: str, **options: Any) -> Any:
        opened.append(path)
        return open_read(path, **options)

    monkeypatch.setattr(fs.backend, "open_read", counted)
    found = await run(tools, ctx, "grep", pattern="needle", context=1)
    assert [(m["path"], m["line"], m["column"]) for m in found.structured["matches"]] == [
        ("big.txt", 7, 3),
        ("big.txt", 49_990, 1),
        ("long.txt", 1, (3 << 20) + 2),
    ]
    assert [line["line"] for line in found.structured["matches"][1]["before"]] == [49_989]
    assert [line["line"] for line in found.structured["matches"][1]["after"]] == [49_991]
    assert found.structured["matches"][2]["after"] == [{"line": 2, "text": "next"}]
    assert opened == ([] if engine == "ripgrep" else ["big.txt", "long.txt"])
    alone = await run(tools, ctx, "grep", pattern="needle", path="big.txt", limit=1)
    assert [m["line"] for m in alone.structured["matches"]] == [7]
    assert (alone.structured["total"], alone.structured["next_offset"]) == (2, 2)


async def test_a_walk_stopped_at_its_limit_names_the_directories_it_did_not_finish(
    ctx: Context, seed: Seed, engine: str
) -> None:
    for directory in ("a", "b", "c/d"):
        for n in range(5):
            await seed(f"{directory}/f{n}.txt", b"needle\n")
    tools = FsToolset(ToolsetOptions(max_walk_entries=10))
    for name, arguments in (("grep", {"pattern": "needle"}), ("glob", {"pattern": "**"})):
        found = await run(tools, ctx, name, **arguments)
        if engine == "ripgrep":  # ripgrep lists the tree itself: no walk, no walk limit
            assert found.structured["walk_truncated"] is False
            continue
        assert found.structured["walk_truncated"] is True
        assert found.structured["not_searched"] == ["b", "c"]  # b in part, c not at all
        assert "these directories were not searched, or only in part: b, c" in found.text
        assert "search them with `path`" in found.text
        shown = found.structured["matches" if name == "grep" else "paths"]
        assert len(shown) == 7  # a's five files, and two of b's, in path order
    rest = await run(tools, ctx, "grep", pattern="needle", path="c")
    assert rest.structured["total"] == 5


# -- every engine reads a pattern and a file's lines alike ---------------------------------------


@pytest.mark.parametrize(
    ("pattern", "found"),
    [
        ("foo$", [("win.txt", 1)]),  # before a \r\n
        ("gamma", [("cr.txt", 3), ("win.txt", 3)]),  # a lone \r breaks a line
        (r"\<a", [("odd.txt", 1)]),  # Python: a literal "<" (ripgrep: a word's start)
        ("(?x)a[ b]", [("odd.txt", 2), ("odd.txt", 3)]),  # a class's space counts (not in rg)
        ("[a-z&&[^aeiou]]", []),  # no set operations: "&&", "[", ... are characters
    ],
)
async def test_each_engine_finds_the_same_lines(
    tools: FsToolset, ctx: Context, seed: Seed, pattern: str, found: list[tuple[str, int]]
) -> None:
    await seed("win.txt", b"foo\r\nbar\r\ngamma\r\n")
    await seed("cr.txt", b"alpha\rbeta\ngamma\n")
    await seed("odd.txt", b"x <a\nx a y\nab\n")
    grep = await run(tools, ctx, "grep", pattern=pattern)
    assert [(match["path"], match["line"]) for match in grep.structured.get("matches", [])] == found
    assert grep.structured["total"] == len(found)


async def test_paging_never_stands_still_where_an_engine_counts_otherwise(
    fs: Fs, tools: FsToolset, ctx: Context
) -> None:
    if not isinstance(fs.backend, LocalBackend):
        pytest.skip("a name holding a line break is made on a disk")
    for name in ("a.txt", "b\nc.txt", "z.txt"):  # ripgrep counts b\nc.txt; no path names it
        (fs.backend.root / name).write_bytes(b"x\n")
    shown, offset = [], 1
    for _ in range(4):
        page = await run(tools, ctx, "grep", pattern="x", limit=1, offset=offset)
        shown += [match["path"] for match in page.structured.get("matches", [])]
        if page.structured.get("next_offset") is None:
            break
        offset = page.structured["next_offset"]
    assert shown == ["a.txt", "z.txt"]


async def test_a_multiline_search_skips_a_line_past_its_bound_without_holding_it(
    tools: FsToolset, ctx: Context, seed: Seed, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ctxfs.tools.builtin.grep.search.MULTILINE_MAX_CHARS", 1 << 20)
    await seed("one.txt", b"abcdefgh" * (2 << 20) + b"\n")  # 16 MiB in one line
    await seed("small.txt", b"abc\nzzz\n")
    tracemalloc.start()
    try:
        found = await run(tools, ctx, "grep", pattern="c\nz", multiline=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.text.splitlines()[-1] == "(1 file skipped: 1 too large)", found.text
    assert "small.txt" in found.text
    assert peak < 8 << 20  # the line was never held whole (16 MiB, and more decoded)
