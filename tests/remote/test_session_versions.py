"""The session memory over versioned buckets (S3, GCS): references to the bucket's versions.

Where the probe finds bucket versioning on, the backend declares ``kept_versions``
and the session memory keeps, for each version an owner saw, only the path: a
stale diff and an undo read the old version back from the bucket. A bucket
without versioning keeps working with copies.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from tests.remote.conftest import UrlFor
from tests.remote.servers import S3, SERVERS, Server

from ctxfs.core import Fs, InvalidArgument, Stale, Version, open_fs
from ctxfs.core.sessions import MemorySessions
from ctxfs.remote import ObjectStoreBackend

pytestmark = pytest.mark.anyio

A = "agent-a"
FILES = {
    "crlf.txt": b"first\r\nsecond\r\nthird\r\n",
    "bom.txt": b"\xef\xbb\xbfwith a bom\nsecond\n",
    "blob.bin": b"\x00\xff\xfe\x80binary\x00\n\xc3",
}
Opener = Callable[..., AbstractAsyncContextManager[Fs]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _s3() -> Any:
    import s3fs  # noqa: PLC0415

    return s3fs.S3FileSystem(skip_instance_cache=True, **S3.options)


@pytest.fixture(scope="module", params=["s3", pytest.param("gcs", marks=pytest.mark.slow)])
def server(request: pytest.FixtureRequest) -> Server:
    """Each store whose test server keeps versions too (Azurite does not)."""
    return SERVERS[str(request.param)]


@pytest.fixture(scope="module")
def versioned_bucket(server: Server) -> str:
    """A bucket with versioning enabled, for this module."""
    server.require()
    return server.create_bucket(versioned=True)


@pytest.fixture
def versioned_url(server: Server, versioned_bucket: str) -> str:
    return server.url(versioned_bucket, uuid.uuid4().hex[:12])


@pytest.fixture
def unknown(server: Server) -> Version:
    """A version of this store's kind that no object ever had."""
    return Version('etag:"nope"' if server is S3 else "gen:1")


@pytest.fixture
def store() -> MemorySessions:
    return MemorySessions()


@pytest.fixture
def opener(server: Server, store: MemorySessions) -> Opener:
    def open_at(url: str, **options: Any) -> AbstractAsyncContextManager[Fs]:
        return open_fs(url, sessions=store, load_entrypoints=False, **server.options, **options)

    return open_at


@pytest.fixture
async def fs(opener: Opener, versioned_url: str) -> AsyncIterator[Fs]:
    async with opener(versioned_url) as opened:
        yield opened


async def raw(fs: Fs, path: str) -> bytes:
    return (await fs.backend.read(path)).data


def _key(fs: Fs, path: str) -> tuple[str, str]:
    backend = fs.backend
    assert isinstance(backend, ObjectStoreBackend)
    return backend.keys.bucket, backend.keys.key(path)


async def test_the_probe_declares_kept_versions_only_for_a_versioned_bucket(
    opener: Opener, server: Server, versioned_url: str, url_for: UrlFor, unknown: Version
) -> None:
    async with opener(versioned_url) as fs:
        assert fs.backend.capabilities.kept_versions is True
    async with opener(url_for(server)) as fs:
        assert fs.backend.capabilities.kept_versions is False
        assert await fs.backend.read_version("a.txt", unknown) is None
    async with opener(versioned_url, kept_versions=False) as fs:
        assert fs.backend.capabilities.kept_versions is False
    async with opener(versioned_url, probe=False) as fs:  # nothing probed: copies
        assert fs.backend.capabilities.kept_versions is False


async def test_the_backend_reads_an_earlier_version_back(fs: Fs, unknown: Version) -> None:
    first = await fs.backend.write("a.txt", b"one\n", expect=None)
    second = await fs.backend.write("a.txt", b"two\n", expect=first)
    await fs.backend.write("a.txt.bak", b"other key\n", expect=None)  # under the same prefix
    await fs.backend.write("a.txt", b"one\n", expect=second)  # the same content again
    assert await fs.backend.read_version("a.txt", first) == b"one\n"
    assert await fs.backend.read_version("a.txt", second) == b"two\n"
    assert await fs.backend.read_version("a.txt", unknown) is None
    assert await fs.backend.read_version("a.txt", Version("xxh3:1")) is None
    assert await fs.backend.read_version("missing.txt", first) is None
    await fs.backend.delete("a.txt")  # a delete marker: the versions stay
    assert await fs.backend.read_version("a.txt", second) == b"two\n"


