"""Azure Blob Storage through adlfs's configuration and the SDK's async blob clients.

Versions are ``etag:<ETag>``, from the same response as the body; reads, writes
and deletes are pinned with ``MatchConditions.IfNotModified`` (the SDK pins the
later chunks of a large download to the first one's ETag), creates with
``overwrite=False``.
"""

from __future__ import annotations

import io
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

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
    Unavailable,
    Version,
)
from ctxfs.core.kit import require
from ctxfs.remote.backend import ObjectStoreBackend, pop_backend_options
from ctxfs.remote.errors import from_status, translate, translated
from ctxfs.remote.keys import KeySpace, split_url
from ctxfs.remote.retry import DEFAULT_DEADLINE
from ctxfs.remote.store import Listing, ObjectInfo, ObjectStore, object_size

__all__ = ["AzureStore", "open_azure"]

MAX_BLOB_SIZE: Final = 5 << 30
"""The largest body ctxfs sends in one conditional upload (5 GiB)."""
WRITE_ID: Final = "ctxfswrite"
"""The metadata name holding each write's id (Azure names are C# identifiers)."""


class AzureStore(ObjectStore):
    """One Azure blob container through an ``adlfs.AzureBlobFileSystem``'s service client."""

    max_cas_size = MAX_BLOB_SIZE

    def __init__(self, fs: Any, container: str, *, connect_timeout: float | None = None) -> None:
        self.fs = fs
        self.container = container
        self.name = f"az://{container}"
        # the account's (containers are named within it), without a SAS token's query
        account = urlsplit(fs.service_client.url)
        self.service = urlunsplit((account.scheme, account.netloc, account.path, "", ""))
        self._once: dict[str, Any] = {"retry_total": 0}
        """Per-call SDK options: the backend retries, boundedly, and checks what a retry finds;
        a connection is awaited no longer than its deadline (:mod:`ctxfs.remote.retry`)."""
        if connect_timeout is not None:
            self._once["connection_timeout"] = connect_timeout

    def _blob(self, key: str) -> Any:
        return self.fs.service_client.get_blob_client(self.container, key)

    async def get(self, key: str, request: ReadRequest) -> tuple[bytes, ObjectInfo]:
        first, end = request.start or 0, request.end
        if end is not None and end <= first:
            return b"", await self._properties(key, request.version)
        call: dict[str, Any] = _condition(request.version)
        if not request.whole:
            call["offset"] = first
            call["length"] = None if end is None else end - first
        elif request.max_size is not None:  # (the first GET would fetch up to 32 MiB)
            call["offset"], call["length"] = 0, request.max_size + 1
        try:
            downloader = await self._blob(key).download_blob(**call, **self._once)
        except Exception as exc:
            if getattr(exc, "status_code", None) == 416:  # start at or past the end
                return b"", await self._properties(key, request.version)
            raise _error(exc) from exc
        properties = downloader.properties
        size = object_size(getattr(properties, "content_range", None), properties.size)
        request.check(None, size=size)
        with translated(_error):
            data: bytes = await downloader.readall()
        return data, _info(key, properties, size)

    async def _properties(self, key: str, version: Version | None) -> ObjectInfo:
        with translated(_error):
            properties = await self._blob(key).get_blob_properties(
                **_condition(version), **self._once
            )
        return _info(key, properties, int(properties.size))

    async def head(self, key: str) -> ObjectInfo:
        return await self._properties(key, None)

    async def put(
        self, key: str, data: bytes, *, expect: Expect, write_id: str | None = None
    ) -> Version:
        request: dict[str, Any] = {"overwrite": expect is not ABSENT}
        if write_id is not None:
            request["metadata"] = {WRITE_ID: write_id}
        if expect is not ABSENT and expect is not None:
            request |= _condition(expect)
        try:
            result = await self._blob(key).upload_blob(
                io.BytesIO(data), length=len(data), **request, **self._once
            )
        except Exception as exc:
            error = _error(exc)
            if isinstance(error, NotFound) and expect is not None:
                raise Stale("the object no longer exists") from exc
            raise error from exc
        return _version(result["etag"])

    async def remove(self, key: str, *, expect: Version | None = None) -> None:
        with translated(_error):
            await self._blob(key).delete_blob(**_condition(expect), **self._once)

    async def scan(self, prefix: str, *, limit: int | None = None, deep: bool = False) -> Listing:
        from azure.storage.blob.aio import BlobPrefix  # noqa: PLC0415 - the azure extra's

        container = self.fs.service_client.get_container_client(self.container)
        listing = Listing()
        options = {"name_starts_with": prefix or None, "results_per_page": limit, **self._once}
        items = (
            container.list_blobs(**options)
            if deep
            else container.walk_blobs(delimiter="/", **options)
        )
        with translated(_error):
            async for item in items:
                if isinstance(item, BlobPrefix):
                    listing.prefixes.append(item.name)
                else:
                    listing.objects.append(_info(item.name, item, int(item.size)))
                if limit is not None and len(listing.objects) + len(listing.prefixes) >= limit:
                    break
        return listing

    async def close(self) -> None:
        await self.fs.service_client.close()


