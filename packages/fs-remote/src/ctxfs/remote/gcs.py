"""Google Cloud Storage on the JSON API, with gcsfs's configuration and credentials.

Versions are ``gen:<generation>``. A read is one media ``GET`` whose
``X-Goog-Generation`` is checked against a pinned version (which is also sent as
``ifGenerationMatch``), so even a server that ignores the condition cannot mix
generations. A write is a multipart upload with ``ifGenerationMatch`` (0:
create-only); emulators ignore conditions on media uploads. gcsfs supplies the
configuration (the endpoint or ``STORAGE_EMULATOR_HOST``, ``session_kwargs``,
``requests_timeout``) and the credentials; the store holds its own HTTP session
(a client certificate goes in ``session_kwargs``' connector). gcsfs's retries and
caches are not used.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from ctxfs.core import (
    ABSENT,
    AlreadyExists,
    BackendError,
    Expect,
    NotFound,
    ReadRequest,
    Stale,
    Version,
)
from ctxfs.core.kit import require
from ctxfs.remote.backend import ObjectStoreBackend, pop_backend_options
from ctxfs.remote.errors import from_status, translated
from ctxfs.remote.keys import KeySpace, split_url
from ctxfs.remote.retry import DEFAULT_DEADLINE
from ctxfs.remote.store import Listing, ObjectInfo, ObjectStore, byte_range, object_size

if TYPE_CHECKING:
    import aiohttp

__all__ = ["GcsStore", "open_gcs"]

MAX_UPLOAD_SIZE: Final = 5 << 30
"""The largest body ctxfs sends in one conditional multipart upload (5 GiB)."""
WRITE_ID: Final = "ctxfs-write"
"""The custom-metadata key holding each write's id."""
STALLED_SECONDS: Final = 60.0
"""Seconds a response may send nothing before the request fails ``unavailable`` (botocore's and
Azure's read timeout; gcsfs's ``requests_timeout`` bounds a whole request, and is unset by
default)."""
NO_BUCKET: Final = "The specified bucket does not exist"
"""How a JSON API 404 names a missing bucket (a missing object's says ``No such object``)."""


