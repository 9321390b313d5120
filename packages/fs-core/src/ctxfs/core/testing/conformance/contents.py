"""Conformance: bytes and whole-file rewrites through ctx.fs."""

from __future__ import annotations

import pytest

from ctxfs.core.backend import Backend
from ctxfs.core.errors import InvalidArgument, NotFound, NotObserved, Stale
from ctxfs.core.fs import Fs
from ctxfs.core.testing.conformance.support import ConformanceBase, contexts

__all__ = ["ContentConformance"]


class ContentConformance(ConformanceBase):
    """Bytes and whole-file rewrites through ctx.fs."""

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
        alice, bob = contexts(backend, "alice", "bob")
        await bob.fs.write_bytes("a.bin", b"one\r\ntwo\r\n")
        with pytest.raises(NotObserved):
            await alice.fs.write_bytes("a.bin", b"mine")
        await alice.fs.read_bytes("a.bin", length=3)
        with pytest.raises(NotObserved):  # part of the file does not license replacing it
            await alice.fs.write_bytes("a.bin", b"mine")
        await alice.fs.edit("a.bin", "one", "uno")  # it does license an edit
        with pytest.raises(NotObserved):  # after which the rest is still unseen
            await alice.fs.write_bytes("a.bin", b"mine")
        await bob.fs.read_bytes("a.bin")
        await alice.fs.read_bytes("a.bin")
        await alice.fs.write_bytes("a.bin", b"alice")
        with pytest.raises(Stale):
            await bob.fs.write_bytes("a.bin", b"bob")
        assert (await backend.read("a.bin")).data == b"alice"
        await bob.fs.read_bytes("a.bin")
        await bob.fs.write_bytes("a.bin", b"bob")
        await alice.fs.read_bytes("a.bin", offset=1, length=1)
        await alice.fs.delete("a.bin")  # any part read licenses a delete

    async def test_a_rewrite_needs_the_file_read_as_it_is(self, backend: Backend) -> None:
        alice, bob = contexts(backend, "alice", "bob")
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
        alice, bob = contexts(backend, "alice", "bob")
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
