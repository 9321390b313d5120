r"""ctxfs core: the ``ctx.fs`` contract for LLM agent harnesses.

Open a store, hand each agent a context, and call its ``fs``::

    from ctxfs.core import open_fs

    async with open_fs("memory://") as fs:
        ctx = fs.context(owner="agent-1")
        await ctx.fs.write("notes.md", "hello\n")
        outcome = await ctx.fs.edit("notes.md", "hello", "goodbye")

Every mutation of an existing file is guarded by the version its owner last
observed; policies plug in through pluggy hooks (:mod:`ctxfs.core.hookspecs`).
"""

from typing import TYPE_CHECKING

from ctxfs.core.backend import (
    DEFAULT_CHUNK_SIZE,
    Backend,
    Blob,
    Capabilities,
    CasScope,
    CutLine,
    FileKind,
    FileLines,
    FileMatches,
    FileSearch,
    LineSearch,
    Listing,
    ListingPage,
    Location,
    ReadRequest,
    ReadStream,
    Stat,
    Update,
)
from ctxfs.core.context import Context, ContextFs
from ctxfs.core.errors import (
    AlreadyExists,
    AmbiguousMatch,
    BackendError,
    BinaryFile,
    Busy,
    CheckedOut,
    Conflict,
    Denied,
    EditError,
    EmptyOldString,
    EncodingError,
    ErrorCode,
    FsError,
    InvalidArgument,
    InvalidPath,
    IsADirectory,
    NoChange,
    NoMatch,
    NotADirectory,
    NotARegularFile,
    NotEnabled,
    NotFound,
    NotObserved,
    OutsideRoot,
    PermissionDenied,
    Refused,
    Stale,
    TooLarge,
    Unavailable,
    error_class,
)
from ctxfs.core.filecontext import FileContextPlugin
from ctxfs.core.fs import Fs, FsOptions
from ctxfs.core.globs import GlobMatcher, glob_matcher, relative_to
from ctxfs.core.hookspecs import hookimpl, hookspec
from ctxfs.core.memory import MemoryBackend
from ctxfs.core.observations import (
    MemoryObservations,
    Observation,
    ObservationStore,
    open_observations,
    shown_url,
    sqlite_url,
)
from ctxfs.core.outcomes import (
    BytesOutcome,
    ChangedFile,
    EditOutcome,
    InsertOutcome,
    MoveOutcome,
    Operation,
    OpKind,
    PatchedFile,
    PatchOutcome,
    ReadOutcome,
    RestoredFile,
    UndoOutcome,
    WriteOutcome,
)
from ctxfs.core.paths import join_path, normalize_path
from ctxfs.core.registry import open_backend, open_fs
from ctxfs.core.sessions import Checkpoint
from ctxfs.core.shown import ShownWindow
from ctxfs.core.text import (
    FilePatch,
    Hunk,
    PatchAction,
    Replacement,
    TextOptions,
    format_line_number,
    has_lone_surrogates,
    number_lines,
)
from ctxfs.core.versions import ABSENT, Absent, Expect, Version, content_version

if TYPE_CHECKING:
    from ctxfs.core.observations import SqliteObservations

    __version__: str

__all__ = [
    "ABSENT",
    "DEFAULT_CHUNK_SIZE",
    "Absent",
    "AlreadyExists",
    "AmbiguousMatch",
    "Backend",
    "BackendError",
    "BinaryFile",
    "Blob",
    "Busy",
    "BytesOutcome",
    "Capabilities",
    "CasScope",
    "ChangedFile",
    "CheckedOut",
    "Checkpoint",
    "Conflict",
    "Context",
    "ContextFs",
    "CutLine",
    "Denied",
    "EditError",
    "EditOutcome",
    "EmptyOldString",
    "EncodingError",
    "ErrorCode",
    "Expect",
    "FileContextPlugin",
    "FileKind",
    "FileLines",
    "FileMatches",
    "FilePatch",
    "FileSearch",
    "Fs",
    "FsError",
    "FsOptions",
    "GlobMatcher",
    "Hunk",
    "InsertOutcome",
    "InvalidArgument",
    "InvalidPath",
    "IsADirectory",
    "LineSearch",
    "Listing",
    "ListingPage",
    "Location",
    "MemoryBackend",
    "MemoryObservations",
    "MoveOutcome",
    "NoChange",
    "NoMatch",
    "NotADirectory",
    "NotARegularFile",
    "NotEnabled",
    "NotFound",
    "NotObserved",
    "Observation",
    "ObservationStore",
    "OpKind",
    "Operation",
    "OutsideRoot",
    "PatchAction",
    "PatchOutcome",
    "PatchedFile",
    "PermissionDenied",
    "ReadOutcome",
    "ReadRequest",
    "ReadStream",
    "Refused",
    "Replacement",
    "RestoredFile",
    "ShownWindow",
    "SqliteObservations",
    "Stale",
    "Stat",
    "TextOptions",
    "TooLarge",
    "Unavailable",
    "UndoOutcome",
    "Update",
    "Version",
    "WriteOutcome",
    "content_version",
    "error_class",
    "format_line_number",
    "glob_matcher",
    "has_lone_surrogates",
    "hookimpl",
    "hookspec",
    "join_path",
    "normalize_path",
    "number_lines",
    "open_backend",
    "open_fs",
    "open_observations",
    "relative_to",
    "shown_url",
    "sqlite_url",
]


def __getattr__(name: str) -> object:
    if name == "__version__":  # (importlib.metadata loads with the first look)
        from importlib.metadata import version  # noqa: PLC0415

        return version("ctxfs-core")
    if name == "SqliteObservations":  # sqlite3 loads with the first SQLite store
        from ctxfs.core.observations import SqliteObservations  # noqa: PLC0415

        return SqliteObservations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
