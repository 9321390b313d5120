"""The next page of a ripgrep search reuses its answer while nothing below has changed.

ripgrep's count pass is counted (its runs are recorded), not timed; every kind of
change below the searched directory makes the next page search again.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ctxfs.core import Context, FileSearch, Fs
from ctxfs.local import LocalBackend
from ctxfs.local.answers import RecentAnswers, changed_since
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset
from tests.tools.conftest import skip_without_ripgrep

pytestmark = pytest.mark.anyio

SETTLE = 0.05
"""How old a change must be to count as before a search (the kernel's clock is coarse)."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    if find_ripgrep() is None:
        skip_without_ripgrep()
    root = tmp_path / "root"
    for index in range(300):
        folder = root / f"d{index // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index:03}.txt").write_text("a\n" + "needle\n" * (index % 3))
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("")
    (root / "node_modules").mkdir()
    time.sleep(SETTLE * 2)  # the tree is older than any search below
    return root


@pytest.fixture
async def ctx(root: Path, tmp_path: Path) -> AsyncIterator[Context]:
    backend = LocalBackend(root, state_dir=tmp_path / "state")
    backend.answers = RecentAnswers(settle_seconds=SETTLE)
    async with Fs(backend, load_entrypoints=False) as fs:
        yield fs.context(owner="agent")


async def page(ctx: Context, offset: int, **arguments: Any) -> dict[str, Any]:
    arguments = {"pattern": "needle", "offset": offset, "limit": 50, **arguments}
    result = await FsToolset().execute(ctx, "grep", arguments)
    assert result.error_code is None, result.text
    return result.structured


async def test_the_next_pages_of_an_unchanged_tree_run_no_count_pass(
    ctx: Context, counted: list[FileSearch]
) -> None:
    first = await page(ctx, 1)
    pages = [await page(ctx, offset) for offset in (51, 101, 151, 201, 251)]
    assert len(counted) == 1
    assert first["total"] == 300
    assert first["total_exact"] is True
    lines = [(hit["path"], hit["line"]) for found in (first, *pages) for hit in found["matches"]]
    assert len(lines) == len(set(lines)) == 300


async def test_the_files_mode_pages_reuse_the_answer_too(
    ctx: Context, counted: list[FileSearch]
) -> None:
    first = await page(ctx, 1, output_mode="files_with_matches")
    second = await page(ctx, 51, output_mode="files_with_matches")
    assert len(counted) == 1
    assert first["total"] == second["total"] == 200


async def test_cleared_answers_are_searched_again(ctx: Context, counted: list[FileSearch]) -> None:
    await page(ctx, 1)
    backend = ctx.opened_fs.backend
    assert isinstance(backend, LocalBackend)
    backend.answers.clear()
    second = await page(ctx, 51)
    assert len(counted) == 2
    assert second["total"] == 300


def _write_in_place(root: Path) -> None:
    with (root / "d0" / "f000.txt").open("r+") as file:  # no rename: the directory keeps its time
        file.write("needle\n")


def _create(root: Path) -> None:
    (root / "d1" / "new.txt").write_text("needle\n")


def _delete(root: Path) -> None:
    (root / "d2" / "f201.txt").unlink()


def _move_in_an_old_directory(root: Path) -> None:
    outside = root.parent / "old"
    outside.mkdir()
    (outside / "kept.txt").write_text("needle\n")
    time.sleep(SETTLE * 2)  # older than the search: only the move itself is new
    shutil.move(outside, root / "d0" / "old")


def _rename_a_directory(root: Path) -> None:
    (root / "d2").rename(root / "d9")


def _edit_an_ignore_file(root: Path) -> None:
    (root / ".gitignore").write_text("d1/\n")


def _edit_git_exclude(root: Path) -> None:
    (root / ".git" / "info" / "exclude").write_text("d1/\n")


def _chmod(root: Path) -> None:
    os.chmod(root / "d0" / "f001.txt", 0o000)


@pytest.mark.parametrize(
    "change",
    [
        _write_in_place,
        _create,
        _delete,
        _move_in_an_old_directory,
        _rename_a_directory,
        _edit_an_ignore_file,
        _edit_git_exclude,
        _chmod,
    ],
)
async def test_any_change_below_makes_the_next_page_search_again(
    ctx: Context, root: Path, counted: list[FileSearch], change: Callable[[Path], None]
) -> None:
    before = await page(ctx, 1)
    time.sleep(SETTLE * 2)
    change(root)
    time.sleep(SETTLE * 2)  # so that the next answer can be reused in its turn
    after = await page(ctx, 51)
    assert len(counted) == 2
    fresh = await page(ctx, 51)  # what a new search would find: the answer just given
    assert len(counted) == 2
    assert after["total"] == fresh["total"]
    if change in (_write_in_place, _create, _move_in_an_old_directory):
        assert after["total"] == before["total"] + 1


@pytest.mark.parametrize("where", ["node_modules", ".git/objects", ".cache"])
async def test_changes_where_ripgrep_never_looks_keep_the_answer(
    ctx: Context, root: Path, counted: list[FileSearch], where: str
) -> None:
    (root / where).mkdir(parents=True, exist_ok=True)
    time.sleep(SETTLE * 2)
    first = await page(ctx, 1)
    time.sleep(SETTLE * 2)
    (root / where / "x.txt").write_text("needle\n")
    second = await page(ctx, 51)
    assert len(counted) == 1
    assert first["total"] == second["total"] == 300


def test_a_directory_swapped_for_a_link_counts_as_changed(root: Path, tmp_path: Path) -> None:
    search = FileSearch(path="d0", pattern="needle")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        since = time.time_ns()
        assert not changed_since(fd, search, since, budget=1_000)
        (root / "d0").rename(root / "gone")
        (root / "d0").symlink_to(root / "gone")
        assert changed_since(fd, search, since + 10**12, budget=1_000)  # not by its time
    finally:
        os.close(fd)


def test_a_check_costlier_than_a_search_gives_up(root: Path) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        search = FileSearch(path="", pattern="needle")
        since = time.time_ns()
        assert not changed_since(fd, search, since, budget=400)
        assert changed_since(fd, search, since, budget=100)
    finally:
        os.close(fd)


async def test_a_listing_is_listed_again(ctx: Context, counted: list[FileSearch]) -> None:
    # checking a kept listing would cost a stat per entry: more than listing again
    for offset in (1, 101):
        found = await FsToolset().execute(ctx, "glob", {"pattern": "**/*.txt", "offset": offset})
        assert found.error_code is None, found.text
    assert [run.pattern for run in counted] == [None, None]
