"""Errors raised through ``ctx.fs``, each with a stable code.

Every failure is an :class:`FsError` carrying an :class:`ErrorCode`, the path it
concerns, whether retrying may succeed, a hint a model can act on, and structured
details. Each class also inherits the builtin a Python caller would expect
(``except FileNotFoundError`` works)::

    FsError
    ├── NotFound ............... FileNotFoundError    not_found
    ├── AlreadyExists .......... FileExistsError      already_exists
    ├── IsADirectory ........... IsADirectoryError    is_directory
    ├── NotADirectory .......... NotADirectoryError   not_a_directory
    ├── NotARegularFile ........ OSError              not_a_regular_file
    ├── PermissionDenied ....... PermissionError      permission_denied
    ├── OutsideRoot ............ PermissionError      outside_root
    ├── InvalidPath ............ ValueError           invalid_path
    ├── Refused ................ PermissionError      (a policy said no)
    │   ├── Denied                                    denied
    │   └── NotEnabled                                not_enabled
    ├── Conflict ............... RuntimeError         (the file is not as you last saw it)
    │   ├── NotObserved                               not_observed
    │   └── Stale                                     stale
    ├── Busy ................... TimeoutError         busy (retryable)
    ├── CheckedOut ............. PermissionError      checked_out
    ├── EditError .............. ValueError           (the edit does not apply)
    │   ├── NoMatch                                   no_match
    │   ├── AmbiguousMatch                            ambiguous_match
    │   ├── EmptyOldString                            empty_old_string
    │   └── NoChange                                  no_change
    ├── BinaryFile ............. ValueError           binary_file
    ├── EncodingError .......... UnicodeError         encoding_error
    ├── TooLarge ............... OSError              too_large
    ├── InvalidArgument ........ ValueError           invalid_argument
    ├── Unavailable ............ ConnectionError      unavailable (retryable)
    └── BackendError ........... OSError              backend_error

Backends translate their library's exceptions into this tree at their boundary;
nothing else reaches a caller of ``ctx.fs``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Self

__all__ = [
    "AlreadyExists",
    "AmbiguousMatch",
    "BackendError",
    "BinaryFile",
    "Busy",
    "CheckedOut",
    "Conflict",
    "Denied",
    "EditError",
    "EmptyOldString",
    "EncodingError",
    "ErrorCode",
    "FsError",
    "InvalidArgument",
    "InvalidPath",
    "IsADirectory",
    "NoChange",
    "NoMatch",
    "NotADirectory",
    "NotARegularFile",
    "NotEnabled",
    "NotFound",
    "NotObserved",
    "OutsideRoot",
    "PermissionDenied",
    "Refused",
    "Stale",
    "TooLarge",
    "Unavailable",
    "error_class",
]


class ErrorCode(enum.StrEnum):
    """The stable codes. Harnesses, plugins and models may rely on these strings."""

    NOT_FOUND = "not_found"
    ALREADY_EXISTS = "already_exists"
    IS_DIRECTORY = "is_directory"
    NOT_A_DIRECTORY = "not_a_directory"
    NOT_A_REGULAR_FILE = "not_a_regular_file"
    OUTSIDE_ROOT = "outside_root"
    INVALID_PATH = "invalid_path"
    PERMISSION_DENIED = "permission_denied"
    DENIED = "denied"
    NOT_ENABLED = "not_enabled"
    NOT_OBSERVED = "not_observed"
    STALE = "stale"
    BUSY = "busy"
    CHECKED_OUT = "checked_out"
    NO_MATCH = "no_match"
    AMBIGUOUS_MATCH = "ambiguous_match"
    EMPTY_OLD_STRING = "empty_old_string"
    NO_CHANGE = "no_change"
    BINARY_FILE = "binary_file"
    ENCODING_ERROR = "encoding_error"
    TOO_LARGE = "too_large"
    INVALID_ARGUMENT = "invalid_argument"
    UNAVAILABLE = "unavailable"
    BACKEND_ERROR = "backend_error"


class FsError(Exception):
    """Base of every ctxfs failure.

    Attributes:
        code: The stable :class:`ErrorCode`.
        message: What went wrong, in one sentence.
        path: The root-relative path concerned, when there is one.
        retryable: Whether the same call may succeed later unchanged.
        hint: The next action, phrased for a model ("read the file again").
        details: Structured facts for programs (versions, counts, line numbers).

    """

    code: ClassVar[ErrorCode] = ErrorCode.BACKEND_ERROR
    default_hint: ClassVar[str] = ""
    retryable_by_default: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        hint: str | None = None,
        retryable: bool | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.hint = self.default_hint if hint is None else hint
        self.retryable = self.retryable_by_default if retryable is None else retryable
        self.details: Mapping[str, Any] = MappingProxyType(dict(details or {}))

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, code={self.code.value!r}, path={self.path!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        options = {"path": self.path, "hint": self.hint, "retryable": self.retryable}
        return (_rebuild, (type(self), self.message, options, dict(self.details)))

    def retold(self, message: str, **details: Any) -> Self:
        """The same failure (class, path, hint), told as *message*, with *details* added."""
        return type(self)(
            message,
            path=self.path,
            hint=self.hint,
            retryable=self.retryable,
            details={**self.details, **details},
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the error as plain data (for tool results, logs and the wire)."""
        return {
            "code": self.code.value,
            "message": self.message,
            "path": self.path,
            "retryable": self.retryable,
            "hint": self.hint,
            "details": dict(self.details),
        }


