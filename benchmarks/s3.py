"""S3 on loopback (moto): wall time and requests per read and per edit.

ctxfs (``ctx.fs`` over ``s3://``) against a hand-written aiobotocore baseline
doing the same store work: a read is one ``GetObject`` (body and ETag); an edit
is a ``GetObject`` and a ``PutObject`` with ``If-Match``. Requests are counted
at botocore's ``before-send`` event. Needs moto on 127.0.0.1:5555
(``.ci/servers start s3``; ``nox -s bench`` starts it).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

from benchmarks.harness import Case, listening
from benchmarks.text_semantics import text_of_size, toggle
from ctxfs.core import open_fs
from ctxfs.remote import ObjectStoreBackend

GROUP = "S3 on loopback (moto server): ctx.fs against hand-written aiobotocore calls"
ENDPOINT: Final = "http://127.0.0.1:5555"
OPTIONS: Final[dict[str, Any]] = {
    "endpoint_url": ENDPOINT,
    "key": "testing",
    "secret": "testing",
    "client_kwargs": {"region_name": "us-east-1"},
}


def available() -> bool:
    """Whether moto listens on the loopback port."""
    return listening(5555)


def request_counter(client: Any) -> list[str]:
    """The methods of the requests *client* sends from now on, as it sends them."""
    sent: list[str] = []

    def count(request: Any, **_: Any) -> None:
        sent.append(request.method)

    client.meta.events.register("before-send.s3", count)
    return sent


@asynccontextmanager
async def client() -> AsyncIterator[Any]:
    """A plain aiobotocore S3 client of the moto server: the baselines' hand."""
    import aiobotocore.session  # noqa: PLC0415 - the s3 extra

    session = aiobotocore.session.get_session()
    async with session.create_client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id="testing",
        aws_secret_access_key="testing", region_name="us-east-1",
    ) as raw:  # fmt: skip
        yield raw


@asynccontextmanager
async def cases() -> AsyncIterator[tuple[list[Case], list[str]]]:
    """The timed cases, and a table of requests per operation."""
    bucket = f"ctxfs-bench-{uuid.uuid4().hex[:12]}"
    async with client() as raw:
        await raw.create_bucket(Bucket=bucket)
        data = text_of_size(10_000)
        at = len(data) // 2
        data = data[:at] + b"UNIQUE-MARKER-A\n" + data[at:]
        await raw.put_object(Bucket=bucket, Key="baseline/module.txt", Body=data)
        async with open_fs(f"s3://{bucket}/ctxfs", load_entrypoints=False, **OPTIONS) as fs:
            ctx = fs.context(owner="bench")
            await ctx.fs.write("module.txt", data.decode())
            await ctx.fs.read("module.txt")
            backend = fs.backend
            assert isinstance(backend, ObjectStoreBackend)
            ours_sent = request_counter(await backend.store._client())  # type: ignore[attr-defined]
            base_sent = request_counter(raw)

            async def base_read() -> bytes:
                response = await raw.get_object(Bucket=bucket, Key="baseline/module.txt")
                async with response["Body"] as body:
                    return bytes(await body.read())

            async def base_edit(old: str, new: str) -> object:
                got = await raw.get_object(Bucket=bucket, Key="baseline/module.txt")
                async with got["Body"] as body:
                    text = (await body.read()).decode()
                if text.count(old) != 1:
                    raise ValueError("not exactly one match")
                return await raw.put_object(
                    Bucket=bucket, Key="baseline/module.txt",
                    Body=text.replace(old, new).encode(), IfMatch=got["ETag"],
                )  # fmt: skip

            def per_call(sent: list[str], call: Callable[[], Any]) -> Callable[[], Any]:
                async def counted() -> object:
                    sent.clear()
                    return await call()

                return counted

            ours_edit = toggle(lambda old, new: ctx.fs.edit("module.txt", old, new))
            base_toggle = toggle(base_edit)
            timed = [
                Case(group=GROUP, name="read ~10 KB", ours=lambda: ctx.fs.read("module.txt"),
                     baseline=base_read, target=None, calls=5),
                Case(group=GROUP, name="edit one line of ~10 KB",
                     ours=ours_edit, baseline=base_toggle, target=None, calls=5,
                     note="ctxfs runs the store's asyncio client on fsspec's IO thread, so that "
                          "it also serves trio callers; the baseline calls it in place"),
            ]  # fmt: skip
            counts = []
            for name, ours, base in (
                ("read", per_call(ours_sent, lambda: ctx.fs.read("module.txt")),
                 per_call(base_sent, base_read)),
                ("edit", per_call(ours_sent, ours_edit), per_call(base_sent, base_toggle)),
            ):  # fmt: skip
                await ours()
                await base()
                counts.append(f"| {name} | {', '.join(ours_sent)} | {', '.join(base_sent)} |")
            table = [
                "## S3 requests per operation",
                "",
                "| operation | ctxfs | baseline |",
                "|---|---|---|",
                *counts,
                "",
            ]
            yield timed, table
