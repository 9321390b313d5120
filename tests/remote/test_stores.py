"""Behaviour every remote store must show beyond the conformance suite, on real servers."""

from __future__ import annotations

import functools
import hashlib
import json
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import pytest
from tests.remote.conftest import UrlFor
from tests.remote.proxy import Fault, proxy
from tests.remote.servers import AZURE, AZURITE, GCS, S3, SFTP, Server

from ctxfs.core import (
    ABSENT,
    Backend,
    BackendError,
    Busy,
    ErrorCode,
    FileKind,
    FsError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Stale,
    TooLarge,
    Unavailable,
    Version,
    open_backend,
    open_fs,
)
from ctxfs.remote import ObjectStoreBackend
from ctxfs.remote.ioloop import on_io_loop
from ctxfs.remote.removals import RemovalLocks
from ctxfs.tools import FsToolset

pytestmark = pytest.mark.anyio

_MiB = 1 << 20


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def opened(server: Server, url: str, **extra: Any) -> Backend:
    return open_backend(url, **(server.options | extra))


def through(store: Server, proxy_url: str) -> dict[str, Any]:
    """The options that send *store*'s requests through the proxy at *proxy_url*."""
    if store is AZURE:
        return {"connection_string": AZURITE.replace("http://127.0.0.1:10000", proxy_url)}
    return {"endpoint_url": proxy_url}


OBJECT_STORES = [
    S3,
    *(pytest.param(store, marks=pytest.mark.slow) for store in (GCS, AZURE)),
]
"""The object stores, GCS and Azure only in the slow run (as the ``server`` fixture does)."""


# -- reads pinned to one version ----------------------------------------------------------------


async def test_a_streamed_read_is_never_torn_by_a_concurrent_overwrite(
    server: Server, url_for: UrlFor
) -> None:
    old, new = b"a" * (3 * _MiB), b"b" * (3 * _MiB)
    async with opened(server, url_for(server)) as backend:
        await backend.write("big.bin", old, expect=ABSENT)
        received = []
        try:
            async with backend.open_read("big.bin", chunk_size=256 * 1024) as stream:
                async for chunk in stream:
                    received.append(chunk)
                    if len(received) == 1:
                        await backend.write("big.bin", new, expect=None)
        except Stale:
            assert backend.capabilities.range_reads, "only ranged reads see the change"
        else:
            # SFTP streams one open handle: the replaced file keeps its old bytes under it.
            assert not backend.capabilities.range_reads
            assert b"".join(received) == old
        assert set(b"".join(received)) == {ord("a")}


async def test_reads_and_ranges_pinned_to_an_old_version_are_stale(
    server: Server, url_for: UrlFor
) -> None:
    async with opened(server, url_for(server)) as backend:
        first = await backend.write("f.txt", b"0123456789", expect=ABSENT)
        await backend.write("f.txt", b"abcdefghij", expect=first)
        for start, end in ((None, None), (2, 4), (8, None), (3, 3), (20, None)):
            with pytest.raises(Stale):
                await backend.read("f.txt", start=start, end=end, version=first)


# -- sizes -------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_writes_beyond_the_single_request_limit_are_too_large(url_for: UrlFor) -> None:
    for server in (S3, GCS, AZURE):
        async with opened(server, url_for(server), max_cas_size=1024) as backend:
            assert backend.capabilities.max_cas_size == 1024
            with pytest.raises(TooLarge) as refused:
                await backend.write("big.bin", b"x" * 1025, expect=ABSENT)
            assert refused.value.details == {"size": 1025, "max_size": 1024}
            with pytest.raises(NotFound):
                await backend.stat("big.bin")


async def test_max_size_refuses_before_the_body_is_fetched(server: Server, url_for: UrlFor) -> None:
    async with opened(server, url_for(server)) as backend:
        await backend.write("f.bin", b"x" * 5000, expect=ABSENT)
        with pytest.raises(TooLarge):
            await backend.read("f.bin", max_size=4999)
        assert (await backend.read("f.bin", max_size=5000)).size == 5000


# -- keys stay under the prefix ------------------------------------------------------------------


