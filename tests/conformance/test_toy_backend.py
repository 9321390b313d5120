"""A third-party backend in a few lines: capabilities declared as data, the kit's suite passed."""

from __future__ import annotations

import builtins

import pytest

from ctxfs.core import Fs, NotADirectory, NotFound
from ctxfs.core.kit import (
    ABSENT,
    Backend,
    Blob,
    Capabilities,
    CasScope,
    Expect,
    FileKind,
    FileLines,
    FileMatches,
    FileSearch,
    LineSearch,
    ReadRequest,
    Stat,
    Version,
    check_expect,
    content_version,
)
from ctxfs.core.testing import BackendConformance


class ToyBackend(Backend):
    """Files in a dict, directories as key prefixes, as an object store keeps them."""

    capabilities = Capabilities(
        cas_scope=CasScope.PROCESS,
        range_reads=False,
        real_directories=False,
        symlinks=False,
        locks=False,
    )

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    async def _stat(self, path: str) -> Stat:
        if path in self.files:
            data = self.files[path]
            return Stat(path=path, kind=FileKind.FILE, size=len(data))
        if not path or any(name.startswith(f"{path}/") for name in self.files):
            return Stat(path=path, kind=FileKind.DIRECTORY)
        raise NotFound(f"{path} does not exist", path=path)

    async def _read(self, path: str, request: ReadRequest) -> Blob:
        if path not in self.files:
            raise NotFound(f"{path} does not exist", path=path)
        data = self.files[path]
        return Blob(data=request.cut(data), version=content_version(data), size=len(data))

    async def _write(self, path: str, data: bytes, expect: Expect) -> Version:
        current = self.files.get(path)
        check_expect(path, expect, None if current is None else content_version(current))
        self.files[path] = bytes(data)
        return content_version(data)

    async def _delete(self, path: str, expect: Version | None) -> None:
        if path not in self.files:
            raise NotFound(f"{path} does not exist", path=path)
        check_expect(path, expect, content_version(self.files[path]))
        del self.files[path]

    async def _list(self, path: str) -> builtins.list[Stat]:
        if (await self._stat(path)).kind is not FileKind.DIRECTORY:
            raise NotADirectory(f"{path} is a file", path=path)
        prefix = f"{path}/" if path else ""
        names = {
            name[len(prefix) :].partition("/")[0] for name in self.files if name.startswith(prefix)
        }
        return [await self._stat(f"{prefix}{name}") for name in names]

    async def _mkdir(self, path: str) -> None:
        del path  # directories are prefixes: nothing to keep

    # Engines it has but does not declare: core must not call them.

    async def _list_tree(self, path: str) -> builtins.list[Stat] | None:
        raise AssertionError("list_tree called, though tree_listing is not declared")

    async def search_files(self, search: FileSearch) -> FileMatches | None:
        raise AssertionError("search_files called, though file_search is not declared")

    async def search_lines(self, search: LineSearch) -> FileLines | None:
        raise AssertionError("search_lines called, though line_search is not declared")


class TestToyBackend(BackendConformance):
    @pytest.fixture
    def backend(self) -> ToyBackend:
        return ToyBackend()


@pytest.mark.anyio
async def test_what_a_backend_does_not_declare_is_not_used() -> None:
    backend = ToyBackend()
    await backend.write("d/a.txt", b"needle\n", expect=ABSENT)
    ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
    assert await ctx.fs.list_tree("d") is None
    assert await ctx.fs.search_files(FileSearch(path="d", pattern="needle")) is None
    assert await ctx.fs.search_lines(LineSearch(paths=("d/a.txt",), pattern="needle")) is None
    assert [entry.path for entry in await ctx.fs.list("d")] == ["d/a.txt"]
