"""A link swapped between the policies' judgement and the backend's open reaches nothing judged.

``a`` links to ``public``; a plugin swaps it to the denied ``secrets`` (or the read-only
``config``) right after the policies judged the call, as another process could. The call is
refused (``stale``, retryable) before anything is read or changed, and the same call
succeeds once the link stays put.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ctxfs.core import Context, ErrorCode, Fs, FsError, Operation, hookimpl
from ctxfs.core.kit import FileSearch, LineSearch
from ctxfs.core.policies import PathRules
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import find_ripgrep

pytestmark = pytest.mark.anyio

SECRET = b"TOKEN=abc\n"
SAME = b"the same in both\n"


class LinkSwapper:
    """Points link ``a`` at *target* as soon as a call on a path under it has been judged."""

    def __init__(self, root: Path) -> None:
        self.root, self.target, self.swaps = root, "public", 0

    @hookimpl(trylast=True)
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
        if self.target != "public" and op.path.split("/")[0] == "a":
            os.symlink(self.target, self.root / "a.new")
            os.replace(self.root / "a.new", self.root / "a")
            self.swaps += 1

    def reset(self) -> None:
        os.symlink("public", self.root / "a.new")
        os.replace(self.root / "a.new", self.root / "a")


@pytest.fixture(params=["openat2", "walk"])
def layout(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Fs, LinkSwapper, Path]:
    root = tmp_path / "R"
    for area in ("public", "secrets", "config"):
        (root / area).mkdir(parents=True)
        (root / area / "same.txt").write_bytes(SAME)
        (root / area / "sub").mkdir()
    (root / "public" / "key").write_text("public\n")
    (root / "secrets" / "key").write_bytes(SECRET)
    (root / "config" / "key").write_text("config\n")
    (root / "notes.md").write_text("notes\n")
    (root / "tree").mkdir()
    (root / "tree" / "leaf.txt").write_text("leaf\n")
    os.symlink("public", root / "a")
    swapper = LinkSwapper(root)
    rules = PathRules(deny=["secrets"], read_only=["config"])
    backend = LocalBackend(root, state_dir=tmp_path / "state", resolver=request.param)
    return Fs(backend, plugins=[rules, swapper]), swapper, root


Call = Callable[[Context], Awaitable[object]]
CALLS: dict[str, Call] = {
    "read": lambda ctx: ctx.fs.read("a/key"),
    "read_bytes": lambda ctx: ctx.fs.read_bytes("a/key"),
    "stat": lambda ctx: ctx.fs.stat("a/key"),
    "list": lambda ctx: ctx.fs.list("a"),
    "list_page": lambda ctx: ctx.fs.list_page("a", first=1, count=10),
    "write a new file": lambda ctx: ctx.fs.write("a/planted", "x\n"),
    "write into a new directory": lambda ctx: ctx.fs.write("a/new/planted", "x\n"),
    "mkdir": lambda ctx: ctx.fs.mkdir("a/made/deeper"),
    "edit": lambda ctx: ctx.fs.edit("a/same.txt", "the same", "changed"),
    "overwrite": lambda ctx: ctx.fs.write("a/same.txt", "changed\n"),
    "delete": lambda ctx: ctx.fs.delete("a/same.txt"),
    "move out": lambda ctx: ctx.fs.move("a/same.txt", "moved.txt"),
    "move in": lambda ctx: ctx.fs.move("notes.md", "a/notes.md"),
    "move a directory out": lambda ctx: ctx.fs.move("a/sub", "moved"),
    "move a directory in": lambda ctx: ctx.fs.move("tree", "a/tree"),
    "changed": lambda ctx: ctx.fs.changed(),
}


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(path.relative_to(root)): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
        if not path.is_symlink()
    }


@pytest.mark.parametrize("target", ["secrets", "config"])
@pytest.mark.parametrize("call", list(CALLS))
async def test_a_link_swapped_after_judging_reaches_nothing(
    layout: tuple[Fs, LinkSwapper, Path], call: str, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, swapper, root = layout
    ctx = fs.context(owner="agent")
    await ctx.fs.read("a/same.txt")  # (seen, for the calls that change it)
    await ctx.fs.read("notes.md")
    before = _tree(root)
    swapper.target = target
    made: list[object] = []  # not even made and removed again
    make = os.mkdir

    def recorded(*args: Any, **kwargs: Any) -> None:
        made.append(args)
        make(*args, **kwargs)

    monkeypatch.setattr(os, "mkdir", recorded)
    with pytest.raises(FsError) as caught:
        await CALLS[call](ctx)
    monkeypatch.undo()
    assert made == []
    assert swapper.swaps, "the call was never judged"
    if call == "move a directory in":  # its entries are located and judged after the swap
        assert caught.value.code in (ErrorCode.STALE, ErrorCode.DENIED), caught.value
    else:
        assert caught.value.code is ErrorCode.STALE, caught.value
        assert caught.value.retryable
    assert "TOKEN" not in str(caught.value)
    assert _tree(root) == before
    swapper.target = "public"
    swapper.reset()
    await CALLS[call](ctx)  # the same call, the link left alone


class DirectorySwapper:
    """Replaces directory ``public`` by a link to ``secrets`` once *judged* (resolved) is judged."""

    def __init__(self, root: Path, judged: str = "public/key") -> None:
        self.root, self.judged, self.swaps = root, judged, 0

    @hookimpl(trylast=True)
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
        if op.resolved == self.judged and not self.swaps:
            (self.root / "public").rename(self.root / "public.old")
            os.symlink("secrets", self.root / "public")
            self.swaps += 1


async def test_a_line_search_leaves_out_a_file_whose_directory_was_swapped(
    layout: tuple[Fs, LinkSwapper, Path],
) -> None:
    fs, _, root = layout
    if not isinstance(fs.backend, LocalBackend) or find_ripgrep() is None:
        pytest.skip("ripgrep is not installed here (uv sync installs its wheel)")
    swapper = DirectorySwapper(root)
    fs = Fs(fs.backend, plugins=[PathRules(deny=["secrets"]), swapper])
    ctx = fs.context(owner="agent")
    search = LineSearch(paths=("a/key", "notes.md"), pattern="TOKEN|public|notes")
    found = await ctx.fs.search_lines(search)
    assert swapper.swaps
    assert found is not None
    assert list(found.lines) == ["notes.md"]
    (root / "public").unlink()
    (root / "public.old").rename(root / "public")
    found = await ctx.fs.search_lines(search)
    assert found is not None
    assert sorted(found.lines) == ["a/key", "notes.md"]


@pytest.mark.parametrize("pattern", ["TOKEN", None])
async def test_a_file_search_refuses_a_directory_swapped_after_judging(
    layout: tuple[Fs, LinkSwapper, Path], pattern: str | None
) -> None:
    fs, _, root = layout
    if not isinstance(fs.backend, LocalBackend) or find_ripgrep() is None:
        pytest.skip("ripgrep is not installed here (uv sync installs its wheel)")
    swapper = DirectorySwapper(root, judged="public")
    fs = Fs(fs.backend, plugins=[PathRules(deny=["secrets"]), swapper])
    ctx = fs.context(owner="agent")
    with pytest.raises(FsError) as caught:  # grep's counts, or glob's names
        await ctx.fs.search_files(FileSearch(path="a", pattern=pattern))
    assert swapper.swaps
    assert caught.value.code is ErrorCode.STALE, caught.value
    (root / "public").unlink()
    (root / "public.old").rename(root / "public")
    found = await ctx.fs.search_files(FileSearch(path="a", pattern=pattern))
    assert found is not None
    assert "a/key" in found.counts if pattern is None else "a/key" not in found.counts


class SwapWhileHiding:
    """Points link ``a`` at ``secrets`` while the policies decide what a listing of it hides."""

    def __init__(self, root: Path) -> None:
        self.root, self.swaps = root, 0

    @hookimpl
    def ctxfs_hidden(self, ctx: Context, paths: Sequence[str]) -> None:
        if "a/key" in paths and not self.swaps:
            os.symlink("secrets", self.root / "a.new")
            os.replace(self.root / "a.new", self.root / "a")
            self.swaps += 1


async def test_a_listing_page_looks_in_detail_only_where_it_was_judged(
    layout: tuple[Fs, LinkSwapper, Path],
) -> None:
    fs, _, root = layout
    (root / "secrets" / "key").write_bytes(SECRET * 1000)  # (its size would tell)
    swapper = SwapWhileHiding(root)
    fs = Fs(fs.backend, plugins=[PathRules(deny=["secrets"]), swapper])
    ctx = fs.context(owner="agent")
    with pytest.raises(FsError) as caught:
        await ctx.fs.list_page("a", first=1, count=10)
    assert swapper.swaps
    assert caught.value.code is ErrorCode.STALE, caught.value
    LinkSwapper(root).reset()
    page = await ctx.fs.list_page("a", first=1, count=10)
    assert {entry.name: entry.size for entry in page.entries}["key"] == len("public\n")


@pytest.mark.parametrize("name", ["only-in-secrets", "nowhere"])
async def test_an_error_after_a_swap_tells_nothing_of_the_other_place(
    layout: tuple[Fs, LinkSwapper, Path], name: str
) -> None:
    fs, swapper, root = layout
    (root / "secrets" / "only-in-secrets").write_bytes(SECRET)
    (root / "secrets" / "linked").symlink_to("TOKEN-as-a-link-target")
    ctx = fs.context(owner="agent")
    swapper.target = "secrets"
    calls: list[Call] = [
        lambda ctx: ctx.fs.read(f"a/{name}"),
        lambda ctx: ctx.fs.stat(f"a/{name}"),
        lambda ctx: ctx.fs.write("a/linked", "x\n"),
        lambda ctx: ctx.fs.delete("a/linked"),
    ]
    for call in calls:
        with pytest.raises(FsError) as caught:
            await call(ctx)
        assert caught.value.code is ErrorCode.STALE, caught.value
        assert "TOKEN" not in f"{caught.value} {caught.value.hint}"
        swapper.reset()


@pytest.mark.parametrize("link", [".gitignore", ".git"])
async def test_a_search_below_the_root_reads_no_ignore_file_through_a_link(
    tmp_path: Path, link: str
) -> None:
    if find_ripgrep() is None:
        pytest.skip("ripgrep is not installed here (uv sync installs its wheel)")
    root, outside = tmp_path / "R", tmp_path / "outside"
    (root / "p" / "sub").mkdir(parents=True)
    (root / "p" / "sub" / "k.txt").write_text("k\n")
    (outside / "info").mkdir(parents=True)
    (outside / "rules").write_text("k.txt\n")
    (outside / "info" / "exclude").write_text("k.txt\n")
    os.symlink(outside / "rules" if link == ".gitignore" else outside, root / link)
    fs = Fs(LocalBackend(root, state_dir=tmp_path / "state"))
    found = await fs.context(owner="agent").fs.search_files(FileSearch(path="p/sub", pattern=None))
    assert found is not None
    assert sorted(found.counts) == ["p/sub/k.txt"]  # as a search of the whole root finds


class RootRemover:
    def __init__(self, root: Path) -> None:
        self.root = root

    @hookimpl(trylast=True)
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
        if op.path == "a/key" and self.root.exists():
            shutil.rmtree(self.root)


async def test_a_root_deleted_after_judging_is_unavailable_not_stale(
    layout: tuple[Fs, LinkSwapper, Path],
) -> None:
    fs, _, root = layout
    fs = Fs(fs.backend, plugins=[RootRemover(root)])
    with pytest.raises(FsError) as caught:
        await fs.context(owner="agent").fs.read("a/key")
    assert caught.value.code is ErrorCode.UNAVAILABLE, caught.value
    assert not caught.value.retryable
