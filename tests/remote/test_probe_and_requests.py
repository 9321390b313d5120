"""The CAS probe against stores that drop conditions, and the requests each operation costs."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import asdict
from typing import Any

import anyio
import fsspec
import pytest
from tests.remote.conftest import UrlFor
from tests.remote.proxy import proxy
from tests.remote.servers import GCS, S3, Server

from ctxfs.core import ABSENT, BackendError, CasScope, ErrorCode, Stale, open_backend, open_fs
from ctxfs.remote import KeySpace, ObjectStoreBackend, ProbeResult
from ctxfs.remote.fsspec_store import FsspecStore

pytestmark = pytest.mark.anyio

DROPPING = {
    "s3": {"drop_headers": {"If-Match", "If-None-Match"}},
    "gcs": {"drop_params": {"ifGenerationMatch"}},
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("store", [S3, GCS], ids=["s3", "gcs"])
async def test_the_probe_catches_a_store_that_ignores_conditions(
    store: Server, url_for: UrlFor
) -> None:
    url = url_for(store)
    found = ProbeResult(  # (GCS's driver checks a delete's version itself, first)
        create_refused=False, stale_refused=False, stale_delete_refused=store is GCS
    )
    with proxy(store.port, **DROPPING[store.name]) as fake:
        options: dict[str, Any] = store.options | {"endpoint_url": fake.url}
        backend = open_backend(url, **options)
        assert isinstance(backend, ObjectStoreBackend)
        async with backend:
            assert backend.probe_result == found
            assert backend.capabilities.cas_scope is CasScope.PROCESS
            # Within this process the backend still refuses a stale write, by itself.
            first = await backend.write("a.txt", b"1", expect=ABSENT)
            await backend.write("a.txt", b"2", expect=first)
            with pytest.raises(Stale):
                await backend.write("a.txt", b"3", expect=first)
            assert (await backend.read("a.txt")).data == b"2"
            assert [entry.name for entry in await backend.list("")] == ["a.txt"]  # no probe left

        with pytest.raises(BackendError) as refused:
            async with open_fs(url, require_global_cas=True, load_entrypoints=False, **options):
                pass  # pragma: no cover - refused on entry
        assert refused.value.code is ErrorCode.BACKEND_ERROR
        assert refused.value.details == asdict(found)
        assert "conditional writes" in refused.value.message

    async with open_fs(url, require_global_cas=True, load_entrypoints=False, **store.options) as fs:
        backend = fs.backend
        assert isinstance(backend, ObjectStoreBackend)
        assert backend.capabilities.cas_scope is CasScope.GLOBAL


async def test_the_probe_catches_a_store_that_ignores_conditions_on_deletes(
    url_for: UrlFor,
) -> None:
    # Some S3-compatible stores take If-Match on a PUT and ignore it on a DELETE: a stale delete
    # would remove another host's newer write.
    import s3fs  # noqa: PLC0415

    url = url_for(S3)
    with proxy(S3.port, drop_headers={"If-Match"}, drop_on={"DELETE"}) as fake:
        options: dict[str, Any] = S3.options | {"endpoint_url": fake.url}
        async with open_fs(url, load_entrypoints=False, **options) as fs:
            backend = fs.backend
            assert isinstance(backend, ObjectStoreBackend)
            assert backend.probe_result == ProbeResult(
                create_refused=True, stale_refused=True, stale_delete_refused=False
            )
            assert backend.capabilities.cas_scope is CasScope.PROCESS
            first = await backend.write("a.txt", b"1", expect=ABSENT)
            await backend.write("a.txt", b"2", expect=first)
            with pytest.raises(Stale):
                await backend.delete("a.txt", expect=first)
            assert (await backend.read("a.txt")).data == b"2"
            # Writes keep the store's own condition: another host writing between the check
            # and the PUT is not overwritten.
            seen = (await backend.read("a.txt")).version
            bucket, _, prefix = url.removeprefix("s3://").partition("/")
            other_host = s3fs.S3FileSystem(skip_instance_cache=True, **S3.options)

            def another_host_writes(method: str, path: str) -> None:
                if method == "PUT" and path.endswith("/a.txt"):
                    fake.on_request = None
                    other_host.call_s3(
                        "put_object", Bucket=bucket, Key=f"{prefix}/a.txt", Body=b"3"
                    )

            fake.on_request = another_host_writes
            with pytest.raises(Stale):
                await backend.write("a.txt", b"4", expect=seen)
            assert (await backend.read("a.txt")).data == b"3"


async def test_s3_requests_per_operation_are_the_minimum(url_for: UrlFor) -> None:
    """A read is one GET; an edit of an observed file is one GET and one conditional PUT."""
    url = url_for(S3)
    with proxy(S3.port) as counted:
        options = S3.options | {"endpoint_url": counted.url}
        async with open_fs(url, load_entrypoints=False, **options) as fs:
            ctx = fs.context(owner="agent")
            opened = list(counted.requests)
            counted.requests.clear()
            await ctx.fs.write("notes.txt", "one\ntwo\n")
            created = list(counted.requests)
            counted.requests.clear()
            await ctx.fs.read("notes.txt")
            read = list(counted.requests)
            counted.requests.clear()
            await ctx.fs.edit("notes.txt", "two", "three")
            edited = list(counted.requests)
    key = url.removeprefix("s3://")
    # The probe, once per open: versioning, create, create again, head, update, stale update,
    # stale delete, delete (a head first: S3 answers 204 for a missing key).
    probe = ["GET", "PUT", "PUT", "HEAD", "PUT", "PUT", "DELETE", "HEAD", "DELETE"]
    assert [m for m, _ in opened] == probe
    assert opened[0] == ("GET", f"/{key.partition('/')[0]}")  # GetBucketVersioning
    assert created == [("GET", f"/{key}/notes.txt"), ("PUT", f"/{key}/notes.txt")]
    assert read == [("GET", f"/{key}/notes.txt")]
    assert edited == [("GET", f"/{key}/notes.txt"), ("PUT", f"/{key}/notes.txt")]


def test_first_calls_from_two_threads_each_with_its_loop_wait_for_one_probe() -> None:
    # A backend serves any thread's event loop: the second first call waits for the first's
    # probe, and its loop is woken when the probe is done (not by its own next timer).
    class SlowProbe(ObjectStoreBackend):
        probes = 0

        async def probe(self) -> ProbeResult:
            SlowProbe.probes += 1
            await anyio.sleep(0.2)  # (while the other thread's call waits)
            return await super().probe()

    bucket = f"probe-{uuid.uuid4().hex}"
    backend = SlowProbe(FsspecStore(fsspec.filesystem("memory"), bucket), KeySpace(bucket, ""))
    waits: list[float] = []

    async def first_call() -> None:
        started = time.monotonic()
        with anyio.fail_after(10):
            assert await backend.list("") == []
        waits.append(time.monotonic() - started)

    threads = [threading.Thread(target=anyio.run, args=(first_call,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(waits) == 2, "a first call failed (its error is printed above)"
    assert SlowProbe.probes == 1
    assert max(waits) < 5, "the waiter's loop slept on (told of the probe only by its own timer)"
    anyio.run(backend.aclose)
