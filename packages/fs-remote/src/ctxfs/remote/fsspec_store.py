"""Any fsspec filesystem as a store, with compare-and-swap in this process.

For filesystems with no conditional writes, above all ``memory://``. Versions are
``xxh3:`` hashes of the content. Each call reads, compares and writes on the IO
loop's thread with no await between, so writers through ctxfs in this process
cannot interleave (``cas_scope`` ``PROCESS``). Meant for in-memory filesystems:
network I/O here would hold up every other store's calls, and filesystems with
symbolic links (the local disk, SFTP) are refused, since a link would lead out of
the root.
"""

from __future__ import annotations

from typing import Any, Final

import fsspec
from fsspec.implementations.local import LocalFileSystem

from ctxfs.core import (
    ABSENT,
    AlreadyExists,
    CasScope,
    Expect,
    InvalidArgument,
    NotFound,
    ReadRequest,
    Stale,
    Version,
    content_version,
)
from ctxfs.remote.backend import ObjectStoreBackend, pop_backend_options
from ctxfs.remote.errors import translated
from ctxfs.remote.keys import KeySpace, split_url
from ctxfs.remote.store import Listing, ObjectInfo, ObjectStore

__all__ = ["FsspecStore", "open_fsspec"]


class FsspecStore(ObjectStore):
    """Objects as files of an fsspec filesystem under *root* (a bucket or directory)."""

    scope = CasScope.PROCESS

    def __init__(self, fs: Any, root: str) -> None:
        self.fs = fs
        self.root = root.strip("/")
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        self.name = f"{protocol}://{self.root}"

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    def _current(self, key: str) -> bytes | None:
        path = self._path(key)
        with translated():
            if not self.fs.isfile(path):
                return None
            data: bytes = self.fs.cat_file(path)
        return data

    async def get(self, key: str, request: ReadRequest) -> tuple[bytes, ObjectInfo]:
        data = self._current(key)
        if data is None:
            raise NotFound("no such object")
        info = ObjectInfo(key=key, size=len(data), version=content_version(data))
        if request.version is not None and info.version != request.version:
            raise Stale("the object is at another version")
        request.check(None, size=info.size)
        return request.cut(data), info

    async def head(self, key: str) -> ObjectInfo:
        return (await self.get(key, ReadRequest()))[1]

    async def put(
        self, key: str, data: bytes, *, expect: Expect, write_id: str | None = None
    ) -> Version:
        del write_id  # no metadata; and no retries, so nothing to tell apart
        current = self._current(key)
        if expect is ABSENT and current is not None:
            raise AlreadyExists("the object exists")
        if isinstance(expect, str) and (current is None or content_version(current) != expect):
            raise Stale("the object is at another version")
        with translated():
            self.fs.pipe_file(self._path(key), data)
        return content_version(data)

    async def remove(self, key: str, *, expect: Version | None = None) -> None:
        await self.get(key, ReadRequest(version=expect))
        with translated():
            self.fs.rm_file(self._path(key))

    async def scan(self, prefix: str, *, limit: int | None = None, deep: bool = False) -> Listing:
        directory = self._path(prefix.rstrip("/"))
        listing = Listing()
        with translated():
            if not self.fs.isdir(directory):
                return listing
            entries = (
                list(self.fs.find(directory, detail=True).values())
                if deep
                else self.fs.ls(directory, detail=True)
            )
        base = f"{self.root}/" if self.root else ""
        for entry in entries:
            key = str(entry["name"]).strip("/")[len(base) :]
            if entry["type"] == "directory":
                listing.prefixes.append(f"{key}/")
            else:
                version = content_version(self._current(key) or b"")
                listing.objects.append(
                    ObjectInfo(key=key, size=int(entry["size"]), version=version)
                )
        return listing


_FOLLOWS_LINKS: Final = frozenset({"file", "local", "sftp", "ssh", "smb", "ftp"})
"""Protocols of filesystems whose server follows symbolic links: no key could keep to a root."""


def open_fsspec(url: str, **options: Any) -> ObjectStoreBackend:
    """The backend for ``fsspec+<protocol>://bucket[/prefix]``, e.g. ``fsspec+memory://b``.

    The backend's options (:data:`~ctxfs.remote.backend.BACKEND_OPTIONS`) configure it;
    the others go to the filesystem.

    Raises:
        InvalidArgument: The protocol is a filesystem with symbolic links (the local
            disk, SFTP, SMB, FTP), which a link would let a path leave the root of.

    """
    scheme, _, rest = url.partition("://")
    protocol = scheme.removeprefix("fsspec+")
    if protocol in _FOLLOWS_LINKS or issubclass(
        fsspec.get_filesystem_class(protocol), LocalFileSystem
    ):
        raise InvalidArgument(
            f"{scheme}:// cannot keep to its root: that filesystem follows symbolic links",
            hint="Open the local disk as a plain path (ctxfs.local), and a server as sftp://.",
            details={"field": "url"},
        )
    bucket, prefix = split_url(f"{protocol}://{rest}")
    settings = pop_backend_options(options)
    fs = fsspec.filesystem(protocol, **options)
    store = FsspecStore(fs, bucket)
    return ObjectStoreBackend(store, KeySpace(bucket, prefix), **settings)
