"""S3 (and S3-compatible stores) through s3fs's aiobotocore client.

Versions are ``etag:<ETag>``: body and ETag come from one ``GetObject``, and
writes and deletes carry ``If-Match: <etag>`` or ``If-None-Match: *``. In a
versioned bucket an earlier version is found by its ETag among the key's
versions and read by its ``VersionId``. s3fs supplies the configuration
(botocore's environment) and the session; its listing cache is never consulted.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Final

from ctxfs.core import (
    ABSENT,
    AlreadyExists,
    BackendError,
    Expect,
    FsError,
    NotFound,
    PermissionDenied,
    ReadRequest,
    Stale,
    TooLarge,
    Unavailable,
    Version,
)
from ctxfs.core.kit import require
from ctxfs.remote.backend import ObjectStoreBackend, pop_backend_options
from ctxfs.remote.errors import RETRYABLE_STATUS, from_status, translate, translated
from ctxfs.remote.keys import KeySpace, split_url
from ctxfs.remote.retry import DEFAULT_DEADLINE
from ctxfs.remote.store import Listing, ObjectInfo, ObjectStore, byte_range, object_size

__all__ = ["S3Store", "open_s3"]

MAX_PUT_SIZE: Final = 5 << 30
"""S3's largest single-request PutObject (5 GiB)."""
MAX_VERSION_PAGES: Final = 5
"""Pages of ``ListObjectVersions`` (1000 versions each) searched for an earlier version."""
WRITE_ID: Final = "ctxfs-write"
"""The user-metadata key holding each write's id."""