async def test_roots_side_by_side_never_see_each_other(server: Server, url_for: UrlFor) -> None:
    url = url_for(server)
    async with opened(server, url) as mine, opened(server, url + "-sibling") as theirs:
        await mine.write("a.txt", b"mine", expect=ABSENT)
        await theirs.write("a.txt", b"theirs", expect=ABSENT)
        await theirs.write("only-theirs.txt", b"x", expect=ABSENT)
        assert [entry.name for entry in await mine.list("")] == ["a.txt"]
        assert (await mine.read("a.txt")).data == b"mine"
        for attack in ("../x", "/etc/passwd", "a\\..\\b", "s3://other/key", "a//b", "./a"):
            with pytest.raises(FsError) as refused:
                await mine.read(attack)
            assert refused.value.code in (ErrorCode.INVALID_PATH, ErrorCode.OUTSIDE_ROOT)


async def test_reserved_names_are_refused_and_hidden(server: Server, url_for: UrlFor) -> None:
    async with opened(server, url_for(server)) as backend:
        with pytest.raises(FsError) as refused:
            await backend.write(".ctxfs-lock.a", b"x", expect=None)
        assert refused.value.code is ErrorCode.INVALID_PATH
        await backend.write("a.txt", b"x", expect=ABSENT)
        assert [entry.name for entry in await backend.list("")] == ["a.txt"]


@pytest.mark.parametrize("store", [S3, GCS, AZURE], ids=lambda s: s.name)
async def test_directory_markers_are_directories_on_every_store(
    store: Server, url_for: UrlFor
) -> None:
    # "d/" objects, as consoles and other tools make them: a directory, never an entry of its own.
    async with opened(store, url_for(store)) as backend:
        assert isinstance(backend, ObjectStoreBackend)
        prefix = backend.keys.key("d").removesuffix("d")
        for key in ("d/", "d/f.txt", "empty/"):
            await on_io_loop(
                backend.store.put, prefix + key, b"x" * key.endswith("txt"), expect=None
            )
        inside = await backend.list("d")
        assert [entry.path for entry in inside] == ["d/f.txt"]
        assert inside.unnamed == ()
        root = await backend.list("")
        assert [(entry.path, entry.kind) for entry in root] == [
            ("d", FileKind.DIRECTORY), ("empty", FileKind.DIRECTORY)]  # fmt: skip
        assert await backend.list("empty") == []


@pytest.mark.parametrize("store", OBJECT_STORES, ids=lambda s: s.name)
async def test_a_file_named_as_a_directory_hides_nothing_from_the_searches(
    store: Server, url_for: UrlFor
) -> None:
    # An object store lets "dir" be a file while "dir/x.txt" exists: both are searched.
    tools = FsToolset()
    async with open_fs(url_for(store), load_entrypoints=False, **store.options) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.write("dir/x.txt", "needle\n")
        await ctx.fs.write("dir", "needle too\n")
        globbed = await tools.execute(ctx, "glob", {"pattern": "**/*"})
        assert sorted(globbed.structured["paths"]) == ["dir", "dir/x.txt"]
        found = await tools.execute(ctx, "grep", {"pattern": "needle"})
        assert sorted(match["path"] for match in found.structured["matches"]) == [
            "dir",
            "dir/x.txt",
        ]


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("store", [S3, GCS, AZURE, SFTP], ids=lambda s: s.name)
async def test_an_unreachable_store_is_unavailable_after_bounded_retries(store: Server) -> None:
    url = store.url("/tmp/ctxfs-unreachable" if store is SFTP else "bucket", "root")
    url = url.replace(f":{store.port}", ":9")
    options: dict[str, Any] = dict(store.options, retries=1)
    if store is S3:
        options |= {
            "endpoint_url": "http://127.0.0.1:9",
            "config_kwargs": {"retries": {"max_attempts": 1}},
        }
    elif store is GCS:
        options |= {"endpoint_url": "http://127.0.0.1:9"}
    elif store is AZURE:
        options |= {"connection_string": AZURITE.replace(":10000", ":9")}
    started = time.monotonic()
    with pytest.raises(Unavailable) as caught:
        async with open_fs(url, load_entrypoints=False, **options):
            pass  # pragma: no cover - the probe at open fails
    assert caught.value.retryable is True
    assert caught.value.code is ErrorCode.UNAVAILABLE
    assert time.monotonic() - started < 60


async def test_a_gcs_endpoint_that_never_answers_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A server that takes the connection and says nothing: the request fails once the answer
    # has stalled STALLED_SECONDS (gcsfs sets no timeout of its own).
    monkeypatch.setattr("ctxfs.remote.gcs.STALLED_SECONDS", 0.5)
    with socket.create_server(("127.0.0.1", 0)) as silent:
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        options = GCS.options | {"endpoint_url": endpoint, "retries": 0, "probe": False}
        with anyio.fail_after(20):
            async with open_fs("gs://bucket/root", load_entrypoints=False, **options) as fs:
                with pytest.raises(Unavailable) as caught:
                    await fs.context(owner="agent").fs.read("a.txt")
    assert caught.value.retryable is True