def _condition(version: Version | None) -> dict[str, Any]:
    """The SDK keywords pinning a request to *version* (none for None)."""
    if version is None:
        return {}
    if not version.startswith("etag:"):
        raise Stale("the version is not an Azure ETag")
    from azure.core import MatchConditions  # noqa: PLC0415 - the azure extra

    return {"etag": version[len("etag:") :], "match_condition": MatchConditions.IfNotModified}


def _version(etag: str) -> Version:
    """``etag:"<ETag>"``, quoted the same way whichever call returned it."""
    return Version(f"etag:{etag}" if etag.startswith('"') else f'etag:"{etag}"')


def _info(key: str, properties: Any, size: int) -> ObjectInfo:
    modified = properties.last_modified
    return ObjectInfo(
        key=key,
        size=size,
        version=_version(properties.etag),
        mtime=modified.timestamp() if modified is not None else None,
        write_id=(getattr(properties, "metadata", None) or {}).get(WRITE_ID),
    )


def _error(exc: BaseException) -> FsError:  # noqa: PLR0911 - a return per kind of failure
    """The ctxfs error for an azure-core (or transport) failure."""
    from azure.core import exceptions as azure  # noqa: PLC0415 - the azure extra

    if isinstance(exc, azure.ResourceModifiedError):
        return Stale("the object is at another version")
    if isinstance(exc, azure.ResourceExistsError):
        return AlreadyExists("the object exists")
    if isinstance(exc, azure.ResourceNotFoundError):
        if getattr(exc, "error_code", None) == "ContainerNotFound":
            return BackendError("the container does not exist", hint="Create the container.")
        return NotFound("no such object")
    if isinstance(exc, azure.ClientAuthenticationError):
        return PermissionDenied(str(exc).splitlines()[0])
    if isinstance(exc, azure.ServiceRequestError | azure.ServiceResponseError):
        return Unavailable(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, azure.HttpResponseError) and exc.status_code:
        if exc.status_code == 412:
            return Stale("the object is at another version")
        return from_status(exc.status_code, str(exc).splitlines()[0])
    return translate(exc)


def open_azure(url: str, **options: Any) -> ObjectStoreBackend:
    """The backend for ``az://container[/prefix]`` (also ``abfs://``).

    ``abfs://container@account.dfs.core.windows.net/prefix`` names the account too. The
    backend's options (:data:`~ctxfs.remote.backend.BACKEND_OPTIONS`) configure it; the
    others go to ``adlfs.AzureBlobFileSystem`` (``account_name``, ``credential``, ...).
    """
    adlfs = require("adlfs", install="ctxfs-remote[azure]", needed_by="the azure backend")
    container, prefix = split_url(url)
    if "@" in container:
        container, _, host = container.partition("@")
        options.setdefault("account_name", host.partition(".")[0])
    settings = pop_backend_options(options)
    fs = adlfs.AzureBlobFileSystem(skip_instance_cache=True, **options)
    store = AzureStore(fs, container, connect_timeout=settings.get("deadline", DEFAULT_DEADLINE))
    return ObjectStoreBackend(store, KeySpace(container, prefix), **settings)
