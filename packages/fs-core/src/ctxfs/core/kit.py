"""The backend author's kit: everything a third-party backend needs, in one import.

::

    from ctxfs.core.kit import Backend, Blob, Capabilities, CasScope, ReadRequest, Stat

    class MyBackend(Backend):
        capabilities = Capabilities(cas_scope=CasScope.PROCESS, range_reads=False,
                                    real_directories=True, symlinks=False, locks=False)

        async def _read(self, path: str, request: ReadRequest) -> Blob: ...
        # and _stat, _write, _delete, _list, _mkdir

:class:`Backend` is a template: its public methods check paths, ranges, sizes
and versions once, and call the primitives a backend implements. Errors come
from :mod:`ctxfs.core` (``NotFound``, ``Stale``, ...). Prove the backend with
:class:`ctxfs.core.testing.BackendConformance`; ``docs/backend-authors.md`` walks
through it.
"""

from ctxfs.core.backend import (
    DEFAULT_CHUNK_SIZE,
    IGNORE_FILES,
    LISTING_WORK_INLINE_ENTRIES,
    NO_PERMISSIONS,
    Backend,
    Blob,
    Capabilities,
    CasScope,
    ConditionalUpdate,
    FileKind,
    FileLines,
    FileMatches,
    FileSearch,
    LineSearch,
    Listing,
    Location,
    Permissions,
    ReadRequest,
    ReadStream,
    Stat,
    Update,
    authorized_location,
    check_expect,
    link_refusal,
    listing_work,
    relocated,
)
from ctxfs.core.extras import require
from ctxfs.core.locks import KeyedLocks, acquire_with_backoff
from ctxfs.core.paths import (
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    RESERVED_PREFIX,
    check_path,
    is_reserved,
    join_path,
)
from ctxfs.core.versions import ABSENT, Absent, ContentHasher, Expect, Version, content_version

__all__ = [
    "ABSENT",
    "DEFAULT_CHUNK_SIZE",
    "IGNORE_FILES",
    "LISTING_WORK_INLINE_ENTRIES",
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "NO_PERMISSIONS",
    "RESERVED_PREFIX",
    "Absent",
    "Backend",
    "Blob",
    "Capabilities",
    "CasScope",
    "ConditionalUpdate",
    "ContentHasher",
    "Expect",
    "FileKind",
    "FileLines",
    "FileMatches",
    "FileSearch",
    "KeyedLocks",
    "LineSearch",
    "Listing",
    "Location",
    "Permissions",
    "ReadRequest",
    "ReadStream",
    "Stat",
    "Update",
    "Version",
    "acquire_with_backoff",
    "authorized_location",
    "check_expect",
    "check_path",
    "content_version",
    "is_reserved",
    "join_path",
    "link_refusal",
    "listing_work",
    "relocated",
    "require",
]
