"""The backend conformance suite: subclass it, provide one fixture, and run pytest.

::

    import pytest
    from ctxfs.core.testing import BackendConformance

    class TestMyBackend(BackendConformance):
        @pytest.fixture
        async def backend(self):
            async with MyBackend(...) as backend:   # fresh and empty for every test
                yield backend

Tests run under anyio (``anyio_backend`` picks the event loop; override that
fixture in the subclass if the backend supports only asyncio). A capability a
backend lacks is not skipped: the suite asserts the refusal the contract
documents instead. Tune the race with ``race_workers`` and ``race_increments``.
"""

from __future__ import annotations

from typing import ClassVar

import anyio
import anyio.lowlevel
import pytest

from ctxfs.core.backend import Backend, FileKind
from ctxfs.core.context import Context
from ctxfs.core.errors import (
    AlreadyExists,
    Busy,
    ErrorCode,
    FsError,
    InvalidArgument,
    InvalidPath,
    IsADirectory,
    NoMatch,
    NotADirectory,
    NotFound,
    NotObserved,
    Stale,
    TooLarge,
)
from ctxfs.core.fs import Fs
from ctxfs.core.text import FilePatch, Hunk, PatchAction
from ctxfs.core.versions import ABSENT, Version

__all__ = ["BackendConformance"]

_MiB = 1 << 20
_PATH_ATTACKS = ("../x", "/x", "a//b", "a/./b", "./a", "a/", "a\\b", "a\x00b", "s3://x/y", "C:x")
_RESERVED = (".ctxfs-x", "d/.ctxfs-lock.a.txt", ".ctxfs-tmp.1", "d/.ctxfs-/x")