class NotFound(FsError, FileNotFoundError):
    code = ErrorCode.NOT_FOUND
    default_hint = "Check the path; list the parent directory to see what exists."


class AlreadyExists(FsError, FileExistsError):
    code = ErrorCode.ALREADY_EXISTS
    default_hint = "The path exists already; read it before replacing it."


class IsADirectory(FsError, IsADirectoryError):
    code = ErrorCode.IS_DIRECTORY
    default_hint = "The path is a directory; list it, or name a file inside it."


class NotADirectory(FsError, NotADirectoryError):
    code = ErrorCode.NOT_A_DIRECTORY
    default_hint = "A component of the path is a file, not a directory."


class NotARegularFile(FsError, OSError):
    code = ErrorCode.NOT_A_REGULAR_FILE
    default_hint = "Only regular files can be read or written (not FIFOs, sockets or devices)."


class PermissionDenied(FsError, PermissionError):
    code = ErrorCode.PERMISSION_DENIED
    default_hint = "The operating system or the store refused access to this path."


class OutsideRoot(FsError, PermissionError):
    code = ErrorCode.OUTSIDE_ROOT
    default_hint = "Use a path relative to the workspace root that stays inside it."


class InvalidPath(FsError, ValueError):
    code = ErrorCode.INVALID_PATH
    default_hint = "Use a relative path with '/' separators, e.g. 'src/app.py'."


class Refused(FsError, PermissionError):
    """A policy refused the operation."""


class Denied(Refused):
    code = ErrorCode.DENIED
    default_hint = "A policy forbids this operation on this path; do not retry it."


class NotEnabled(Refused):
    code = ErrorCode.NOT_ENABLED
    default_hint = "The capability governing this path is switched off for this workspace."


class Conflict(FsError, RuntimeError):
    """The file is not in the state the caller last observed."""


class NotObserved(Conflict):
    code = ErrorCode.NOT_OBSERVED
    default_hint = "Read the file first, then retry the change."


class Stale(Conflict):
    code = ErrorCode.STALE
    default_hint = "The file changed since you read it; read it again, then redo the change."


class Busy(FsError, TimeoutError):
    code = ErrorCode.BUSY
    default_hint = "Another agent is changing this file; retry shortly."
    retryable_by_default = True


class CheckedOut(FsError, PermissionError):
    code = ErrorCode.CHECKED_OUT
    default_hint = (
        "A person has checked this file out; plan other work and come back after they check it in."
    )


class EditError(FsError, ValueError):
    """The requested edit cannot be applied to the file's text."""


class NoMatch(EditError):
    code = ErrorCode.NO_MATCH
    default_hint = "Copy old_string exactly from the latest read, including whitespace."


class AmbiguousMatch(EditError):
    code = ErrorCode.AMBIGUOUS_MATCH
    default_hint = "Add surrounding lines to old_string to make it unique, or set replace_all."


class EmptyOldString(EditError):
    code = ErrorCode.EMPTY_OLD_STRING
    default_hint = "Give the exact text to replace; to create or replace a whole file, use write."


class NoChange(EditError):
    code = ErrorCode.NO_CHANGE
    default_hint = "old_string and new_string are identical; nothing to do."


class BinaryFile(FsError, ValueError):
    code = ErrorCode.BINARY_FILE
    default_hint = "This is a binary file; text tools cannot read or edit it."


class EncodingError(FsError, UnicodeError):
    code = ErrorCode.ENCODING_ERROR
    default_hint = (
        "The file's text encoding cannot be round-tripped exactly; it was left untouched."
    )


class TooLarge(FsError, OSError):
    code = ErrorCode.TOO_LARGE
    default_hint = "The content exceeds a size limit; make a smaller change."


class InvalidArgument(FsError, ValueError):
    code = ErrorCode.INVALID_ARGUMENT
    default_hint = "Fix the argument named in the message and call again."


class Unavailable(FsError, ConnectionError):
    code = ErrorCode.UNAVAILABLE
    default_hint = "The storage is temporarily unavailable; retry later."
    retryable_by_default = True


class BackendError(FsError, OSError):
    code = ErrorCode.BACKEND_ERROR
    default_hint = "The storage backend failed unexpectedly; report this if it persists."


_CLASS_BY_CODE: Mapping[ErrorCode, type[FsError]] = MappingProxyType(
    {
        cls.code: cls
        for cls in (
            NotFound, AlreadyExists, IsADirectory, NotADirectory, NotARegularFile,
            PermissionDenied, OutsideRoot, InvalidPath, Denied, NotEnabled, NotObserved,
            Stale, Busy, CheckedOut, NoMatch, AmbiguousMatch, EmptyOldString, NoChange,
            BinaryFile, EncodingError, TooLarge, InvalidArgument, Unavailable, BackendError,
        )
    }
)  # fmt: skip


def _rebuild(
    cls: type[FsError], message: str, options: dict[str, Any], details: dict[str, Any]
) -> FsError:
    return cls(message, details=details, **options)


def error_class(code: ErrorCode | str) -> type[FsError]:
    """Return the exception class for a stable code (to rebuild an error from data)."""
    return _CLASS_BY_CODE[ErrorCode(code)]
