"""ripgrep as fs-local's engine: a cancelled or overdue search kills it at once."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxfs.core import FileSearch, Fs
from ctxfs.core.policies import PathRules
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import Ripgrep, find_ripgrep
from ctxfs.tools import FsToolset, ToolsetOptions
from tests.tools.conftest import skip_without_ripgrep

pytestmark = pytest.mark.anyio


@pytest.fixture
def stuck(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    """Every ripgrep started also reads a FIFO no one writes: it runs until it is killed."""
    if find_ripgrep() is None:
        skip_without_ripgrep()
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("needle\n")
    os.mkfifo(root / "pipe")
    started: list[subprocess.Popen[bytes]] = []
    arguments, start = Ripgrep.arguments, Ripgrep._start

    def reading_the_fifo(self: Ripgrep, search: FileSearch, **options: Any) -> list[str]:
        return [*arguments(self, search, **options), "pipe"]

    def recorded(self: Ripgrep, *args: Any) -> subprocess.Popen[bytes]:
        started.append(start(self, *args))
        return started[-1]

    monkeypatch.setattr(Ripgrep, "arguments", reading_the_fifo)
    monkeypatch.setattr(Ripgrep, "_start", recorded)
    return started


async def test_a_cancelled_search_kills_ripgrep_at_once(
    stuck: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    async with Fs(backend, load_entrypoints=False) as fs:
        began = time.monotonic()
        with anyio.move_on_after(0.5) as scope:
            await FsToolset().execute(fs.context(owner="a"), "grep", {"pattern": "needle"})
        assert scope.cancelled_caught
        assert time.monotonic() - began < 3
    assert len(stuck) == 1
    assert stuck[0].wait(timeout=5) is not None  # killed, and reaped


async def test_a_search_past_its_deadline_kills_ripgrep_and_says_so(
    stuck: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    tools = FsToolset(ToolsetOptions(grep_seconds=0.5))
    async with Fs(backend, load_entrypoints=False) as fs:
        began = time.monotonic()
        found = await tools.execute(fs.context(owner="a"), "grep", {"pattern": "needle"})
        assert time.monotonic() - began < 3
    assert found.structured["timed_out"] is True
    assert found.structured["total_exact"] is False
    assert stuck[0].poll() is not None


@pytest.mark.parametrize("denied", [False, True])
async def test_a_long_ripgrep_search_tells_how_many_files_it_found_so_far(
    stuck: list[subprocess.Popen[bytes]], tmp_path: Path, denied: bool
) -> None:
    heard: list[tuple[float, float | None, str]] = []

    async def progress(done: float, total: float | None, message: str) -> None:
        heard.append((done, total, message))

    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    tools = FsToolset(ToolsetOptions(grep_seconds=1.5, progress_seconds=0.2))
    plugins = [PathRules(deny=["secret"])] if denied else []
    async with Fs(backend, load_entrypoints=False, plugins=plugins) as fs:
        ctx = fs.context(owner="a")
        found = await tools.execute(ctx, "grep", {"pattern": "needle"}, progress=progress)
    assert found.structured["timed_out"] is True
    assert len(heard) >= 3  # every 0.2 s while ripgrep ran
    # (where a policy hides files, ripgrep's count would count them too: none is told)
    assert heard[-1] == (
        (0, None, "searching") if denied else (1, None, "1 file with matches so far")
    )


@pytest.mark.slow
async def test_a_pattern_too_long_for_a_command_line_is_searched_all_the_same(
    tmp_path: Path,
) -> None:
    if find_ripgrep() is None:
        skip_without_ripgrep()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("x = ident_011999\n")
    pattern = "|".join(f"ident_{number:06d}" for number in range(12_000))  # 156 KB
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state", ripgrep=True)
    async with Fs(backend, load_entrypoints=False) as fs:
        found = await FsToolset().execute(fs.context(owner="a"), "grep", {"pattern": pattern})
    assert found.text.startswith("a.txt:1: x = ident_011999\n"), found.text


async def test_a_pattern_no_command_line_holds_is_searched_as_elsewhere(tmp_path: Path) -> None:
    # A lone surrogate cannot be an argument of ripgrep's: the search reads the files, as a
    # store without an engine does (and matches no text).
    if find_ripgrep() is None:
        skip_without_ripgrep()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("hello\n")
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state", ripgrep=True)
    async with Fs(backend, load_entrypoints=False) as fs:
        ctx, tools = fs.context(owner="a"), FsToolset()
        for arguments in ({"pattern": "\ud800"}, {"pattern": "\ud800", "path": "a.txt"}):
            found = await tools.execute(ctx, "grep", arguments)
            assert not found.is_error, found.text
            assert found.structured["total"] == 0


async def test_a_search_through_a_link_to_the_root_searches_the_root(tmp_path: Path) -> None:
    # The link resolves to "" (the root), which was taken for "not resolved": every search
    # of it failed stale, "retry", for good.
    (tmp_path / "root" / "d").mkdir(parents=True)
    (tmp_path / "root" / "a.txt").write_text("x\n")
    (tmp_path / "root" / "r").symlink_to(".")
    (tmp_path / "root" / "d" / "back").symlink_to("..")
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    async with Fs(backend, load_entrypoints=False) as fs:
        ctx, tools = fs.context(owner="a"), FsToolset()
        for path in ("r", "d/back"):
            found = await tools.execute(ctx, "grep", {"pattern": "x", "path": path})
            assert found.text.startswith(f"{path}/a.txt:1: x"), found.text
            listed = await tools.execute(ctx, "glob", {"pattern": "*.txt", "path": path})
            assert listed.text.startswith(f"{path}/a.txt"), listed.text
        nul = await tools.execute(ctx, "grep", {"pattern": "x\0"})
        assert not nul.is_error, nul.text  # (no command line holds a NUL: searched as elsewhere)


async def test_the_walk_and_ripgrep_leave_links_alike(tmp_path: Path) -> None:
    # ripgrep follows no link; the walk (a sort by time, a multiline search) listed every
    # link as a file: to directories, dangling, to itself.
    (tmp_path / "root" / "d").mkdir(parents=True)
    (tmp_path / "root" / "a.txt").write_text("x\n")
    for name, target in (("in.txt", "a.txt"), ("up", ".."), ("gone", "nowhere"), ("self", "self")):
        (tmp_path / "root" / name).symlink_to(target)
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state", ripgrep=True)
    async with Fs(backend, load_entrypoints=False) as fs:
        ctx, tools = fs.context(owner="a"), FsToolset()
        for name, arguments in (
            ("glob", {"pattern": "**"}),
            ("glob", {"pattern": "**", "sort": "modified"}),
            ("grep", {"pattern": "x", "output_mode": "files_with_matches"}),
            ("grep", {"pattern": "x", "output_mode": "files_with_matches", "multiline": True}),
        ):
            found = await tools.execute(ctx, name, arguments)
            assert found.text.splitlines()[0] == "a.txt", (arguments, found.text)
            assert "skipped" not in found.text, (arguments, found.text)
            assert found.text.splitlines()[1].startswith("(1 file"), (arguments, found.text)


async def test_a_ripgrep_that_cannot_start_here_leaves_the_search_to_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    engine = find_ripgrep()
    if engine is None:
        skip_without_ripgrep()
    assert engine is not None
    # (a file it loads that this user may not open: a virtual environment of another user's)
    monkeypatch.setattr(engine, "startup_files", (*engine.startup_files, str(tmp_path / "gone")))
    monkeypatch.setattr("ctxfs.local.backend.find_ripgrep", lambda: engine)
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("needle\n")
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    async with Fs(backend, load_entrypoints=False) as fs:
        found = await FsToolset().execute(fs.context(owner="a"), "grep", {"pattern": "needle"})
    assert found.error_code is None, found.text
    assert found.text.startswith("a.txt:1: needle")
    assert "ripgrep could not start" in caplog.text


async def test_a_brace_before_a_space_is_text_as_python_reads_it(tmp_path: Path) -> None:
    # Rust reads "a{ 1,}" as a repeat (it skips the space); Python's regex as the text itself
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "fruit.txt").write_text("banana\n")
    (tmp_path / "root" / "code.js").write_text("const x{ 2} = 1;\n")
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    async with Fs(backend, load_entrypoints=False) as fs:
        ctx, tools = fs.context(owner="a"), FsToolset()
        for pattern, found in (("na{ 1,}", []), ("x{ 2}", ["code.js"])):
            counted = await tools.execute(ctx, "grep", {"pattern": pattern, "output_mode": "count"})
            assert [item["path"] for item in counted.structured.get("files", [])] == found, pattern


async def test_files_no_path_can_name_are_skipped_in_every_mode(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    for name in ("ok.txt", "back\\slash.txt", "line\nbreak.txt"):
        (tmp_path / "root" / name).write_text("needle\n")
    backend = LocalBackend(tmp_path / "root", state_dir=tmp_path / "state")
    async with Fs(backend, load_entrypoints=False) as fs:
        ctx, tools = fs.context(owner="a"), FsToolset()
        for mode in ("content", "count", "files_with_matches"):
            found = await tools.execute(ctx, "grep", {"pattern": "needle", "output_mode": mode})
            assert found.structured["total"] == 1, (mode, found.text)
            assert found.structured["skipped"] == {"invalid_path": 2}, mode