class BackendConformance:
    """The contract of :class:`~ctxfs.core.backend.Backend`, as tests."""

    pytestmark: ClassVar = [pytest.mark.anyio]

    race_workers: ClassVar[int] = 8
    """Concurrent workers in the counter races."""
    race_increments: ClassVar[int] = 25
    """Guarded increments per worker in the counter races."""

    @pytest.fixture
    def backend(self) -> Backend:
        """Override: return (or yield) a fresh, empty backend for one test."""
        pytest.fail("a BackendConformance subclass must define the 'backend' fixture")

    # -- create-only and update-if-version ------------------------------------------

    async def test_create_then_read_back(self, backend: Backend) -> None:
        version = await backend.write("a.txt", b"one\n", expect=ABSENT)
        blob = await backend.read("a.txt")
        assert blob.data == b"one\n"
        assert blob.version == version
        assert blob.size == 4
        assert isinstance(version, str)
        assert version

    async def test_create_again_is_refused(self, backend: Backend) -> None:
        await backend.write("a.txt", b"one\n", expect=ABSENT)
        with pytest.raises(AlreadyExists) as caught:
            await backend.write("a.txt", b"two\n", expect=ABSENT)
        assert caught.value.code is ErrorCode.ALREADY_EXISTS
        assert (await backend.read("a.txt")).data == b"one\n"

    async def test_update_with_current_version(self, backend: Backend) -> None:
        first = await backend.write("a.txt", b"one\n", expect=ABSENT)
        second = await backend.write("a.txt", b"two\n", expect=first)
        assert second != first
        blob = await backend.read("a.txt")
        assert (blob.data, blob.version) == (b"two\n", second)

    async def test_update_with_stale_version_is_refused(self, backend: Backend) -> None:
        first = await backend.write("a.txt", b"one\n", expect=ABSENT)
        second = await backend.write("a.txt", b"two\n", expect=first)
        with pytest.raises(Stale) as caught:
            await backend.write("a.txt", b"three\n", expect=first)
        assert caught.value.code is ErrorCode.STALE
        blob = await backend.read("a.txt")
        assert (blob.data, blob.version) == (b"two\n", second)

    async def test_update_of_missing_file_is_refused(self, backend: Backend) -> None:
        version = await backend.write("a.txt", b"one\n", expect=ABSENT)
        with pytest.raises(Stale):
            await backend.write("b.txt", b"two\n", expect=version)
        with pytest.raises(NotFound):
            await backend.read("b.txt")

    async def test_unconditional_write_replaces(self, backend: Backend) -> None:
        await backend.write("a.txt", b"one\n", expect=None)
        version = await backend.write("a.txt", b"two\n", expect=None)
        assert (await backend.read("a.txt")).version == version

    async def test_version_names_content_state(self, backend: Backend) -> None:
        one = await backend.write("a.txt", b"one\n", expect=ABSENT)
        two = await backend.write("a.txt", b"two\n", expect=one)
        assert one != two
        assert (await backend.stat("a.txt")).version in (None, two)

    async def test_write_creates_missing_parents(self, backend: Backend) -> None:
        await backend.write("d/e/f.txt", b"x", expect=ABSENT)
        assert (await backend.read("d/e/f.txt")).data == b"x"
        names = [entry.name for entry in await backend.list("d")]
        assert names == ["e"]

    # -- counter races ----------------------------------------------------------------

    async def test_counter_race_through_backend_cas(self, backend: Backend) -> None:
        await backend.write("counter", b"0", expect=ABSENT)

        async def worker() -> None:
            for _ in range(self.race_increments):
                while True:
                    blob = await backend.read("counter")
                    try:
                        await backend.write(
                            "counter", str(int(blob.data) + 1).encode(), expect=blob.version
                        )
                    except Stale:
                        await anyio.lowlevel.checkpoint()
                        continue
                    break

        async with anyio.create_task_group() as group:
            for _ in range(self.race_workers):
                group.start_soon(worker)
        total = int((await backend.read("counter")).data)
        assert total == self.race_workers * self.race_increments

    async def test_counter_race_through_ctx_fs(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        setup = fs.context(owner="setup")
        await setup.fs.write("counter.txt", "0\n")

        async def worker(owner: str) -> None:
            ctx = fs.context(owner=owner)
            for _ in range(self.race_increments):
                while True:
                    current = (await ctx.fs.read("counter.txt")).text
                    try:
                        await ctx.fs.edit("counter.txt", current, f"{int(current) + 1}\n")
                    except Stale:
                        continue
                    break

        async with anyio.create_task_group() as group:
            for index in range(self.race_workers):
                group.start_soon(worker, f"agent-{index}")
        outcome = await setup.fs.read("counter.txt")
        assert int(outcome.text) == self.race_workers * self.race_increments

    # -- ranges and streams -------------------------------------------------------------

    async def test_range_reads(self, backend: Backend) -> None:
        version = await backend.write("r.bin", b"0123456789", expect=ABSENT)
        cases = {(2, 5): b"234", (0, 10): b"0123456789", (7, None): b"789", (None, 3): b"012"}
        for (start, end), expected in cases.items():
            blob = await backend.read("r.bin", start=start, end=end)
            assert (blob.data, blob.version, blob.size) == (expected, version, 10)

    async def test_empty_and_past_the_end_ranges(self, backend: Backend) -> None:
        await backend.write("r.bin", b"0123456789", expect=ABSENT)
        assert (await backend.read("r.bin", start=4, end=4)).data == b""
        assert (await backend.read("r.bin", start=10)).data == b""
        assert (await backend.read("r.bin", start=12, end=20)).data == b""
        assert (await backend.read("r.bin", start=8, end=100)).data == b"89"

    async def test_negative_range_is_invalid(self, backend: Backend) -> None:
        await backend.write("r.bin", b"0123456789", expect=ABSENT)
        with pytest.raises(InvalidArgument):
            await backend.read("r.bin", start=-3)

    async def test_read_pinned_to_old_version_is_stale(self, backend: Backend) -> None:
        first = await backend.write("r.bin", b"0123456789", expect=ABSENT)
        second = await backend.write("r.bin", b"abcdefghij", expect=first)
        assert (await backend.read("r.bin", start=1, end=3, version=second)).data == b"bc"
        with pytest.raises(Stale):
            await backend.read("r.bin", start=1, end=3, version=first)

    async def test_stream_yields_content_and_version(self, backend: Backend) -> None:
        data = bytes(range(256)) * 1000
        version = await backend.write("s.bin", data, expect=ABSENT)
        async with backend.open_read("s.bin", chunk_size=4096) as stream:
            chunks = [chunk async for chunk in stream]
        assert b"".join(chunks) == data
        assert max(len(chunk) for chunk in chunks) <= 4096
        assert stream.version == version

    async def test_empty_file(self, backend: Backend) -> None:
        version = await backend.write("empty", b"", expect=ABSENT)
        blob = await backend.read("empty")
        assert (blob.data, blob.size, blob.version) == (b"", 0, version)
        async with backend.open_read("empty") as stream:
            assert [chunk async for chunk in stream if chunk] == []

    async def test_large_write_or_documented_refusal(self, backend: Backend) -> None:
        limit = backend.capabilities.max_cas_size
        if limit is not None and limit <= 64 * _MiB:
            with pytest.raises(TooLarge):
                await backend.write("big.bin", b"x" * (limit + 1), expect=ABSENT)
            with pytest.raises(NotFound):
                await backend.stat("big.bin")
        else:
            data = bytes(range(251)) * (3 * _MiB // 251)
            version = await backend.write("big.bin", data, expect=ABSENT)
            assert (await backend.read("big.bin")).data == data
            assert (await backend.read("big.bin", start=_MiB, end=_MiB + 5)).version == version

    # -- listing, directories, deletion ---------------------------------------------------

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

    # -- error mapping ----------------------------------------------------------------------

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
                await _stream(backend, path)
        for attempt in (backend.write("", b"x", expect=None), _update(backend, "")):
            with pytest.raises(IsADirectory):
                await attempt
        if backend.capabilities.real_directories:
            with pytest.raises(IsADirectory):
                await backend.write("d", b"x", expect=None)
            with pytest.raises(IsADirectory):
                await _update(backend, "d")
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

    @pytest.mark.parametrize("path", _RESERVED)
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
            _update(backend, path),
            _stream(backend, path),
        ]
        for attempt in attempts:
            with pytest.raises(InvalidPath) as caught:
                await attempt
            assert caught.value.code is ErrorCode.INVALID_PATH
        assert [entry.name for entry in await backend.list("")] == ["d"]
        assert [entry.name for entry in await backend.list("d")] == ["a.txt"]

    @pytest.mark.parametrize("path", _PATH_ATTACKS)
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
            await _update(backend, "r.bin", max_size=9)
        with pytest.raises(InvalidArgument):
            await backend.read("r.bin", end=-1)
        with pytest.raises(InvalidArgument):
            await _stream(backend, "r.bin", chunk_size=0)
        with pytest.raises(Stale):
            await backend.read("r.bin", version=Version("xxh3:" + "0" * 32))
        assert (await backend.read("r.bin", version=version)).version == version

    # -- updates: one read, then a conditional change ---------------------------------------

    async def test_update_changes_what_it_read(self, backend: Backend) -> None:
        version = await backend.write("a.txt", b"one", expect=ABSENT)
        async with backend.open_update("a.txt") as update:
            assert update.current is not None
            assert (update.current.data, update.current.version) == (b"one", version)
            written = await update.write(b"two")
        blob = await backend.read("a.txt")
        assert (blob.data, blob.version) == (b"two", written)
        async with backend.open_update("new/b.txt") as update:
            assert update.current is None
            created = await update.write(b"fresh")
        assert (await backend.read("new/b.txt")).version == created
        async with backend.open_update("a.txt") as update:
            await update.delete()
        with pytest.raises(NotFound):
            await backend.read("a.txt")
        async with backend.open_update("a.txt") as update:
            with pytest.raises(NotFound):
                await update.delete()

    async def test_update_and_a_rival_writer_never_both_win(self, backend: Backend) -> None:
        version = await backend.write("a.txt", b"base", expect=ABSENT)
        outcomes: dict[str, bool] = {}

        async def rival() -> None:
            try:
                await backend.write("a.txt", b"rival", expect=version)
            except Stale:
                outcomes["rival"] = False
            else:
                outcomes["rival"] = True

        async with (
            anyio.create_task_group() as group,
            backend.open_update("a.txt") as update,
        ):
            group.start_soon(rival)
            await anyio.sleep(0.5)  # the rival lands now, or waits for the update's lock
            try:
                await update.write(b"mine")
            except Stale:
                outcomes["mine"] = False
            else:
                outcomes["mine"] = True
        assert sorted(outcomes.values()) == [False, True], outcomes
        winner = "mine" if outcomes["mine"] else "rival"
        assert (await backend.read("a.txt")).data == winner.encode()

    async def test_lock_or_documented_absence(self, backend: Backend) -> None:
        lock = backend.lock("k", timeout=0.2)
        if not backend.capabilities.locks:
            assert lock is None
            return
        assert lock is not None
        async with lock:
            rival = backend.lock("k", timeout=0.2)
            assert rival is not None
            with pytest.raises(Busy):
                async with rival:
                    pass  # pragma: no cover - never acquired
        again = backend.lock("k", timeout=0.2)
        assert again is not None
        async with again:
            pass

    # -- ctx.fs on this backend ---------------------------------------------------------

    async def test_observation_rules_hold(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
        await alice.fs.write("notes.txt", "one\ntwo\n")
        with pytest.raises(NotObserved):
            await bob.fs.edit("notes.txt", "one", "uno")
        await bob.fs.read("notes.txt", offset=2, limit=1)
        outcome = await bob.fs.edit("notes.txt", "two", "dos")
        assert outcome.replacements == 1
        with pytest.raises(Stale):
            await alice.fs.edit("notes.txt", "one", "eins")
        read = await alice.fs.read("notes.txt")
        assert read.text == "one\ndos\n"
        assert read.version == outcome.version == (await backend.read("notes.txt")).version

    # -- bytes ------------------------------------------------------------------------------

    async def test_bytes_round_trip_whole_and_in_ranges(self, backend: Backend) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        data = bytes(range(256)) + b"\r\n\x00\xff\xfe tail"
        written = await ctx.fs.write_bytes("bin/blob.dat", data)
        assert written.created
        assert (await backend.read("bin/blob.dat")).data == data
        whole = await ctx.fs.read_bytes("bin/blob.dat")
        assert (whole.data, whole.complete, whole.size) == (data, True, len(data))
        assert whole.version == written.version == (await backend.read("bin/blob.dat")).version
        part = await ctx.fs.read_bytes("bin/blob.dat", offset=250, length=10)
        assert (part.data, part.complete, part.offset, part.size) == (
            data[250:260],
            False,
            250,
            len(data),
        )
        assert (await ctx.fs.read_bytes("bin/blob.dat", offset=len(data) + 5)).data == b""
        with pytest.raises(InvalidArgument):
            await ctx.fs.read_bytes("bin/blob.dat", offset=-1)

    async def test_bytes_keep_the_guards_of_text(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
        await bob.fs.write_bytes("a.bin", b"one\r\ntwo\r\n")
        with pytest.raises(NotObserved):
            await alice.fs.write_bytes("a.bin", b"mine")
        await alice.fs.read_bytes("a.bin", length=3)
        with pytest.raises(NotObserved):  # part of the file does not license replacing it
            await alice.fs.write_bytes("a.bin", b"mine")
        await alice.fs.edit("a.bin", "one", "uno")  # it does license an edit
        await bob.fs.read_bytes("a.bin")
        await alice.fs.write_bytes("a.bin", b"alice")
        with pytest.raises(Stale):
            await bob.fs.write_bytes("a.bin", b"bob")
        assert (await backend.read("a.bin")).data == b"alice"
        await bob.fs.read_bytes("a.bin")
        await bob.fs.write_bytes("a.bin", b"bob")
        await alice.fs.read_bytes("a.bin", offset=1, length=1)
        await alice.fs.delete("a.bin")  # any part read licenses a delete

    async def test_a_rewrite_needs_the_file_read_as_it_is(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
        await bob.fs.write_bytes("a.json", b'{"n": 1}\r\n')
        seen: list[bytes] = []

        def change(data: bytes) -> bytes:
            seen.append(data)
            return data.replace(b"1", b"2")

        with pytest.raises(NotObserved):
            await alice.fs.rewrite_bytes("a.json", change)
        await alice.fs.read_bytes("a.json", length=2)  # any part licenses it, as for an edit
        await bob.fs.write_bytes("a.json", b'{"n": 5}\r\n')
        with pytest.raises(Stale):
            await alice.fs.rewrite_bytes("a.json", change)
        with pytest.raises(NotFound):
            await alice.fs.rewrite_bytes("missing.json", change)
        assert seen == []  # no guard lets the change see the file
        assert (await backend.read("a.json")).data == b'{"n": 5}\r\n'

    async def test_a_failed_rewrite_writes_nothing(self, backend: Backend) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        await ctx.fs.write_bytes("a.json", b'{"n": 1}\n')
        before = (await backend.read("a.json")).version

        def refuse(data: bytes) -> bytes:
            raise InvalidArgument(f"cannot change {len(data)} bytes", path="a.json")

        with pytest.raises(InvalidArgument):
            await ctx.fs.rewrite_bytes("a.json", refuse)
        blob = await backend.read("a.json")
        assert (blob.data, blob.version) == (b'{"n": 1}\n', before)
        await ctx.fs.rewrite_bytes("a.json", lambda data: data + b" ")  # still licensed

    async def test_a_rewrite_stores_the_change_and_the_observation_follows(
        self, backend: Backend
    ) -> None:
        fs = Fs(backend, load_entrypoints=False)
        alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
        await bob.fs.write_bytes("a.json", b'{"n": 1}\r\n')
        await alice.fs.read("a.json")
        await bob.fs.read("a.json")
        first = await alice.fs.rewrite_bytes("a.json", lambda data: data.replace(b"1", b"2"))
        blob = await backend.read("a.json")
        assert blob.data == b'{"n": 2}\r\n'  # every byte as the change gave it
        assert (first.version, first.created, first.size) == (blob.version, False, len(blob.data))
        assert first.previous_version != first.version
        second = await alice.fs.rewrite_bytes("a.json", lambda data: data.replace(b"2", b"3"))
        assert second.previous_version == first.version  # its own change is its observation
        await alice.fs.write_bytes("a.json", b"{}")  # a complete one: it licenses a write
        with pytest.raises(Stale):  # another owner's read is of a version gone
            await bob.fs.rewrite_bytes("a.json", lambda data: data)
        assert (await backend.read("a.json")).data == b"{}"

    async def test_a_new_text_file_keeps_the_line_endings_it_was_given(
        self, backend: Backend
    ) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        await ctx.fs.write("crlf.txt", "one\r\ntwo\r\n")
        assert (await backend.read("crlf.txt")).data == b"one\r\ntwo\r\n"
        await ctx.fs.write("crlf.txt", "one\r\ntwo\nthree\n")  # a replaced file follows its own
        assert (await backend.read("crlf.txt")).data == b"one\r\ntwo\r\nthree\r\n"

    # -- moves ------------------------------------------------------------------------------

    async def test_a_move_takes_the_file_and_its_observation_along(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
        await bob.fs.write("a.txt", "one\ntwo\n")
        await alice.fs.read("a.txt", offset=2, limit=1)
        moved = await alice.fs.move("a.txt", "pkg/deep/b.txt")
        assert (moved.path, moved.destination, moved.replaced) == ("a.txt", "pkg/deep/b.txt", None)
        with pytest.raises(NotFound):
            await backend.read("a.txt")
        blob = await backend.read("pkg/deep/b.txt")
        assert blob.data == b"one\ntwo\n"
        assert blob.version == moved.version
        await alice.fs.edit("pkg/deep/b.txt", "one", "uno")  # observed where it now is
        with pytest.raises(NotObserved):
            await bob.fs.edit("pkg/deep/b.txt", "two", "dos")  # bob never read it there

    async def test_a_move_needs_the_source_read_as_it_is(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
        await bob.fs.write("a.txt", "one\n")
        with pytest.raises(NotObserved):
            await alice.fs.move("a.txt", "b.txt")
        await alice.fs.read("a.txt")
        await bob.fs.edit("a.txt", "one", "uno")
        with pytest.raises(Stale):
            await alice.fs.move("a.txt", "b.txt")
        with pytest.raises(NotFound):
            await alice.fs.move("missing.txt", "b.txt")
        assert (await backend.read("a.txt")).data == b"uno\n"
        with pytest.raises(NotFound):
            await backend.read("b.txt")

    async def test_a_move_over_a_file_needs_overwrite_and_that_file_read(
        self, backend: Backend
    ) -> None:
        fs = Fs(backend, load_entrypoints=False)
        alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
        await bob.fs.write("a.txt", "from a\n")
        await bob.fs.write("b.txt", "from b\n")
        await alice.fs.read("a.txt")
        with pytest.raises(AlreadyExists):
            await alice.fs.move("a.txt", "b.txt")
        with pytest.raises(NotObserved):
            await alice.fs.move("a.txt", "b.txt", overwrite=True)
        await alice.fs.read("b.txt")
        await bob.fs.edit("b.txt", "from b", "changed b")
        with pytest.raises(Stale):
            await alice.fs.move("a.txt", "b.txt", overwrite=True)
        assert (await backend.read("a.txt")).data == b"from a\n"
        assert (await backend.read("b.txt")).data == b"changed b\n"
        replaced = (await alice.fs.read("b.txt")).version
        moved = await alice.fs.move("a.txt", "b.txt", overwrite=True)
        assert moved.replaced == replaced
        assert (await backend.read("b.txt")).data == b"from a\n"
        with pytest.raises(NotFound):
            await backend.read("a.txt")

    async def test_a_move_onto_itself_is_refused(self, backend: Backend) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        await ctx.fs.write("a.txt", "one\n")
        with pytest.raises(InvalidArgument):
            await ctx.fs.move("a.txt", "a.txt", overwrite=True)
        assert (await backend.read("a.txt")).data == b"one\n"

    async def test_crosswise_moves_finish_without_deadlock(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        agents = [fs.context(owner="alice"), fs.context(owner="bob")]
        await agents[0].fs.write("a.txt", "a\n")
        await agents[0].fs.write("b.txt", "b\n")
        for agent in agents:
            await agent.fs.read("a.txt")
            await agent.fs.read("b.txt")
        outcomes: list[object] = []

        async def move(agent: Context, source: str, destination: str) -> None:
            try:
                outcomes.append(await agent.fs.move(source, destination, overwrite=True))
            except (Stale, NotFound) as lost:  # the other went first
                outcomes.append(lost)

        with anyio.fail_after(30):  # far below two lock timeouts
            async with anyio.create_task_group() as group:
                group.start_soon(move, agents[0], "a.txt", "b.txt")
                group.start_soon(move, agents[1], "b.txt", "a.txt")
        assert sum(not isinstance(outcome, FsError) for outcome in outcomes) == 1
        survivors = [p for p in ("a.txt", "b.txt") if await _exists(backend, p)]
        assert len(survivors) == 1

    # -- patches ----------------------------------------------------------------------------

    async def test_an_update_can_be_undone(self, backend: Backend) -> None:
        await backend.write("a.txt", b"one\n", expect=ABSENT)
        async with backend.open_update("a.txt", max_size=None) as update:
            written = await update.write(b"two\n")
            await update.undo(written)
        assert (await backend.read("a.txt")).data == b"one\n"
        async with backend.open_update("a.txt", max_size=None) as update:
            await update.delete()
            await update.undo(None)
        assert (await backend.read("a.txt")).data == b"one\n"
        async with backend.open_update("new.txt", max_size=None) as update:
            await update.undo(await update.write(b"new\n"))
        assert not await _exists(backend, "new.txt")

    async def test_a_patch_applies_whole_or_not_at_all(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
        for path, text in {"a.py": "x = 1\ny = 2\n", "b.py": "b = 1\n", "c.py": "c\n"}.items():
            await bob.fs.write(path, text)
            await alice.fs.read(path)
        one = Hunk(old=("x = 1",), new=("x = 10",))
        failing = [
            FilePatch(action=PatchAction.UPDATE, path="a.py", hunks=(one,)),
            FilePatch(action=PatchAction.DELETE, path="c.py"),
            FilePatch(action=PatchAction.UPDATE, path="b.py", hunks=(Hunk(old=("z",), new=()),)),
        ]
        with pytest.raises(NoMatch):
            await alice.fs.apply_patch(failing)
        await bob.fs.edit("b.py", "b = 1", "b = 2")
        with pytest.raises(Stale):
            await alice.fs.apply_patch(
                [*failing[:2], FilePatch(action=PatchAction.DELETE, path="b.py")]
            )
        assert (await backend.read("a.py")).data == b"x = 1\ny = 2\n"
        assert (await backend.read("c.py")).data == b"c\n"
        await alice.fs.apply_patch(
            [
                FilePatch(action=PatchAction.ADD, path="pkg/new.py", content="new\n"),
                FilePatch(action=PatchAction.UPDATE, path="a.py", hunks=(one,), move_to="pkg/a.py"),
                FilePatch(action=PatchAction.DELETE, path="c.py"),
            ]
        )
        assert (await backend.read("pkg/a.py")).data == b"x = 10\ny = 2\n"
        assert (await backend.read("pkg/new.py")).data == b"new\n"
        assert not await _exists(backend, "a.py")
        assert not await _exists(backend, "c.py")
        await alice.fs.edit("pkg/a.py", "y = 2", "y = 20")  # observed where it now is

    async def test_crosswise_patches_finish_without_deadlock(self, backend: Backend) -> None:
        fs = Fs(backend, load_entrypoints=False)
        agents = [fs.context(owner="alice"), fs.context(owner="bob")]
        for path in ("a.txt", "b.txt"):
            await agents[0].fs.write(path, "line\n")
            for agent in agents:
                await agent.fs.read(path)
        outcomes: list[object] = []

        async def patch(agent: Context, first: str, second: str) -> None:
            hunk = Hunk(old=("line",), new=(agent.owner,))
            parts = [
                FilePatch(action=PatchAction.UPDATE, path=p, hunks=(hunk,)) for p in (first, second)
            ]
            try:
                outcomes.append(await agent.fs.apply_patch(parts))
            except Stale as lost:  # the other went first
                outcomes.append(lost)

        with anyio.fail_after(30):  # far below two lock timeouts
            async with anyio.create_task_group() as group:
                group.start_soon(patch, agents[0], "a.txt", "b.txt")
                group.start_soon(patch, agents[1], "b.txt", "a.txt")
        assert sum(not isinstance(outcome, FsError) for outcome in outcomes) == 1
        contents = {(await backend.read(p)).data for p in ("a.txt", "b.txt")}
        assert contents in ({b"alice\n"}, {b"bob\n"})  # one patch whole, never a mix

    # -- directory moves --------------------------------------------------------------------

    async def test_a_directory_moves_whole_or_is_refused_untouched(self, backend: Backend) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        files = {"pkg/a.py": b"a = 1\n", "pkg/sub/b.bin": bytes(range(256)), "pkg/sub/c/d": b""}
        for path, data in files.items():
            await backend.write(path, data, expect=ABSENT)
        if not backend.capabilities.directory_moves:
            with pytest.raises(IsADirectory) as refused:
                await ctx.fs.move("pkg", "lib/pkg")
            assert refused.value.hint
            for path, data in files.items():
                assert (await backend.read(path)).data == data
            assert not await _exists(backend, "lib/pkg/a.py")
            return
        moved = await ctx.fs.move("pkg", "lib/pkg")
        assert (moved.path, moved.destination, moved.directory) == ("pkg", "lib/pkg", True)
        assert moved.moved == 5  # a.py, sub, sub/b.bin, sub/c, sub/c/d
        for path, data in files.items():
            assert (await backend.read(f"lib/{path}")).data == data
            assert not await _exists(backend, path)
        with pytest.raises(NotFound):
            await backend.stat("pkg")

    async def test_a_directory_move_needs_a_free_destination_outside_itself(
        self, backend: Backend
    ) -> None:
        ctx = Fs(backend, load_entrypoints=False).context(owner="alice")
        await backend.write("pkg/a.py", b"a\n", expect=ABSENT)
        await backend.write("lib/pkg/b.py", b"b\n", expect=ABSENT)
        refusal = AlreadyExists if backend.capabilities.directory_moves else IsADirectory
        with pytest.raises(refusal):
            await ctx.fs.move("pkg", "lib/pkg")
        with pytest.raises(InvalidArgument):
            await ctx.fs.move("pkg", "pkg/inner")
        with pytest.raises(InvalidArgument):
            await ctx.fs.move("pkg", "lib/other", overwrite=True)
        with pytest.raises(InvalidArgument):
            await ctx.fs.move("", "elsewhere")
        assert (await backend.read("pkg/a.py")).data == b"a\n"
        assert (await backend.read("lib/pkg/b.py")).data == b"b\n"
        assert not await _exists(backend, "lib/pkg/a.py")
        assert not await _exists(backend, "pkg/inner/a.py")


async def _exists(backend: Backend, path: str) -> bool:
    try:
        await backend.read(path)
    except NotFound:
        return False
    return True


async def _update(backend: Backend, path: str, *, max_size: int | None = None) -> None:
    """Open and leave an update of *path* (to see what opening it raises)."""
    async with backend.open_update(path, max_size=max_size):
        pass


async def _stream(backend: Backend, path: str, *, chunk_size: int = 4096) -> None:
    """Open and leave a streamed read of *path* (to see what opening it raises)."""
    async with backend.open_read(path, chunk_size=chunk_size):
        pass