class S3Store(ObjectStore):
    """One S3 bucket through an ``s3fs.S3FileSystem`` (its configuration and session)."""

    max_cas_size = MAX_PUT_SIZE

    def __init__(self, fs: Any, bucket: str) -> None:
        self.fs = fs
        self.bucket = bucket
        self.name = f"s3://{bucket}"
        self.service = _endpoint(fs)
        self._clients: dict[int, Any] = {}  # the clients s3fs gave, to be closed
        self._closed = False  # (s3fs then holds a closed client: a new one is asked for)

    async def _client(self) -> Any:
        session = await self.fs.set_session(refresh=self._closed)
        self._closed = False
        client = await self.fs.get_s3(self.bucket)  # (another one with cache_regions)
        self._clients[id(session)], self._clients[id(client)] = session, client
        return client

    async def get(self, key: str, request: ReadRequest) -> tuple[bytes, ObjectInfo]:
        s3 = await self._client()
        call: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if request.version is not None:
            call["IfMatch"] = _etag(request.version)
        first, end = request.start or 0, request.end
        if end is not None and end <= first:
            return b"", await self._head(s3, call)
        try:
            response = await s3.get_object(**call, **byte_range(request))
        except Exception as exc:
            if _code(exc) == "InvalidRange":  # start at or past the end
                return b"", await self._head(s3, call)
            raise _error(exc) from exc
        body = response["Body"]
        size = object_size(response.get("ContentRange"), response["ContentLength"])
        try:
            request.check(None, size=size)
            with translated(_error):
                data: bytes = await body.read()
        finally:
            body.close()
        return data, _info(key, response, size)

    async def _head(self, s3: Any, call: dict[str, Any]) -> ObjectInfo:
        with translated(_error):
            response = await s3.head_object(**call)
        return _info(call["Key"], response, int(response["ContentLength"]))

    async def head(self, key: str) -> ObjectInfo:
        return await self._head(await self._client(), {"Bucket": self.bucket, "Key": key})

    async def put(
        self, key: str, data: bytes, *, expect: Expect, write_id: str | None = None
    ) -> Version:
        s3 = await self._client()
        request: dict[str, Any] = {"Bucket": self.bucket, "Key": key, "Body": data}
        if write_id is not None:
            request["Metadata"] = {WRITE_ID: write_id}
        if expect is ABSENT:
            request["IfNoneMatch"] = "*"
        elif expect is not None:
            request["IfMatch"] = _etag(expect)
        try:
            response = await s3.put_object(**request)
        except Exception as exc:
            error = _error(exc)
            if isinstance(error, Stale | NotFound) and expect is ABSENT:
                raise AlreadyExists("the object exists") from exc
            if isinstance(error, NotFound) and expect is not None:
                raise Stale("the object no longer exists") from exc
            raise error from exc
        return Version(f"etag:{response['ETag']}")

    async def remove(self, key: str, *, expect: Version | None = None) -> None:
        s3 = await self._client()
        request: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if expect is None:
            await self._head(s3, request)  # S3 answers 204 for a missing key
        else:
            request["IfMatch"] = _etag(expect)
        with translated(_error):
            await s3.delete_object(**request)

    async def keeps_versions(self) -> bool:
        """Whether ``GetBucketVersioning`` says ``Enabled`` (``Suspended`` overwrites: no)."""
        s3 = await self._client()
        with translated(_error):
            response = await s3.get_bucket_versioning(Bucket=self.bucket)
        return bool(response.get("Status") == "Enabled")

    async def get_version(self, key: str, version: Version) -> bytes | None:
        """The newest kept version of *key* whose ETag is *version*'s, read by its ``VersionId``."""
        if not version.startswith("etag:"):
            return None
        etag, s3 = _etag(version), await self._client()
        request: dict[str, Any] = {"Bucket": self.bucket, "Prefix": key}
        with translated(_error):
            for _ in range(MAX_VERSION_PAGES):
                page = await s3.list_object_versions(**request)
                for item in page.get("Versions", []):  # by key, then newest first
                    if item["Key"] > key:
                        return None
                    if item["Key"] == key and item["ETag"] == etag:
                        return await self._get_version(s3, key, item["VersionId"], etag)
                if not page.get("IsTruncated"):
                    return None
                request["KeyMarker"] = page["NextKeyMarker"]
                request["VersionIdMarker"] = page["NextVersionIdMarker"]
        return None

    async def _get_version(self, s3: Any, key: str, version_id: str, etag: str) -> bytes | None:
        try:
            response = await s3.get_object(Bucket=self.bucket, Key=key, VersionId=version_id)
        except Exception as exc:
            if isinstance(_error(exc), NotFound):  # deleted since it was listed
                return None
            raise
        body = response["Body"]
        try:
            data: bytes = await body.read()
        finally:
            body.close()
        return data if response["ETag"] == etag else None

    async def scan(self, prefix: str, *, limit: int | None = None, deep: bool = False) -> Listing:
        s3 = await self._client()
        request: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if not deep:
            request["Delimiter"] = "/"
        if limit is not None:
            request["MaxKeys"] = limit
        listing = Listing()
        with translated(_error):
            while True:
                page = await s3.list_objects_v2(**request)
                listing.objects.extend(
                    ObjectInfo(
                        key=item["Key"],
                        size=int(item["Size"]),
                        version=Version(f"etag:{item['ETag']}"),
                        mtime=item["LastModified"].timestamp(),
                    )
                    for item in page.get("Contents", [])
                )
                listing.prefixes.extend(p["Prefix"] for p in page.get("CommonPrefixes", []))
                if limit is not None or not page.get("IsTruncated"):
                    return listing
                request["ContinuationToken"] = page["NextContinuationToken"]

    async def close(self) -> None:
        clients, self._clients = self._clients, {}
        self._closed = self._closed or bool(clients)
        for client in clients.values():
            await client.close()


def _etag(version: Version) -> str:
    if not version.startswith("etag:"):
        raise Stale("the version is not an S3 ETag")
    return version[len("etag:") :]


def _info(key: str, response: dict[str, Any], size: int) -> ObjectInfo:
    modified = response.get("LastModified")
    return ObjectInfo(
        key=key,
        size=size,
        version=Version(f"etag:{response['ETag']}"),
        mtime=modified.timestamp() if modified is not None else None,
        write_id=response.get("Metadata", {}).get(WRITE_ID),
    )


def _code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code is not None else None