async def test_a_stale_edit_shows_the_diff_from_the_bucket_not_a_copy(
    fs: Fs, store: MemorySessions
) -> None:
    text = "".join(f"line {n}\n" for n in range(20))
    await fs.backend.write("a.py", text.encode(), expect=None)
    a = fs.context(owner=A).fs
    seen = (await a.read("a.py")).version
    assert await store.content(A, seen) is None  # no copy: a reference
    assert await store.reference(A, seen) == "a.py"
    assert store.kept_bytes == len("a.py")

    outside = text.replace("line 3\n", "line three\n").encode()
    await fs.backend.write("a.py", outside, expect=seen)  # someone else, outside ctxfs
    with pytest.raises(Stale) as refused:
        await a.edit("a.py", "line 15\n", "line fifteen\n")
    details = refused.value.details
    assert details["diff_whole"] is True
    assert "-line 3" in str(details["diff"])
    assert "+line three" in str(details["diff"])
    assert store.kept_bytes == 2 * len("a.py")  # the current version: a reference too

    await a.edit("a.py", "line 15\n", "line fifteen\n")  # the diff counted as a read
    assert await raw(fs, "a.py") == outside.replace(b"line 15\n", b"line fifteen\n")


async def test_undo_puts_back_every_byte_read_back_from_the_bucket(
    fs: Fs, store: MemorySessions
) -> None:
    for path, data in FILES.items():
        await fs.backend.write(path, data, expect=None)
    a = fs.context(owner=A).fs
    await a.read("crlf.txt")
    await a.edit("crlf.txt", "second", "2nd")
    await a.read("bom.txt")
    await a.edit("bom.txt", "second", "2nd")
    await a.read_bytes("blob.bin")
    await a.write_bytes("blob.bin", b"\x01\x02 replaced \xff")
    assert store.kept_bytes == 2 * sum(map(len, FILES))  # two paths a file, no contents

    undone = await a.undo(3)
    assert undone.steps == (3, 2, 1)
    assert {path: await raw(fs, path) for path in FILES} == FILES
    await a.edit("crlf.txt", "first", "1st")  # the undo's result counts as seen
    assert await raw(fs, "crlf.txt") == b"1st\r\nsecond\r\nthird\r\n"


async def test_reads_past_the_bound_leave_the_references_an_undo_needs(
    server: Server, versioned_url: str
) -> None:
    # References of 7 bytes (a path) in a bound of 70: twenty reads push out only reads.
    store = MemorySessions(max_bytes_per_owner=70)
    options = {"sessions": store, "load_entrypoints": False, **server.options}
    async with open_fs(versioned_url, **options) as fs:
        files = {f"f{n:02}.txt": b"file %d\n" % n for n in range(22)}
        for path, data in files.items():
            await fs.backend.write(path, data, expect=None)
        a = fs.context(owner=A).fs
        for path in ("f00.txt", "f01.txt"):
            await a.read(path)
            await a.edit(path, "file", "edited")
        for n in range(2, 22):
            await a.read(f"f{n:02}.txt")
        assert store.kept_bytes <= 70
        assert (await a.undo(2)).steps == (2, 1)
        assert {path: await raw(fs, path) for path in files} == files


# S3 only: fake-gcs-server deletes the live object whatever generation a delete names.
@pytest.mark.parametrize("server", ["s3"], indirect=True)
async def test_a_version_gone_from_the_bucket_is_no_longer_kept(fs: Fs) -> None:
    await fs.backend.write("a.txt", b"before\n", expect=None)
    a = fs.context(owner=A).fs
    seen = (await a.read("a.txt")).version
    await a.edit("a.txt", "before", "after")
    bucket, key = _key(fs, "a.txt")
    s3 = _s3()
    for item in s3.call_s3("list_object_versions", Bucket=bucket, Prefix=key)["Versions"]:
        if f"etag:{item['ETag']}" == seen:  # (a lifecycle rule expiring it, say)
            s3.call_s3("delete_object", Bucket=bucket, Key=key, VersionId=item["VersionId"])

    with pytest.raises(InvalidArgument) as refused:
        await a.undo()
    assert refused.value.details["given_up"] == ["a.txt"]
    assert await raw(fs, "a.txt") == b"after\n"  # nothing was put back


async def test_a_bucket_without_versioning_keeps_copies(
    opener: Opener, server: Server, store: MemorySessions, url_for: UrlFor
) -> None:
    async with opener(url_for(server)) as fs:
        await fs.backend.write("a.txt", b"one\ntwo\n", expect=None)
        a = fs.context(owner=A).fs
        seen = (await a.read("a.txt")).version
        assert await store.content(A, seen) == b"one\ntwo\n"
        assert await store.reference(A, seen) is None
        await fs.backend.write("a.txt", b"one\n2\n", expect=seen)
        with pytest.raises(Stale) as refused:
            await a.edit("a.txt", "one", "1")
        assert "+2" in str(refused.value.details["diff"])
        await a.edit("a.txt", "one", "1")
        await a.undo()
        assert await raw(fs, "a.txt") == b"one\n2\n"
