"""The driver contract: one object store's API, as the few calls a backend needs.

A driver speaks to one store (S3, GCS, Azure, an fsspec filesystem) through its
asyncio client and translates the store's answers into ctxfs errors. Its
coroutines run on the IO loop (:mod:`ctxfs.remote.ioloop`). Everything else
(paths, directories as prefixes, the probe, retries, streaming) lives once in
:class:`~ctxfs.remote.backend.ObjectStoreBackend`.

Drivers raise errors without a path: the backend names the path in the message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from ctxfs.core import CasScope, Expect, ReadRequest, Version

__all__ = ["Listing", "ObjectInfo", "ObjectStore", "byte_range", "object_size"]


def object_size(content_range: str | None, length: int | str) -> int:
    """The size of a whole object from a response that may carry only a range of it.

    *content_range* is the ``Content-Range`` of a ranged response (``bytes 0-4/10``),
    None or empty for a whole one, whose *length* is then the object's size.
    """
    return int(content_range.rpartition("/")[2] if content_range else length)


def byte_range(request: ReadRequest) -> dict[str, str]:
    """The HTTP ``Range`` header of a ranged *request*; none for a whole read."""
    if request.whole:
        return {}
    last = "" if request.end is None else request.end - 1
    return {"Range": f"bytes={request.start or 0}-{last}"}


@dataclass(frozen=True, kw_only=True)
class ObjectInfo:
    """One object: its key, size and version (the store's own token)."""

    key: str
    size: int
    version: Version
    mtime: float | None = None
    write_id: str | None = None
    """The ``write_id`` the object was stored with, where the store keeps metadata."""


@dataclass(frozen=True, kw_only=True)
class Listing:
    """One level under a key prefix: the objects directly there and the deeper prefixes.

    A deep listing holds every object under the prefix, and no prefixes.
    """

    objects: list[ObjectInfo] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)
    """Full key prefixes, each ending in ``/``."""


class ObjectStore(ABC):
    """One store's calls, run on the IO loop. Raise ctxfs errors only.

    Attributes:
        name: The URL of the store, for messages (``s3://bucket``).
        service: Where the store is served, where stores of one name may differ (an endpoint,
            an account's URL; empty: the one service of that name). With the name and the
            prefix, it names the backend's root (:attr:`~ctxfs.core.Backend.root_identity`).
        scope: How far the store enforces conditions when it honours them
            (``GLOBAL`` for a real store; the probe checks it).
        max_cas_size: The largest body one conditional write can carry.

    """

    name: str
    service: str = ""
    scope: CasScope = CasScope.GLOBAL
    max_cas_size: int | None = None

    @abstractmethod
    async def get(self, key: str, request: ReadRequest) -> tuple[bytes, ObjectInfo]:
        """The bytes of an object *request* asks for (all of it, or a range) and its info.

        One read. Bounds are non-negative; a range past the end is clipped, an
        empty or out-of-range one returns no bytes. With ``request.version``, the
        read is pinned: an object at another version is ``Stale``, never mixed
        bytes. With ``request.max_size``, a larger object is ``TooLarge`` before
        its body is fetched (:meth:`ReadRequest.check`).

        Raises:
            NotFound: No object at *key*.
            Stale: The object is not at ``request.version``.
            TooLarge: The object is larger than ``request.max_size``.
            PermissionDenied: The credentials may not do this.
            Unavailable: The store cannot be reached (retryable).
            BackendError: Any other failure of the store.

        """

    @abstractmethod
    async def head(self, key: str) -> ObjectInfo:
        """The info of an object, fresh from the store (never from a listing cache).

        Raises:
            NotFound: No object at *key*.
            PermissionDenied: The credentials may not do this.
            Unavailable: The store cannot be reached (retryable).
            BackendError: Any other failure of the store.

        """

    @abstractmethod
    async def put(
        self, key: str, data: bytes, *, expect: Expect, write_id: str | None = None
    ) -> Version:
        """Store *data* at *key* in one request, under the store's own condition.

        *expect*: a version (the object must be at it), ``ABSENT`` (it must not
        exist) or None. *write_id*, unique per write, is kept with the object
        where the store has metadata (``head`` reports it), so that a write
        whose answer was lost can be told from another writer's. Returns the
        new version.

        Raises:
            Stale: The object is at another version, or missing.
            AlreadyExists: *expect* is ABSENT and the object exists.
            TooLarge: *data* is larger than the store takes in one request.
            PermissionDenied: The credentials may not do this.
            Unavailable: The store cannot be reached (retryable).
            BackendError: Any other failure of the store.

        """

    @abstractmethod
    async def remove(self, key: str, *, expect: Version | None = None) -> None:
        """Delete an object; with *expect*, only at that version.

        Raises:
            NotFound: No object at *key*.
            Stale: The object is not at *expect*.
            PermissionDenied: The credentials may not do this.
            Unavailable: The store cannot be reached (retryable).
            BackendError: Any other failure of the store.

        """

    @abstractmethod
    async def scan(self, prefix: str, *, limit: int | None = None, deep: bool = False) -> Listing:
        """The objects and sub-prefixes directly under *prefix* (``""`` or ending in ``/``).

        With *limit*, at most about that many entries (enough to tell empty from not).
        With *deep*, every object under *prefix* at any depth, and no prefixes: one
        flat listing (no delimiter), a request per page of results, not per level.

        Raises:
            PermissionDenied: The credentials may not do this.
            Unavailable: The store cannot be reached (retryable).
            BackendError: Any other failure of the store.

        """

    async def keeps_versions(self) -> bool:
        """Whether the store keeps every version of an object (bucket versioning is on).

        The default: False (the store keeps only the current one).

        Raises:
            PermissionDenied: The credentials may not ask.
            Unavailable: The store cannot be reached (retryable).
            BackendError: Any other failure of the store.

        """
        return False

    async def get_version(self, key: str, version: Version) -> bytes | None:
        """The whole content object *key* had at *version*, from the store's kept versions.

        None where no kept version of *key* is at *version* (never kept, or deleted
        since); the bytes returned are checked to be that version's. The default:
        None (a store that keeps no versions).

        Raises:
            PermissionDenied: The credentials may not do this.
            Unavailable: The store cannot be reached (retryable).
            BackendError: Any other failure of the store.

        """
        del key, version
        return None

    async def close(self) -> None:  # noqa: B027 - most drivers hold nothing
        """Release the client's connections."""