class GcsStore(ObjectStore):
    """One GCS bucket through a ``gcsfs.GCSFileSystem`` (its session and credentials)."""

    max_cas_size = MAX_UPLOAD_SIZE

    def __init__(self, fs: Any, bucket: str, *, connect_timeout: float | None = None) -> None:
        self.fs = fs
        self.bucket = bucket
        self.name = f"gs://{bucket}"
        self.service = fs.base
        self.connect_timeout = connect_timeout
        """Seconds to wait for a connection (the retry deadline: :mod:`ctxfs.remote.retry`)."""
        self._session: aiohttp.ClientSession | None = None

    def _bucket_url(self) -> str:
        return f"{self.fs.base}b/{quote(self.bucket, safe='')}"

    def _objects(self, key: str | None = None) -> str:
        url = f"{self._bucket_url()}/o"
        return url if key is None else f"{url}/{quote(key, safe='')}"

    @asynccontextmanager
    async def _request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        data: io.BytesIO | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        from aiohttp import ClientSession, ClientTimeout  # noqa: PLC0415 - the gcs extra's

        with translated():
            if self._session is None:
                self._session = ClientSession(**self.fs.session_kwargs)
            sent = dict(headers or {})
            self.fs.credentials.apply(sent)  # (a token, refreshed when it expires)
            async with self._session.request(
                method,
                url,
                params=dict(params or {}),
                headers=sent,
                data=data,
                timeout=ClientTimeout(
                    total=self.fs.requests_timeout,
                    sock_connect=self.connect_timeout,
                    sock_read=STALLED_SECONDS,
                ),
            ) as response:
                yield response

    async def _json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        async with self._request(method, url, **kwargs) as response:
            body = await response.read()
            _check(response.status, body)
        parsed = json.loads(body) if body.strip() else None
        return parsed if isinstance(parsed, dict) else {}

    async def get(self, key: str, request: ReadRequest) -> tuple[bytes, ObjectInfo]:
        first, end, version = request.start or 0, request.end, request.version
        if end is not None and end <= first:
            return b"", await self._pinned_head(key, version)
        params = {"alt": "media"}
        if version is not None:
            params["ifGenerationMatch"] = _generation(version)
        headers = byte_range(request)
        async with self._request("GET", self._objects(key), params=params, headers=headers) as r:
            if r.status == 416:  # start at or past the end
                return b"", await self._pinned_head(key, version)
            if r.status >= 400:
                _check(r.status, await r.read())
            info = _info_from_headers(key, r.headers)
            if version is not None and info.version != version:
                raise Stale("the object is at another generation")
            request.check(None, size=info.size)
            with translated():
                data = await r.read()
        return data, info

    async def _pinned_head(self, key: str, version: Version | None) -> ObjectInfo:
        info = await self.head(key)
        if version is not None and info.version != version:
            raise Stale("the object is at another generation")
        return info

    async def head(self, key: str) -> ObjectInfo:
        return _info(await self._json("GET", self._objects(key)))

    async def put(
        self, key: str, data: bytes, *, expect: Expect, write_id: str | None = None
    ) -> Version:
        params = {"uploadType": "multipart"}
        if expect is ABSENT:
            params["ifGenerationMatch"] = "0"
        elif expect is not None:
            params["ifGenerationMatch"] = _generation(expect)
        boundary = uuid.uuid4().hex
        resource: dict[str, Any] = {"name": key}
        if write_id is not None:
            resource["metadata"] = {WRITE_ID: write_id}
        metadata = json.dumps(resource).encode()
        body = b"".join(
            [
                f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode(),
                metadata,
                f"\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n".encode(),
                data,
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        endpoint = self.fs.base.removesuffix("/storage/v1/")
        url = f"{endpoint}/upload/storage/v1/b/{quote(self.bucket, safe='')}/o"
        headers = {"Content-Type": f'multipart/related; boundary="{boundary}"'}
        try:
            stored = await self._json(
                "POST", url, params=params, headers=headers, data=io.BytesIO(body)
            )
        except Stale:
            if expect is ABSENT:
                raise AlreadyExists("the object exists") from None
            raise
        except NotFound:  # (an upload names no object that could be missing)
            raise _no_bucket() from None
        return _info(stored).version

    async def remove(self, key: str, *, expect: Version | None = None) -> None:
        params = {}
        if expect is not None:
            # GCS enforces ifGenerationMatch on DELETE; emulators may not, so check first too.
            await self._pinned_head(key, expect)
            params["ifGenerationMatch"] = _generation(expect)
        await self._json("DELETE", self._objects(key), params=params)

    async def keeps_versions(self) -> bool:
        """Whether the bucket's ``versioning.enabled`` is set (it keeps noncurrent generations)."""
        try:
            bucket = await self._json("GET", self._bucket_url())
        except NotFound:  # (the bucket's own resource: an emulator says no more)
            raise _no_bucket() from None
        return bool((bucket.get("versioning") or {}).get("enabled"))

    async def get_version(self, key: str, version: Version) -> bytes | None:
        """The bytes of *key*'s generation *version*, current or kept; None where it is gone."""
        if not version.startswith("gen:"):
            return None
        params = {"alt": "media", "generation": _generation(version)}
        async with self._request("GET", self._objects(key), params=params) as response:
            if response.status == 404:
                return None
            body = await response.read()
            _check(response.status, body)
            served = response.headers.get("X-Goog-Generation")
        return body if served == _generation(version) else None

    async def scan(self, prefix: str, *, limit: int | None = None, deep: bool = False) -> Listing:
        params = {"prefix": prefix} if deep else {"prefix": prefix, "delimiter": "/"}
        if limit is not None:
            params["maxResults"] = str(limit)
        listing = Listing()
        while True:
            page = await self._json("GET", self._objects(), params=params)
            listing.objects.extend(_info(item) for item in page.get("items", []))
            listing.prefixes.extend(page.get("prefixes", []))
            token = page.get("nextPageToken")
            if limit is not None or not token:
                return listing
            params["pageToken"] = token

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _check(status: int, body: bytes) -> None:
    """Raise the ctxfs error for a failed response."""
    if status < 400:
        return
    message = body.decode("utf-8", "replace")[:500]
    if status == 404:
        if _error_message(body).startswith(NO_BUCKET):
            raise _no_bucket()
        raise NotFound("no such object")
    if status == 412:
        raise Stale("the object is at another generation")
    raise from_status(status, message)


def _error_message(body: bytes) -> str:
    """The message of a JSON API error *body* ("": none)."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return ""
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


def _no_bucket() -> BackendError:
    return BackendError("the bucket does not exist", hint="Create the bucket.")


def _generation(version: Version) -> str:
    if not version.startswith("gen:"):
        raise Stale("the version is not a GCS generation")
    return version[len("gen:") :]


def _info(resource: Mapping[str, Any]) -> ObjectInfo:
    updated = resource.get("updated")
    return ObjectInfo(
        key=str(resource["name"]),
        size=int(resource.get("size", 0)),
        version=Version(f"gen:{resource['generation']}"),
        mtime=datetime.fromisoformat(updated).timestamp() if updated else None,
        write_id=(resource.get("metadata") or {}).get(WRITE_ID),
    )


def _info_from_headers(key: str, headers: Mapping[str, str]) -> ObjectInfo:
    size = object_size(headers.get("Content-Range"), headers.get("Content-Length", 0))
    return ObjectInfo(key=key, size=size, version=Version(f"gen:{headers['X-Goog-Generation']}"))


def open_gcs(url: str, **options: Any) -> ObjectStoreBackend:
    """The backend for ``gs://bucket[/prefix]`` (also ``gcs://``).

    The backend's options (:data:`~ctxfs.remote.backend.BACKEND_OPTIONS`) configure it;
    the others go to ``gcsfs.GCSFileSystem`` (``project``, ``token``, ``endpoint_url``, ...).
    """
    gcsfs_core = require("gcsfs.core", install="ctxfs-remote[gcs]", needed_by="the gcs backend")
    bucket, prefix = split_url(url)
    settings = pop_backend_options(options)
    fs = gcsfs_core.GCSFileSystem(skip_instance_cache=True, **options)
    store = GcsStore(fs, bucket, connect_timeout=settings.get("deadline", DEFAULT_DEADLINE))
    return ObjectStoreBackend(store, KeySpace(bucket, prefix), **settings)
