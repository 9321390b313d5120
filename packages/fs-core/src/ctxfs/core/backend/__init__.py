"""The backend contract: what a store must do for ``ctx.fs`` to work on it.

A backend moves bytes and enforces preconditions; it knows nothing of text,
owners, observations or policies, which live above it in fs-core so that every
backend behaves the same. Implement :class:`Backend` and prove it with
:class:`ctxfs.core.testing.BackendConformance`; :mod:`ctxfs.core.kit` holds what
a backend author needs in one import.
"""

from ctxfs.core.backend.authorized import authorized_location, relocated
from ctxfs.core.backend.capabilities import Capabilities, CasScope
from ctxfs.core.backend.files import (
    LISTING_WORK_INLINE_ENTRIES,
    NO_PERMISSIONS,
    Blob,
    FileKind,
    Listing,
    ListingPage,
    Location,
    Permissions,
    Stat,
    listing_work,
)
from ctxfs.core.backend.reads import DEFAULT_CHUNK_SIZE, ReadRequest, ReadStream
from ctxfs.core.backend.searches import (
    IGNORE_FILES,
    CutLine,
    FileLines,
    FileMatches,
    FileSearch,
    LineSearch,
)
from ctxfs.core.backend.template import Backend
from ctxfs.core.backend.update import ConditionalUpdate, Update, check_expect, link_refusal

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "IGNORE_FILES",
    "LISTING_WORK_INLINE_ENTRIES",
    "NO_PERMISSIONS",
    "Backend",
    "Blob",
    "Capabilities",
    "CasScope",
    "ConditionalUpdate",
    "CutLine",
    "FileKind",
    "FileLines",
    "FileMatches",
    "FileSearch",
    "LineSearch",
    "Listing",
    "ListingPage",
    "Location",
    "Permissions",
    "ReadRequest",
    "ReadStream",
    "Stat",
    "Update",
    "authorized_location",
    "check_expect",
    "link_refusal",
    "listing_work",
    "relocated",
]