@pytest.mark.parametrize("store", [S3, GCS], ids=lambda s: s.name)
async def test_an_endpoint_answering_a_web_page_is_a_backend_error(store: Server) -> None:
    # A wrong endpoint that answers 200 with HTML: the driver cannot read it, and says so.
    PAGE = b"<html>welcome</html>"  # noqa: N806

    class Page(BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.send_response(200)  # (at once: the body may wait for a 100 Continue)
            self.send_header("Connection", "close")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(PAGE)

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = answer  # noqa: N815

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    with ThreadingHTTPServer(("127.0.0.1", 0), Page) as page:
        threading.Thread(target=page.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{page.server_address[1]}"
        options = store.options | {"endpoint_url": endpoint, "retries": 0}
        for probe in (True, False):
            with pytest.raises(BackendError):
                async with open_fs(
                    store.url("bucket", "root"), load_entrypoints=False, probe=probe, **options
                ) as fs:
                    await fs.context(owner="agent").fs.write("a.txt", "one\n")
        page.shutdown()


async def test_transient_failures_are_retried_and_a_landed_write_is_not_a_conflict(
    url_for: UrlFor,
) -> None:
    url = url_for(GCS)
    with proxy(GCS.port) as flaky:
        async with opened(GCS, url, endpoint_url=flaky.url) as backend:
            flaky.faults = [Fault("GET", 503), Fault("GET", 503)]
            with pytest.raises(NotFound):
                await backend.read("a.txt")  # two 503s, then the real answer
            flaky.faults = [Fault("POST", 503, forward=True)]  # landed, but we hear 503
            version = await backend.write("a.txt", b"one", expect=ABSENT)
            assert (await backend.read("a.txt")).version == version
            flaky.faults = [Fault("POST", 503, forward=True)]
            newer = await backend.write("a.txt", b"two", expect=version)
            assert (await backend.read("a.txt")).data == b"two"
            assert newer != version
            flaky.faults = [Fault("GET", 503)] * 5
            flaky.requests.clear()
            with pytest.raises(Unavailable):
                await backend.read("a.txt")
            assert len(flaky.requests) == 4  # the first try and three retries


def gcs_not_found(path: str) -> bytes:
    """The body of GCS's 404 for a missing object (fake-gcs-server says only ``Not Found``)."""
    where = urlsplit(path).path
    message = f"No such object: {unquote(where.split('/b/')[-1].replace('/o/', '/', 1))}"
    if "alt=media" in path:
        return message.encode()
    error = {"code": 404, "message": message, "errors": [{"reason": "notFound"}]}
    return json.dumps({"error": error}).encode()


@pytest.mark.slow
async def test_gcs_tells_a_missing_object_from_a_missing_bucket() -> None:
    # In a bucket whose name says "bucket", GCS's own 404 bodies: a new file is made, a missing
    # one is not_found; a bucket that does not exist is backend_error at open.
    GCS.require()
    bucket = GCS.create_bucket(name="acme-bucket-not-" + uuid.uuid4().hex[:8])
    with proxy(GCS.port) as gcs:
        gcs.not_found = gcs_not_found
        options = GCS.options | {"endpoint_url": gcs.url}
        async with open_fs(f"gs://{bucket}/ws", load_entrypoints=False, **options) as fs:
            ctx = fs.context(owner="agent")
            assert (await ctx.fs.write("notes.md", "not here\n")).created
            with pytest.raises(NotFound):
                await ctx.fs.read("missing.txt")
            with pytest.raises(NotFound):
                await ctx.fs.list("no-dir")
    with pytest.raises(BackendError, match="the bucket does not exist"):
        async with open_fs("gs://no-such-bucket-here/ws", load_entrypoints=False, **GCS.options):
            pass  # pragma: no cover - the probe at open fails


@pytest.mark.parametrize("store", [S3, GCS, AZURE], ids=lambda s: s.name)
async def test_a_delete_whose_answer_was_lost_is_not_a_failure(
    store: Server, url_for: UrlFor
) -> None:
    # The DELETE lands, its answer is lost (503): the retry finds nothing, and that is success;
    # a file another writer changed meanwhile is still stale.
    url = url_for(store)
    with proxy(store.port) as flaky:
        async with opened(store, url, **through(store, flaky.url)) as backend:
            for expect in (True, False):
                version = await backend.write("a.txt", b"one", expect=ABSENT)
                flaky.faults = [Fault("DELETE", 503, forward=True)]
                await backend.delete("a.txt", expect=version if expect else None)
                with pytest.raises(NotFound):
                    await backend.stat("a.txt")
            version = await backend.write("a.txt", b"one", expect=ABSENT)
            await backend.write("a.txt", b"two", expect=version)
            flaky.faults = [Fault("DELETE", 503)]
            with pytest.raises(Stale):
                await backend.delete("a.txt", expect=version)
            assert (await backend.read("a.txt")).data == b"two"


async def test_an_azure_read_too_large_asks_for_no_more_than_its_bound(url_for: UrlFor) -> None:
    # Azure's SDK fetches up to 32 MiB with its first GET; S3 and GCS stop at the headers.
    store, url = AZURE, url_for(AZURE)
    with proxy(store.port) as counted:
        async with opened(store, url, **through(store, counted.url)) as backend:
            await backend.write("big.bin", b"x" * (3 << 20), expect=ABSENT)
            counted.sent.clear()
            with pytest.raises(TooLarge):
                await backend.read("big.bin", max_size=1 << 20)
            assert max(counted.sent) <= (1 << 20) + 1  # (not the 3 MiB)


@pytest.mark.parametrize("store", OBJECT_STORES, ids=lambda s: s.name)
async def test_a_delete_an_edit_overtook_is_stale_and_leaves_no_lock(
    store: Server, url_for: UrlFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another host's edit lands between the delete's look and its conditional DELETE: the
    # store refuses it, and the object there was written over the version the delete meant.
    url = url_for(store)
    async with opened(store, url) as deleter, opened(store, url) as editor:
        assert isinstance(deleter, ObjectStoreBackend)
        version = await deleter.write("f.txt", b"one", expect=ABSENT)
        remove = deleter.store.remove

        def edit_elsewhere() -> None:  # (another host: its own event loop, its own client)
            async def edit() -> None:
                async with opened(store, url) as other:
                    await other.write("f.txt", b"two", expect=version)

            anyio.run(edit)

        async def overtaken(key: str, *, expect: Version | None = None) -> None:
            if key.endswith("f.txt") and expect is not None:
                await anyio.to_thread.run_sync(edit_elsewhere)
            await remove(key, expect=expect)

        monkeypatch.setattr(deleter.store, "remove", overtaken)
        with pytest.raises(Stale):
            await deleter.delete("f.txt", expect=version)
        assert (await editor.read("f.txt")).data == b"two"
        latest = (await editor.read("f.txt")).version
        monkeypatch.setattr(deleter.store, "remove", remove)
        with anyio.fail_after(5):  # (no removal lock left to lapse: at once)
            await editor.delete("f.txt", expect=latest)


def deletes_of_files(requests: list[tuple[str, str]]) -> int:
    """The ``DELETE`` requests among *requests* but those of removal locks."""
    return sum(method == "DELETE" and "removing-" not in path for method, path in requests)


@pytest.mark.parametrize("store", OBJECT_STORES, ids=lambda s: s.name)
async def test_a_removal_whose_connection_drops_after_it_landed_deletes_and_moves(
    store: Server, url_for: UrlFor
) -> None:
    # The DELETE lands and the connection drops before its answer; the HTTP client sends it
    # again, and the second finds nothing. The delete is done; a move keeps its copy.
    with proxy(store.port) as flaky:
        options = store.options | through(store, flaky.url)
        async with open_fs(url_for(store), load_entrypoints=False, **options) as fs:
            ctx = fs.context(owner="agent")
            for path in ("a.txt", "src.txt"):
                await ctx.fs.write(path, "precious\n")
            flaky.faults = [Fault("DELETE", forward=True, hang_up=True)]
            flaky.requests.clear()
            await ctx.fs.delete("a.txt")
            assert deletes_of_files(flaky.requests) == 2
            flaky.faults = [Fault("DELETE", forward=True, hang_up=True)]
            flaky.requests.clear()
            moved = await ctx.fs.move("src.txt", "dst.txt")
            assert deletes_of_files(flaky.requests) == 2
            assert (await ctx.fs.read("dst.txt")).text == "precious\n"
            assert moved.destination == "dst.txt"
            for gone in ("a.txt", "src.txt"):
                with pytest.raises(NotFound):
                    await ctx.fs.read(gone)


async def test_a_move_whose_removal_landed_unanswered_keeps_its_copy_from_a_new_source(
    url_for: UrlFor,
) -> None:
    # The DELETE lands, the connection drops, and another host makes the file again before the
    # DELETE is sent again: whose file is there cannot be told, so the copy stays.
    import s3fs  # noqa: PLC0415

    url = url_for(S3)
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    other_host = s3fs.S3FileSystem(skip_instance_cache=True, **S3.options)
    with proxy(S3.port) as flaky:
        async with open_fs(
            url, load_entrypoints=False, **S3.options | through(S3, flaky.url)
        ) as fs:
            ctx = fs.context(owner="agent")
            await ctx.fs.write("src.txt", "precious\n")

            deletes = 0

            def another_host_writes(method: str, path: str) -> None:
                nonlocal deletes
                if method == "DELETE" and path.endswith("/src.txt"):
                    deletes += 1
                    if deletes == 2:  # the DELETE sent again
                        key = f"{prefix}/src.txt"
                        other_host.call_s3("put_object", Bucket=bucket, Key=key, Body=b"new\n")

            flaky.faults = [Fault("DELETE", forward=True, hang_up=True)]
            flaky.on_request = another_host_writes
            with pytest.raises(FsError) as caught:
                await ctx.fs.move("src.txt", "dst.txt")
            assert caught.value.code is ErrorCode.BACKEND_ERROR
            assert "dst.txt keeps the content read" in caught.value.message
            assert (await fs.backend.read("dst.txt")).data == b"precious\n"
            assert (await fs.backend.read("src.txt")).data == b"new\n"


async def test_s3_conditional_request_conflicts_are_retried(url_for: UrlFor) -> None:
    """S3 may answer 409 to concurrent conditional writes: nothing was written, try again."""
    with proxy(S3.port) as flaky:
        async with opened(S3, url_for(S3), endpoint_url=flaky.url) as backend:
            flaky.faults = [Fault("PUT", 409), Fault("PUT", 409)]
            version = await backend.write("a.txt", b"one", expect=ABSENT)
            assert (await backend.read("a.txt")).version == version
            flaky.faults = [Fault("PUT", 409)] * 4
            with pytest.raises(Unavailable):
                await backend.write("a.txt", b"two", expect=version)
            assert (await backend.read("a.txt")).data == b"one"


async def test_identical_bytes_from_another_writer_are_still_a_conflict(
    server: Server, url_for: UrlFor
) -> None:
    """Two agents turning "5" into "6" from the same base: one of them must hear stale."""
    async with opened(server, url_for(server)) as backend:
        base = await backend.write("counter", b"5", expect=ABSENT)
        await backend.write("counter", b"6", expect=base)
        with pytest.raises(Stale):
            await backend.write("counter", b"6", expect=base)


async def test_s3_retries_of_a_landed_write_are_not_conflicts(url_for: UrlFor) -> None:
    """A 503 after the write landed is retried (by ctxfs, botocore's own retries are off): the retry
    meets our own write's condition, which is not a conflict."""
    with proxy(S3.port) as flaky:
        async with opened(S3, url_for(S3), endpoint_url=flaky.url) as backend:
            flaky.faults = [Fault("PUT", 503, forward=True)]
            flaky.requests.clear()
            version = await backend.write("a.txt", b"one", expect=ABSENT)
            assert [method for method, _ in flaky.requests].count("PUT") == 2
            assert (await backend.read("a.txt")).version == version


async def test_a_refused_login_is_permission_denied(url_for: UrlFor, tmp_path: Any) -> None:
    url_for(AZURE)
    wrong_key = AZURITE.replace("AccountKey=Eby8", "AccountKey=Xby8")
    with pytest.raises(PermissionDenied):
        async with open_fs(
            AZURE.url("any", "root"), connection_string=wrong_key, load_entrypoints=False
        ):
            pass  # pragma: no cover
    url = url_for(SFTP)
    import asyncssh  # noqa: PLC0415

    key = asyncssh.generate_private_key("ssh-ed25519")
    (tmp_path / "stranger").write_bytes(key.export_private_key())
    options = SFTP.options | {"client_keys": [str(tmp_path / "stranger")], "retries": 0}
    with pytest.raises(PermissionDenied) as refused:
        async with open_fs(url, load_entrypoints=False, **options) as fs:
            await fs.backend.list("")
    assert "login refused" in refused.value.message


# -- configuration -----------------------------------------------------------------------------


async def test_s3_reads_the_standard_environment(
    url_for: UrlFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = url_for(S3)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5555")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    async with open_fs(url, load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.write("env.txt", "from the environment\n")
        assert (await ctx.fs.read("env.txt")).text == "from the environment\n"


async def test_s3_roots_share_a_session_per_configuration_and_environment(
    url_for: UrlFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aiobotocore.session import AioSession  # noqa: PLC0415

    def session(backend: Backend) -> Any:
        assert isinstance(backend, ObjectStoreBackend)
        return backend.store.fs.session  # type: ignore[attr-defined]

    first, second = opened(S3, url_for(S3)), opened(S3, url_for(S3))
    async with first, second:
        await first.write("a.txt", b"first", expect=ABSENT)
        await second.write("a.txt", b"second", expect=ABSENT)
        assert (await first.read("a.txt")).data == b"first"  # a root each
        assert isinstance(session(first), AioSession)
        assert session(first) is session(second)  # one session, whose models load once
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")  # another environment
    assert session(opened(S3, url_for(S3))) is not session(first)
    given = AioSession()
    assert session(opened(S3, url_for(S3), session=given)) is given
    assert session(opened(S3, url_for(S3), session=None)) is not None  # as if none were given


async def test_azure_reads_the_standard_environment(
    url_for: UrlFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = url_for(AZURE)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", AZURITE)
    async with open_fs(url, load_entrypoints=False) as fs:
        ctx = fs.context(owner="agent")
        await ctx.fs.write("env.txt", "from the environment\n")
        assert (await ctx.fs.read("env.txt")).text == "from the environment\n"


def test_a_missing_extra_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    for module, url, extra in (
        ("s3fs", "s3://b/p", "ctxfs-remote[s3]"),
        ("gcsfs.core", "gs://b/p", "ctxfs-remote[gcs]"),
        ("adlfs", "az://c/p", "ctxfs-remote[azure]"),
        ("asyncssh", "sftp://u@h/root", "ctxfs-remote[sftp]"),
    ):
        monkeypatch.setitem(sys.modules, module, None)  # makes the import fail
        with pytest.raises(InvalidArgument) as refused:
            open_backend(url)
        assert extra in refused.value.message
        assert refused.value.hint == f"pip install '{extra}'"


async def test_every_store_runs_under_trio_too(server: Server, url_for: UrlFor) -> None:
    url = url_for(server)

    async def roundtrip() -> bytes:
        async with opened(server, url) as backend:
            version = await backend.write("t.txt", b"trio", expect=ABSENT)
            return (await backend.read("t.txt", version=version)).data

    in_trio = functools.partial(anyio.run, roundtrip, backend="trio")
    assert await anyio.to_thread.run_sync(in_trio) == b"trio"


async def test_the_probe_can_be_skipped(url_for: UrlFor) -> None:
    async with opened(S3, url_for(S3), probe=False) as backend:
        assert isinstance(backend, ObjectStoreBackend)
        assert backend.probe_result is None
        assert backend.capabilities.cas_scope.value == "global"  # the store's promise, unchecked


# -- keys planted by another writer --------------------------------------------------------------


async def test_s3_keys_no_path_can_name_are_skipped_by_listings_and_walks(url_for: UrlFor) -> None:
    """Keys with an empty, ``.`` or ``..`` segment made a walk loop (one glob: 50,000 LISTs).

    A key with a leading empty segment (``prefix//lead.txt``) was listed as ``lead.txt``,
    which no read could find.
    """
    import s3fs  # noqa: PLC0415

    from ctxfs.core import Fs  # noqa: PLC0415
    from ctxfs.core.policies import PathRules  # noqa: PLC0415
    from ctxfs.remote.keys import split_url  # noqa: PLC0415
    from ctxfs.tools import FsToolset  # noqa: PLC0415

    url = url_for(S3)
    bucket, prefix = split_url(url)
    prefix = prefix.strip("/")
    client = s3fs.S3FileSystem(skip_instance_cache=True, **S3.options)
    keys = ("x//y.txt", "a/./b.txt", "../escape.txt", "/lead.txt", "ok.txt", "a/c.txt", "x/z.txt")
    for key in keys:
        client.call_s3("put_object", Bucket=bucket, Key=f"{prefix}/{key}", Body=b"k\n")
    with proxy(S3.port) as counted:
        async with Fs(opened(S3, url, endpoint_url=counted.url), load_entrypoints=False) as fs:
            top = await fs.backend.list("")
            assert [entry.name for entry in top] == ["a", "ok.txt", "x"]
            assert top.unnamed == ("..", "")  # ../ and the empty name before /lead.txt
            inside = await fs.backend.list("x")
            assert [entry.path for entry in inside] == ["x/z.txt"]
            assert inside.unnamed == ("x/",)  # the prefix x// the store reports
            counted.requests.clear()
            tools, ctx = FsToolset(), fs.context(owner="a")
            found = await tools.execute(ctx, "glob", {"pattern": "**"})
            assert found.structured["paths"] == ["a/c.txt", "ok.txt", "x/z.txt"]
            assert found.structured["walk_truncated"] is False  # (no default: always there)
            assert found.structured["unnamed"] == 4  # listed as there, and unreadable
            assert "4 entries not listed: no path can name them" in found.text
            assert len(counted.requests) < 20  # a few LISTs, not a loop
            listed = await tools.execute(ctx, "list_dir", {"path": ""})
            assert ".." not in listed.text.replace("'..'", "")
            assert listed.structured["unnamed"] == 2
            searched = await tools.execute(ctx, "grep", {"pattern": "k"})
            assert searched.structured["total"] == 3
            denied = Fs(fs.backend, plugins=[PathRules(deny=["x"])], load_entrypoints=False)
            found = await tools.execute(denied.context(owner="a"), "glob", {"pattern": "**"})
            assert found.structured["unnamed"] == 3  # (x//y.txt lies where x is denied)


# -- searching a tree ------------------------------------------------------------------------------


@pytest.mark.parametrize("store", [S3, GCS, AZURE], ids=lambda store: store.name)
async def test_a_search_lists_the_tree_once_flat_and_hides_what_a_policy_denies(
    store: Server, url_for: UrlFor
) -> None:
    from ctxfs.core import Fs  # noqa: PLC0415
    from ctxfs.core.policies import PathRules  # noqa: PLC0415
    from ctxfs.tools import FsToolset  # noqa: PLC0415

    backend = opened(store, url_for(store))
    assert isinstance(backend, ObjectStoreBackend)
    async with Fs(backend, plugins=[PathRules(deny=["d1/secret"])], load_entrypoints=False) as fs:
        for top in range(4):
            for sub in range(3):
                for n in range(2):
                    body = b"needle\n" if n == 0 else b"hay\n"
                    await backend.write(f"d{top}/s{sub}/f{n}.txt", body, expect=ABSENT)
        await backend.write("d1/secret/key.txt", b"needle\n", expect=ABSENT)
        scans: list[tuple[str, bool]] = []
        scan = backend.store.scan

        async def counted(prefix: str, **options: Any) -> Any:
            scans.append((prefix, bool(options.get("deep"))))
            return await scan(prefix, **options)

        backend.store.scan = counted  # type: ignore[method-assign]
        tools, ctx = FsToolset(), fs.context(owner="a")
        globbed = await tools.execute(ctx, "glob", {"pattern": "**/*.txt"})
        assert globbed.structured["total"] == 24
        assert "d1/secret/key.txt" not in globbed.structured["paths"]
        assert [deep for _, deep in scans] == [True]  # one flat listing, not one per directory
        found = await tools.execute(
            ctx, "grep", {"pattern": "needle", "output_mode": "files_with_matches"}
        )
        assert found.structured["total"] == 12
        assert "secret" not in found.text
        assert [deep for _, deep in scans] == [True, True]


# -- conditional removals take turns ------------------------------------------------------------


@pytest.mark.parametrize("store", OBJECT_STORES)
async def test_a_removal_lock_waits_for_its_holder_and_breaks_a_crashed_ones(
    store: Server, url_for: UrlFor
) -> None:
    async with opened(store, url_for(store)) as backend:
        assert isinstance(backend, ObjectStoreBackend)

        async def io(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
            del what
            return await on_io_loop(fn, *args, **kwargs)

        quick = RemovalLocks(backend.store, io, lease=30, timeout=0.3)
        async with quick.held("k", "f.txt"):
            started = time.monotonic()
            with pytest.raises(Busy, match="being moved or deleted by someone else"):
                async with quick.held("k", "f.txt"):
                    pass
            assert time.monotonic() - started >= 0.3
            async with quick.held("other", "g.txt"):  # (another key's lock is another's)
                pass
        crashed = RemovalLocks(backend.store, io, lease=0.2, timeout=5)
        holding = crashed.held("k", "f.txt")
        await holding.__aenter__()  # and never leaves: its holder crashed
        await anyio.sleep(0.3)
        started = time.monotonic()
        async with quick.held("k", "f.txt"):
            assert time.monotonic() - started < 0.3  # broken at once, its lease over
        await holding.__aexit__(None, None, None)  # (it finds its lock broken: nothing to do)
        listing = await on_io_loop(backend.store.scan, backend.keys.directory(""))
        assert [info.key for info in listing.objects] == []


@pytest.mark.parametrize("store", OBJECT_STORES)
async def test_a_move_that_waited_in_vain_for_the_removal_lock_undoes_its_copy(
    store: Server, url_for: UrlFor
) -> None:
    # Another host took the lock and removed the source (it died holding it): nothing of
    # this move's was sent, so the source gone is not taken for its own delete landed.
    options = {**store.options, "load_entrypoints": False, "removal_timeout": 0.5}
    async with open_fs(url_for(store), **options) as fs:
        backend = fs.backend
        assert isinstance(backend, ObjectStoreBackend)
        mover = fs.context(owner="b").fs
        await mover.write("d/f.txt", "the only copy\n")
        await mover.read("d/f.txt")
        key = backend.keys.key("d/f.txt")
        name = hashlib.sha256(b"f.txt").hexdigest()[:40]
        lock = f"{key.rpartition('/')[0]}/.ctxfs-removing-{name}"
        driver, read = backend.store, backend.store.get

        async def another_host_moves_it_once_read(wanted: str, request: Any) -> Any:
            got = await read(wanted, request)
            if wanted == key:  # (the move's own read of its source: then the other host acts)
                lease = json.dumps({"token": "another host", "expires": time.time() + 60})
                await driver.put(lock, lease.encode(), expect=ABSENT)
                await driver.remove(key)
            return got

        driver.get = another_host_moves_it_once_read  # type: ignore[method-assign,assignment]
        try:
            with pytest.raises(Busy):
                await mover.move("d/f.txt", "d/copy.txt")
        finally:
            driver.get = read  # type: ignore[method-assign]
        with pytest.raises(NotFound):  # its copy undone: no second copy of the file
            await backend.stat("d/copy.txt")
        await on_io_loop(driver.remove, lock)


def test_removal_lock_options_are_checked_at_open(url_for: UrlFor) -> None:
    for bad in ({"removal_lease": 0}, {"removal_lease": "30"}, {"removal_timeout": float("nan")}):
        with pytest.raises(InvalidArgument, match="must be a positive number of seconds"):
            opened(S3, url_for(S3), **bad)


async def test_a_move_whose_removal_stays_unknown_keeps_its_copy_and_lets_its_lock_lapse(
    url_for: UrlFor,
) -> None:
    # Every DELETE of the source unanswered: it may land yet. The move keeps its copy (it may
    # be the only one), and no other remover acts before the lock's lease ends.
    with proxy(S3.port) as flaky:
        options = S3.options | through(S3, flaky.url) | {"retries": 1, "removal_timeout": 0.3}
        async with open_fs(url_for(S3), load_entrypoints=False, **options) as fs:
            mover, other = fs.context(owner="a").fs, fs.context(owner="b").fs
            await mover.write("src.txt", "the only copy\n")
            await mover.read("src.txt")
            await other.read("src.txt")
            flaky.faults = [Fault("DELETE")] * 4
            with pytest.raises(BackendError, match="keeps the content read"):
                await mover.move("src.txt", "dst.txt")
            assert (await fs.backend.read("dst.txt")).data == b"the only copy\n"
            assert (await fs.backend.read("src.txt")).data == b"the only copy\n"
            flaky.faults = []
            with pytest.raises(Busy):
                await other.delete("src.txt")


@pytest.mark.parametrize(
    "expires", ["1e400", "NaN", "9" * 400, '"soon"', "1e12"], ids=lambda body: body[:8]
)
async def test_a_damaged_removal_lock_is_broken(url_for: UrlFor, expires: str) -> None:
    async with opened(S3, url_for(S3)) as backend:
        assert isinstance(backend, ObjectStoreBackend)
        version = await backend.write("g.txt", b"x", expect=ABSENT)
        lock = backend.keys.internal(f".ctxfs-removing-{hashlib.sha256(b'g.txt').hexdigest()[:40]}")
        body = f'{{"token": "another", "expires": {expires}}}'.encode()
        await on_io_loop(backend.store.put, lock, body, expect=ABSENT)
        await backend.delete("g.txt", expect=version)
        listing = await on_io_loop(backend.store.scan, backend.keys.directory(""))
        assert [info.key for info in listing.objects] == []
