"""Pages of a large directory: only the page is looked at, and nothing is stale."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxfs.core import Fs, NotADirectory
from ctxfs.core.policies import PathRules
from ctxfs.local import LocalBackend

pytestmark = pytest.mark.anyio

ENTRIES = 500


def _settled(directory: Path) -> None:
    """Date the directory back past the racy window, as if listed long after its last change."""
    old = os.stat(directory).st_mtime - 3600
    os.utime(directory, (old, old))


@pytest.fixture
def big(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "many").mkdir(parents=True)
    for index in range(ENTRIES):
        (root / "many" / f"f{index:04}.txt").write_text("x" * index)
    (root / "many" / "sub").mkdir()
    (root / "many" / "secret.env").write_text("token")
    _settled(root / "many")
    return root


class _Counted:
    """Counts the calls that read a directory and that ``stat`` one entry."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scans = self.stats = 0
        scandir, stat = os.scandir, os.stat

        def counted_scandir(*args: object, **kwargs: object) -> object:
            self.scans += 1
            return scandir(*args, **kwargs)  # type: ignore[call-overload]

        def counted_stat(*args: object, **kwargs: object) -> os.stat_result:
            self.stats += 1
            return stat(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "scandir", counted_scandir)
        monkeypatch.setattr(os, "stat", counted_stat)


async def test_pages_join_into_the_whole_listing(big: Path, tmp_path: Path) -> None:
    async with Fs(LocalBackend(big, state_dir=tmp_path / "state"), load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        whole = await ctx.fs.list("many")
        paged = []
        for first in range(1, len(whole) + 1, 64):
            page = await ctx.fs.list_page("many", first=first, count=64)
            assert page.total == len(whole)
            paged.extend(page.entries)
    assert paged == list(whole)  # same order, kinds, sizes and times


async def test_the_next_page_reads_no_directory_and_stats_only_its_entries(
    big: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Fs(LocalBackend(big, state_dir=tmp_path / "state"), load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.list_page("many", first=1, count=50)
        counted = _Counted(monkeypatch)
        page = await ctx.fs.list_page("many", first=51, count=50)
        assert [entry.name for entry in page.entries] == [f"f{n:04}.txt" for n in range(50, 100)]
        assert [entry.size for entry in page.entries] == list(range(50, 100))
    assert counted.scans == 0
    assert counted.stats <= 50 + 5  # the page's entries (and the root's checks), not 500


async def test_a_changed_directory_or_file_is_seen_on_the_next_page(
    big: Path, tmp_path: Path
) -> None:
    async with Fs(LocalBackend(big, state_dir=tmp_path / "state"), load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        first = await ctx.fs.list_page("many", first=1, count=10)
        (big / "many" / "f0000.txt").write_text("grown")  # the directory's times stay
        (big / "many" / "a-new.txt").write_text("new")  # the directory's times move
        again = await ctx.fs.list_page("many", first=1, count=10)
    assert again.total == first.total + 1
    assert again.entries[0].name == "a-new.txt"
    assert again.entries[1].size == len("grown")


async def test_a_directory_changed_within_the_racy_window_is_listed_again(
    big: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (big / "many" / "fresh.txt").write_text("now")  # the directory was modified just now
    async with Fs(LocalBackend(big, state_dir=tmp_path / "state"), load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.list_page("many", first=1, count=10)
        counted = _Counted(monkeypatch)
        await ctx.fs.list_page("many", first=11, count=10)
    assert counted.scans == 1


async def test_hidden_entries_are_neither_shown_nor_counted(big: Path, tmp_path: Path) -> None:
    backend = LocalBackend(big, state_dir=tmp_path / "state")
    (big / "many" / "link-to-secret").symlink_to("secret.env")
    _settled(big / "many")
    async with Fs(backend, plugins=[PathRules(deny=["**/*.env"])], load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        pages = [await ctx.fs.list_page("many", first=n, count=100) for n in range(1, 600, 100)]
    names = {entry.name for page in pages for entry in page.entries}
    assert "secret.env" not in names
    assert "link-to-secret" not in names
    assert {page.total for page in pages} == {ENTRIES + 1}  # the files and sub/


async def test_listing_a_file_says_it_is_one(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    backend = LocalBackend(tmp_path, state_dir=tmp_path.parent / "state-of-a-file")
    for details in (True, False):
        with pytest.raises(NotADirectory, match=r"^a\.txt is a file, not a directory$"):
            await backend.list("a.txt", details=details)
    with pytest.raises(NotADirectory, match=r"a component of a\.txt/b"):
        await backend.list("a.txt/b")
