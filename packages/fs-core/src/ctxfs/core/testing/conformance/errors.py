"""Conformance: error codes (missing files, directories, reserved names, odd paths)."""

from __future__ import annotations

import pytest

from ctxfs.core.backend import Backend
from ctxfs.core.errors import (
    ErrorCode,
    FsError,
    InvalidArgument,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotFound,
    Stale,
    TooLarge,
)
from ctxfs.core.fs import Fs
from ctxfs.core.testing.conformance.support import (
    PATH_ATTACKS,
    RESERVED,
    ConformanceBase,
    open_and_leave_stream,
    open_and_leave_update,
)
from ctxfs.core.versions import ABSENT, Version

__all__ = ["ErrorConformance"]


class ErrorConformance(ConformanceBase):
    """Error codes: missing files, directories, reserved names, paths not canonical."""

    async def test_missing_file_is_not_found(self, backend: Backend) -> None:
        with pytest.raises(NotFound) as caught:
            await backend.read("missing.txt")
        assert isinstance(caught.value, FileNotFoundError)
        assert caught.value.code is ErrorCode.NOT_FOUND

    async def test_directories_and_prefixes_read_as_is_directory(self, backend: Backend) -> None:
        await backend.write("d/f.txt", b"x", expect=ABSENT)
        for path in ("d", ""):
            with pytest.raises(IsADirectory):
                await backend.read(path)
            with pytest.raises(IsADirectory):
                await open_and_leave_stream(backend, path)
        for attempt in (backend.write("", b"x", expect=None), open_and_leave_update(backend, "")):
            with pytest.raises(IsADirectory):
                await attempt
        if backend.capabilities.real_directories:
            with pytest.raises(IsADirectory):
                await backend.write("d", b"x", expect=None)
            with pytest.raises(IsADirectory):
                await open_and_leave_update(backend, "d")
        assert (await backend.read("d/f.txt")).data == b"x"

    async def test_reading_a_directory_through_ctx_fs_is_is_directory(
        self, backend: Backend
    ) -> None:
        await backend.write("d/f.txt", b"x", expect=ABSENT)
        ctx = Fs(backend, load_entrypoints=False).context(owner="reader")
        with pytest.raises(IsADirectory):
            await ctx.fs.read("d")
        with pytest.raises(NotFound):
            await ctx.fs.read("e")

    async def test_file_as_directory(self, backend: Backend) -> None:
        if not backend.capabilities.real_directories:
            return  # object stores allow "f" and "f/x" side by side, by contract
        await backend.write("f", b"x", expect=ABSENT)
        with pytest.raises(NotADirectory):
            await backend.write("f/x", b"y", expect=ABSENT)
        with pytest.raises(NotADirectory):
            await backend.read("f/x")

    @pytest.mark.parametrize("path", RESERVED)
    async def test_reserved_names_are_refused_everywhere(self, backend: Backend, path: str) -> None:
        await backend.write("d/a.txt", b"x", expect=ABSENT)
        attempts = [
            backend.write(path, b"x", expect=None),
            backend.write(path, b"x", expect=ABSENT),
            backend.read(path),
            backend.stat(path),
            backend.list(path),
            backend.mkdir(path),
            backend.delete(path),
            open_and_leave_update(backend, path),
            open_and_leave_stream(backend, path),
        ]
        for attempt in attempts:
            with pytest.raises(InvalidPath) as caught:
                await attempt
            assert caught.value.code is ErrorCode.INVALID_PATH
        assert [entry.name for entry in await backend.list("")] == ["d"]
        assert [entry.name for entry in await backend.list("d")] == ["a.txt"]

    @pytest.mark.parametrize("path", PATH_ATTACKS)
    async def test_non_canonical_paths_are_refused(self, backend: Backend, path: str) -> None:
        with pytest.raises(FsError) as caught:
            await backend.write(path, b"x", expect=None)
        assert caught.value.code in (ErrorCode.INVALID_PATH, ErrorCode.OUTSIDE_ROOT)
        with pytest.raises(FsError):
            await backend.read(path)
        assert await backend.list("") == []

    async def test_locate_names_one_file_by_one_key(self, backend: Backend) -> None:
        await backend.write("d/a.txt", b"x", expect=ABSENT)
        found = await backend.locate("d/a.txt")
        assert found.resolved == "d/a.txt"
        assert found == await backend.locate("d/a.txt")
        assert found.key != (await backend.locate("d/b.txt")).key
        missing = await backend.locate("e/f/g.txt")
        assert missing.resolved == "e/f/g.txt"
        with pytest.raises(InvalidPath):
            await backend.locate("d/.ctxfs-x")

    async def test_a_failed_write_leaves_no_directory_it_made(self, backend: Backend) -> None:
        await backend.write("kept/a.txt", b"x", expect=ABSENT)
        version = await backend.write("kept/b.txt", b"x", expect=ABSENT)
        for path in ("new/deeper/c.txt", "kept/new/c.txt"):
            with pytest.raises(FsError):  # the file it expects is not there
                await backend.write(path, b"x", expect=version)
        assert [entry.name for entry in await backend.list("")] == ["kept"]
        assert [entry.name for entry in await backend.list("kept")] == ["a.txt", "b.txt"]

    async def test_bounds_and_sizes_are_checked_before_content(self, backend: Backend) -> None:
        version = await backend.write("r.bin", b"0123456789", expect=ABSENT)
        with pytest.raises(TooLarge) as caught:
            await backend.read("r.bin", max_size=9)
        assert caught.value.details["max_size"] == 9
        assert (await backend.read("r.bin", max_size=10)).data == b"0123456789"
        with pytest.raises(TooLarge):
            await open_and_leave_update(backend, "r.bin", max_size=9)
        with pytest.raises(InvalidArgument):
            await backend.read("r.bin", end=-1)
        with pytest.raises(InvalidArgument):
            await open_and_leave_stream(backend, "r.bin", chunk_size=0)
        with pytest.raises(Stale):
            await backend.read("r.bin", version=Version("xxh3:" + "0" * 32))
        assert (await backend.read("r.bin", version=version)).version == version
