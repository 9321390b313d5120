"""ctxfs remote: object stores and SFTP as ctxfs backends, with each store's own compare-and-swap.

Open them by URL through ``ctxfs.core.open_fs`` (each scheme needs its extra)::

    open_fs("s3://bucket/prefix")          # ctxfs-remote[s3]: If-Match / If-None-Match
    open_fs("gs://bucket/prefix")          # ctxfs-remote[gcs]: ifGenerationMatch
    open_fs("az://container/prefix")       # ctxfs-remote[azure]: ETag match conditions
    open_fs("sftp://user@host/abs/root")   # ctxfs-remote[sftp]: cooperative lock files
    open_fs("fsspec+memory://bucket")      # any fsspec filesystem, CAS within the process

The object stores share one backend, :class:`ObjectStoreBackend`, over a small
driver per store (:class:`ObjectStore`); it probes at open that the store really
enforces conditions (``open_fs(..., require_global_cas=True)`` refuses one that
does not). Every store call is retried the same bounded way (:class:`Retries`).
"""

from typing import TYPE_CHECKING, Any

from ctxfs.remote.backend import ObjectStoreBackend, ProbeResult
from ctxfs.remote.keys import KeySpace
from ctxfs.remote.retry import Retries
from ctxfs.remote.store import Listing, ObjectInfo, ObjectStore

if TYPE_CHECKING:
    from ctxfs.remote.sftp.backend import SftpBackend

__all__ = [
    "KeySpace",
    "Listing",
    "ObjectInfo",
    "ObjectStore",
    "ObjectStoreBackend",
    "ProbeResult",
    "Retries",
    "SftpBackend",
]


def __getattr__(name: str) -> Any:
    if name == "SftpBackend":  # needs asyncssh (ctxfs-remote[sftp]): imported when asked for
        from ctxfs.remote import sftp  # noqa: PLC0415

        return sftp.SftpBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