def _error(exc: BaseException) -> FsError:  # noqa: PLR0911 - a return per kind of failure
    """The ctxfs error for a botocore (or transport) failure."""
    import botocore.exceptions as boto  # noqa: PLC0415 - the s3 extra

    if isinstance(exc, boto.ClientError):
        code = _code(exc) or ""
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        message = exc.response.get("Error", {}).get("Message") or code
        if code == "NoSuchBucket":
            return BackendError(
                f"bucket does not exist ({message})", hint="Create the bucket or fix the URL."
            )
        if code == "PreconditionFailed" or status == 412:
            return Stale("the object is at another version")
        if code in ("NoSuchKey", "NotFound", "404") or status == 404:
            return NotFound("no such object")
        if code in ("SlowDown", "RequestTimeout", "ConditionalRequestConflict"):
            return Unavailable(f"{code}: {message}")
        if code == "EntityTooLarge":
            return TooLarge(message)
        if status in RETRYABLE_STATUS or status in (401, 403):
            return from_status(status, f"{code}: {message}")
        return BackendError(f"{code or status}: {message}")
    if isinstance(exc, boto.NoCredentialsError | boto.PartialCredentialsError):
        return PermissionDenied(
            str(exc), hint="Configure S3 credentials (AWS_ACCESS_KEY_ID and the like)."
        )
    if isinstance(exc, boto.ConnectionError | boto.HTTPClientError):
        return Unavailable(f"{type(exc).__name__}: {exc}")
    return translate(exc)


def _endpoint(fs: Any) -> str:
    """The endpoint *fs* calls, where named; empty: AWS's own (whose buckets' names are global).

    Named by the option, the client's options or botocore's environment.
    """
    named = fs.endpoint_url or (fs.client_kwargs or {}).get("endpoint_url")
    for variable in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        named = named or os.environ.get(variable)
    return str(named or "")


def open_s3(url: str, **options: Any) -> ObjectStoreBackend:
    """The backend for ``s3://bucket[/prefix]``.

    The backend's options (:data:`~ctxfs.remote.backend.BACKEND_OPTIONS`) configure it;
    the others go to ``s3fs.S3FileSystem`` (``endpoint_url``, ``key``, ``secret``, ...),
    else botocore's environment applies. botocore's own retries are off, and its
    connect timeout is the deadline, unless ``config_kwargs`` says otherwise.
    """
    s3fs = require("s3fs", install="ctxfs-remote[s3]", needed_by="the s3 backend")
    bucket, prefix = split_url(url)
    settings = pop_backend_options(options)
    config = dict(options.pop("config_kwargs", None) or {})
    config.setdefault("retries", {"total_max_attempts": 1})  # one loop retries: ours
    config.setdefault("connect_timeout", settings.get("deadline", DEFAULT_DEADLINE))
    options.update(skip_instance_cache=True, use_listings_cache=False, config_kwargs=config)
    if options.get("session") is None:  # (s3fs keeps the options it does not name for one)
        options["session"] = _session(s3fs.S3FileSystem(**options).kwargs)
    fs = s3fs.S3FileSystem(**options)
    return ObjectStoreBackend(S3Store(fs, bucket), KeySpace(bucket, prefix), **settings)


_SESSIONS: dict[tuple[object, ...], Any] = {}
_SESSIONS_KEPT: Final = 8
_SESSIONS_LOCK: Final = threading.Lock()


def _session(options: dict[str, Any]) -> Any:
    """The process's aiobotocore session for these session options and ``AWS_*`` environment.

    A session keeps the service models botocore loaded for its first client and the
    credentials it resolved (as boto3's default session does): a backend opened after the
    first makes its client in a twentieth of the time. The newest few are kept.
    """
    from aiobotocore.session import AioSession  # noqa: PLC0415 - the s3 extra

    environment = sorted(item for item in os.environ.items() if item[0].startswith("AWS_"))
    key = (os.getpid(), repr(sorted(options.items())), *environment)
    with _SESSIONS_LOCK:
        session = _SESSIONS.pop(key, None) or AioSession(**options)
        _SESSIONS[key] = session  # (the newest last)
        while len(_SESSIONS) > _SESSIONS_KEPT:
            del _SESSIONS[next(iter(_SESSIONS))]
        return session
