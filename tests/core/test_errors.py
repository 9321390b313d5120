from __future__ import annotations

import pickle

import pytest

from ctxfs.core import errors
from ctxfs.core.errors import ErrorCode, FsError, error_class

BUILTIN_OF = {
    ErrorCode.NOT_FOUND: FileNotFoundError,
    ErrorCode.ALREADY_EXISTS: FileExistsError,
    ErrorCode.IS_DIRECTORY: IsADirectoryError,
    ErrorCode.NOT_A_DIRECTORY: NotADirectoryError,
    ErrorCode.NOT_A_REGULAR_FILE: OSError,
    ErrorCode.OUTSIDE_ROOT: PermissionError,
    ErrorCode.INVALID_PATH: ValueError,
    ErrorCode.PERMISSION_DENIED: PermissionError,
    ErrorCode.DENIED: PermissionError,
    ErrorCode.NOT_ENABLED: PermissionError,
    ErrorCode.NOT_OBSERVED: RuntimeError,
    ErrorCode.STALE: RuntimeError,
    ErrorCode.BUSY: TimeoutError,
    ErrorCode.CHECKED_OUT: PermissionError,
    ErrorCode.NO_MATCH: ValueError,
    ErrorCode.AMBIGUOUS_MATCH: ValueError,
    ErrorCode.EMPTY_OLD_STRING: ValueError,
    ErrorCode.NO_CHANGE: ValueError,
    ErrorCode.BINARY_FILE: ValueError,
    ErrorCode.ENCODING_ERROR: UnicodeError,
    ErrorCode.TOO_LARGE: OSError,
    ErrorCode.INVALID_ARGUMENT: ValueError,
    ErrorCode.UNAVAILABLE: ConnectionError,
    ErrorCode.BACKEND_ERROR: OSError,
}

DESIGN_CODES = [
    "not_found",
    "already_exists",
    "is_directory",
    "not_a_directory",
    "not_a_regular_file",
    "outside_root",
    "invalid_path",
    "permission_denied",
    "denied",
    "not_enabled",
    "not_observed",
    "stale",
    "busy",
    "checked_out",
    "no_match",
    "ambiguous_match",
    "empty_old_string",
    "no_change",
    "binary_file",
    "encoding_error",
    "too_large",
    "invalid_argument",
    "unavailable",
    "backend_error",
]


def test_the_codes_are_exactly_the_stable_ones() -> None:
    assert sorted(code.value for code in ErrorCode) == sorted(DESIGN_CODES)
    assert set(BUILTIN_OF) == set(ErrorCode)


@pytest.mark.parametrize("code", list(ErrorCode))
def test_each_code_has_a_class_inheriting_its_builtin(code: ErrorCode) -> None:
    cls = error_class(code)
    assert cls.code is code
    error = cls("something happened", path="a/b.txt")
    assert isinstance(error, FsError)
    assert isinstance(error, BUILTIN_OF[code])
    assert str(error) == "something happened"
    assert error.path == "a/b.txt"
    assert error.hint, "every error tells the model what to do next"
    assert error.to_dict()["code"] == code.value
    assert error_class(code.value) is cls


def test_not_found_is_caught_as_file_not_found() -> None:
    with pytest.raises(FileNotFoundError):
        raise errors.NotFound("gone", path="x")


def test_only_busy_and_unavailable_are_retryable_by_default() -> None:
    retryable = {code for code in ErrorCode if error_class(code)("m").retryable}
    assert retryable == {ErrorCode.BUSY, ErrorCode.UNAVAILABLE}


def test_hint_retryable_and_details_can_be_given() -> None:
    error = errors.Stale(
        "changed", path="a", hint="read again", retryable=True, details={"current_version": "v2"}
    )
    assert (error.hint, error.retryable) == ("read again", True)
    assert error.to_dict() == {
        "code": "stale",
        "message": "changed",
        "path": "a",
        "retryable": True,
        "hint": "read again",
        "details": {"current_version": "v2"},
    }
    with pytest.raises(TypeError):
        error.details["x"] = 1  # type: ignore[index]


def test_groups() -> None:
    assert issubclass(errors.NotObserved, errors.Conflict)
    assert issubclass(errors.Stale, errors.Conflict)
    assert issubclass(errors.Denied, errors.Refused)
    assert issubclass(errors.NotEnabled, errors.Refused)
    for cls in (errors.NoMatch, errors.AmbiguousMatch, errors.EmptyOldString, errors.NoChange):
        assert issubclass(cls, errors.EditError)


def test_every_public_error_is_in_the_module_docstring_tree() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, FsError):
            assert name in doc, name


def test_repr_names_class_code_and_path() -> None:
    error = errors.NoMatch("nope", path="f.py")
    assert repr(error) == "NoMatch('nope', code='no_match', path='f.py')"


def test_errors_pickle_with_everything_they_carry() -> None:
    error = errors.Busy("held", path="a", hint="wait", details={"waited_seconds": 2})
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is errors.Busy
    assert copy.to_dict() == error.to_dict()
