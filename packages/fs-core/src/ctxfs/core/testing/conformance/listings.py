"""Conformance: listings, trees, stat, directories and deletion."""

from __future__ import annotations

import pytest

from ctxfs.core.backend import Backend, FileKind
from ctxfs.core.errors import InvalidArgument, NotADirectory, NotFound, Stale
from ctxfs.core.testing.conformance.support import ConformanceBase
from ctxfs.core.versions import ABSENT

__all__ = ["ListingConformance"]


class ListingConformance(ConformanceBase):
    """Listings, trees, stat, directories and deletion."""

    async def test_list_is_sorted_with_kinds(self, backend: Backend) -> None:
        for path in ("b.txt", "a.txt", "sub/c.txt"):
            await backend.write(path, b"x", expect=ABSENT)
        entries = await backend.list("")
        assert [(entry.name, entry.kind) for entry in entries] == [
            ("a.txt", FileKind.FILE),
            ("b.txt", FileKind.FILE),
            ("sub", FileKind.DIRECTORY),
        ]
        assert [entry.path for entry in await backend.list("sub")] == ["sub/c.txt"]
        assert entries[0].size == 1

    async def test_a_listing_without_details_is_completed_by_details(
        self, backend: Backend
    ) -> None:
        for path in ("b.txt", "a.txt", "sub/c.txt"):
            await backend.write(path, b"xy", expect=ABSENT)
        full = await backend.list("")
        bare = await backend.list("", details=False)
        assert [(entry.path, entry.kind) for entry in bare] == [
            (entry.path, entry.kind) for entry in full
        ]
        detailed = await backend.details(bare)
        assert [(entry.path, entry.kind, entry.size) for entry in detailed] == [
            (entry.path, entry.kind, entry.size) for entry in full
        ]
        await backend.delete("b.txt")
        after = [entry.path for entry in await backend.details(bare)]
        assert after in (["a.txt", "sub"], ["a.txt", "b.txt", "sub"])  # gone may be left out
        with pytest.raises(NotFound):
            await backend.list("missing", details=False)

    async def test_a_tree_listing_holds_every_file_below(self, backend: Backend) -> None:
        for path in ("g/h.txt", "a.txt", "d/e/f.txt", "d/b.txt"):
            await backend.write(path, b"xyz", expect=ABSENT)
        tree = await backend.list_tree("")
        if tree is None:
            pytest.skip("this backend lists one directory at a time (list_tree is optional)")
        assert [(entry.path, entry.kind, entry.size) for entry in tree] == [
            ("a.txt", FileKind.FILE, 3),
            ("d/b.txt", FileKind.FILE, 3),
            ("d/e/f.txt", FileKind.FILE, 3),
            ("g/h.txt", FileKind.FILE, 3),
        ]
        below = await backend.list_tree("d")
        assert below is not None
        assert [entry.path for entry in below] == ["d/b.txt", "d/e/f.txt"]
        with pytest.raises(NotFound):
            await backend.list_tree("missing")
        with pytest.raises(NotADirectory):
            await backend.list_tree("a.txt")

    async def test_list_errors(self, backend: Backend) -> None:
        await backend.write("a.txt", b"x", expect=ABSENT)
        with pytest.raises(NotFound):
            await backend.list("missing")
        with pytest.raises(NotADirectory):
            await backend.list("a.txt")

    async def test_stat(self, backend: Backend) -> None:
        await backend.write("d/a.txt", b"abc", expect=ABSENT)
        stat = await backend.stat("d/a.txt")
        assert (stat.path, stat.kind, stat.size) == ("d/a.txt", FileKind.FILE, 3)
        assert (await backend.stat("")).kind is FileKind.DIRECTORY
        with pytest.raises(NotFound) as caught:
            await backend.stat("nope.txt")
        assert isinstance(caught.value, FileNotFoundError)
        assert caught.value.path == "nope.txt"

    async def test_mkdir_or_documented_no_op(self, backend: Backend) -> None:
        await backend.mkdir("made/deep")
        await backend.mkdir("made/deep")
        names = [entry.name for entry in await backend.list("")]
        if backend.capabilities.real_directories:
            assert names == ["made"]
            assert await backend.list("made/deep") == []
        else:
            assert names == []

    async def test_delete_removes_an_empty_directory_only(self, backend: Backend) -> None:
        if not backend.capabilities.real_directories:
            pytest.skip("directories are prefixes here: nothing to remove")
        await backend.mkdir("d/e")
        await backend.write("d/e/f.txt", b"f", expect=ABSENT)
        for full in ("d", "d/e"):
            with pytest.raises(InvalidArgument):
                await backend.delete(full)
        assert (await backend.read("d/e/f.txt")).data == b"f"
        await backend.delete("d/e/f.txt")
        await backend.delete("d/e")
        await backend.delete("d")
        assert await backend.list("") == []
        with pytest.raises(NotFound):
            await backend.delete("d")

    async def test_delete(self, backend: Backend) -> None:
        one = await backend.write("a.txt", b"one", expect=ABSENT)
        two = await backend.write("a.txt", b"two", expect=one)
        with pytest.raises(Stale):
            await backend.delete("a.txt", expect=one)
        assert (await backend.read("a.txt")).data == b"two"
        await backend.delete("a.txt", expect=two)
        with pytest.raises(NotFound):
            await backend.read("a.txt")
        with pytest.raises(NotFound):
            await backend.delete("a.txt")
