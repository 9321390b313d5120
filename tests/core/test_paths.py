from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxfs.core.errors import ErrorCode, FsError, InvalidPath, OutsideRoot
from ctxfs.core.paths import MAX_NAME_BYTES, MAX_PATH_BYTES, check_path, normalize_path


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("a.txt", "a.txt"),
        ("src/app.py", "src/app.py"),
        ("./a.txt", "a.txt"),
        ("sub//c", "sub/c"),
        ("sub/./c", "sub/c"),
        ("sub/", "sub"),
        ("", ""),
        (".", ""),
        ("./", ""),
        ("~/.ssh/id_rsa", "~/.ssh/id_rsa"),  # never expanded
        ("%2e%2e/secret", "%2e%2e/secret"),  # never decoded
        (" a.txt ", " a.txt "),  # never trimmed
        ("notes:v2.txt", "notes:v2.txt"),
        ("café/naïve.txt", "café/naïve.txt"),
        ("x" * MAX_NAME_BYTES, "x" * MAX_NAME_BYTES),
        ("latin1-\udce9t\udce9.txt", "latin1-\udce9t\udce9.txt"),  # a name that is not UTF-8
    ],
)
def test_accepted_paths_and_their_canonical_form(given: str, canonical: str) -> None:
    assert normalize_path(given) == canonical


@pytest.mark.parametrize(
    ("given", "code"),
    [
        ("../secret", ErrorCode.OUTSIDE_ROOT),
        ("a/../../secret", ErrorCode.OUTSIDE_ROOT),
        ("sub/..", ErrorCode.OUTSIDE_ROOT),
        ("..", ErrorCode.OUTSIDE_ROOT),
        ("/etc/passwd", ErrorCode.OUTSIDE_ROOT),
        ("a\x00b", ErrorCode.INVALID_PATH),
        ("a\x00/../..", ErrorCode.INVALID_PATH),
        ("line\nbreak", ErrorCode.INVALID_PATH),
        ("C:\\Windows\\x", ErrorCode.INVALID_PATH),
        ("c:foo", ErrorCode.INVALID_PATH),
        ("\\\\server\\share\\x", ErrorCode.INVALID_PATH),
        ("..\\secret", ErrorCode.INVALID_PATH),
        ("file:///etc/passwd", ErrorCode.INVALID_PATH),
        ("s3://other-bucket/k", ErrorCode.INVALID_PATH),
        ("a" * 5000, ErrorCode.INVALID_PATH),
        ("x" * (MAX_NAME_BYTES + 1), ErrorCode.INVALID_PATH),
        ("😀" * 64, ErrorCode.INVALID_PATH),  # 256 bytes in one segment
        ("bad\ud800surrogate", ErrorCode.INVALID_PATH),
    ],
)
def test_refused_paths(given: str, code: ErrorCode) -> None:
    with pytest.raises(FsError) as caught:
        normalize_path(given)
    assert caught.value.code is code


def test_a_deep_path_is_bounded_by_the_byte_limit() -> None:
    deepest = "/".join(["a"] * 2048)  # 4,095 bytes: what PATH_MAX holds with its NUL
    assert len(deepest) == MAX_PATH_BYTES
    assert normalize_path(deepest) == deepest
    with pytest.raises(InvalidPath) as caught:
        normalize_path(deepest + "a")
    assert caught.value.hint == f"Use a path of at most {MAX_PATH_BYTES} bytes (UTF-8)."
    with pytest.raises(InvalidPath) as caught:
        normalize_path("😀" * 64)
    assert "at most 255 bytes" in caught.value.hint  # (not the default: the path is relative)
    with pytest.raises(InvalidPath) as caught:
        normalize_path("a\x00b")
    assert "without control characters" in caught.value.hint


def test_file_paths_refuse_the_root_and_a_trailing_slash() -> None:
    for path in ("", ".", "a.txt/", "sub/"):
        with pytest.raises(InvalidPath):
            normalize_path(path, file=True)
    assert normalize_path("./sub//a.txt", file=True) == "sub/a.txt"


def test_non_strings_are_invalid() -> None:
    with pytest.raises(InvalidPath):
        normalize_path(b"a.txt")  # type: ignore[arg-type]


def test_check_path_accepts_only_canonical_paths() -> None:
    assert check_path("a/b.txt") == "a/b.txt"
    assert check_path("") == ""
    for path in ("./a", "a//b", "a/", "a/./b"):
        with pytest.raises(InvalidPath):
            check_path(path)
    with pytest.raises(OutsideRoot):
        check_path("../a")


segment = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12
).filter(lambda s: "/" not in s and "\\" not in s and "://" not in s)


@given(st.lists(st.one_of(segment, st.sampled_from([".", "", ".."])), max_size=8))
def test_normalizing_never_yields_an_escape(parts: list[str]) -> None:
    given = "/".join(parts)
    try:
        canonical = normalize_path(given)
    except FsError:
        return
    segments = canonical.split("/") if canonical else []
    assert ".." not in segments
    assert "" not in segments
    assert "." not in segments
    assert not canonical.startswith("/")
    assert normalize_path(canonical) == canonical  # idempotent
    assert check_path(canonical) == canonical
