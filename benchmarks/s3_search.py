"""grep and glob over 5,000 objects on S3 (moto on loopback), against a hand-written search.

Each round runs a new toolset, so no round is helped by the memo of the one
before (:mod:`ctxfs.tools.builtin.grep.memo`). The baseline does what a careful programmer
would write by hand with the same client: one flat ``ListObjectsV2`` (paged)
under the prefix, then ``GetObject`` of every candidate, 16 at once (ctxfs's
default ``concurrent_reads``), and one compiled regex over each body. Requests
are counted at botocore's ``before-send`` event. Needs moto on 127.0.0.1:5555.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

from benchmarks.harness import Case
from benchmarks.s3 import OPTIONS, client, request_counter
from ctxfs.core import open_fs
from ctxfs.remote import ObjectStoreBackend
from ctxfs.tools import FsToolset, ToolsetOptions

GROUP = "Search on S3 (moto server), 5,000 objects: ctxfs against a hand-written search"
OBJECTS: Final = 5_000
WIDTH: Final = 16
GLOBBED: Final = sum(1 for index in range(OBJECTS) if index // 25 % 10 == 3 and index % 2)
"""The objects ``*/mod3/*.py`` matches."""


def _body(index: int) -> bytes:
    lines = [f"def function_{index}_{n}(value):\n    return value + {n}\n" for n in range(20)]
    if index % 500 == 7:
        lines.insert(10, "    # needle: the line the search looks for\n")
    return "".join(lines).encode()


def _key(index: int) -> str:
    return (
        f"pkg{index // 250:02}/mod{index // 25 % 10}/file{index:05}.{'py' if index % 2 else 'txt'}"
    )


@asynccontextmanager
async def cases() -> AsyncIterator[tuple[list[Case], list[str]]]:
    """The timed cases, and a table of requests per search."""
    bucket = f"ctxfs-search-{uuid.uuid4().hex[:12]}"
    async with client() as raw:
        await _fill(raw, bucket)
        async with open_fs(f"s3://{bucket}/tree", load_entrypoints=False, **OPTIONS) as fs:
            ctx = fs.context(owner="bench")

            def tools() -> FsToolset:  # a fresh one: no memo of an earlier round's search
                return FsToolset(ToolsetOptions(grep_seconds=300))

            backend = fs.backend
            assert isinstance(backend, ObjectStoreBackend)
            ours_sent = request_counter(await backend.store._client())  # type: ignore[attr-defined]
            base_sent = request_counter(raw)

            async def keys() -> list[str]:
                found, request = [], {"Bucket": bucket, "Prefix": "tree/"}
                while True:
                    page = await raw.list_objects_v2(**request)
                    found += [item["Key"] for item in page.get("Contents", [])]
                    if not page.get("IsTruncated"):
                        return found
                    request["ContinuationToken"] = page["NextContinuationToken"]

            async def base_grep() -> list[str]:
                pattern, gate = re.compile(rb"needle"), asyncio.Semaphore(WIDTH)

                async def holds(key: str) -> bool:
                    async with gate:
                        response = await raw.get_object(Bucket=bucket, Key=key)
                        async with response["Body"] as body:
                            return pattern.search(await body.read()) is not None

                listed = sorted(await keys())
                hits = await asyncio.gather(*(holds(key) for key in listed))
                return [key for key, hit in zip(listed, hits, strict=True) if hit]

            async def base_glob() -> list[str]:
                return sorted(k for k in await keys() if fnmatch.fnmatch(k, "tree/*/mod3/*.py"))

            async def ours_grep() -> object:
                arguments = {"pattern": "needle", "output_mode": "files_with_matches"}
                found = await tools().execute(ctx, "grep", arguments)
                assert found.structured["total"] == OBJECTS // 500, found.text
                return found

            async def ours_glob() -> object:
                found = await tools().execute(ctx, "glob", {"pattern": "*/mod3/*.py"})
                assert found.structured["total"] == GLOBBED, found.text
                return found

            assert len(await base_grep()) == OBJECTS // 500
            assert len(await base_glob()) == GLOBBED
            timed = [
                Case(group=GROUP, name="grep, few matches (every object read)", ours=ours_grep,
                     baseline=base_grep, target=1.5, rounds=3),
                Case(group=GROUP, name="glob over the tree", ours=ours_glob, baseline=base_glob,
                     target=1.5, rounds=7),
            ]  # fmt: skip
            table = [
                f"## S3 requests per search ({OBJECTS:,} objects)",
                "",
                "| search | ctxfs | baseline |",
                "|---|---|---|",
            ]
            searches: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
                ("grep", ours_grep, base_grep),
                ("glob", ours_glob, base_glob),
            ]
            for name, ours, base in searches:
                ours_sent.clear()
                await ours()
                base_sent.clear()
                await base()
                table.append(f"| {name} | {_tally(ours_sent)} | {_tally(base_sent)} |")
            yield timed, [*table, ""]


async def _fill(raw: Any, bucket: str) -> None:
    """Create the bucket and its objects under ``tree/``, 32 at once."""
    await raw.create_bucket(Bucket=bucket)
    limit = asyncio.Semaphore(32)

    async def put(index: int) -> None:
        async with limit:
            await raw.put_object(Bucket=bucket, Key=f"tree/{_key(index)}", Body=_body(index))

    await asyncio.gather(*(put(index) for index in range(OBJECTS)))


def _tally(sent: list[str]) -> str:
    """``3 GET`` style counts of the requests sent (a listing is a GET too)."""
    return ", ".join(f"{sent.count(method):,} {method}" for method in sorted(set(sent)))
