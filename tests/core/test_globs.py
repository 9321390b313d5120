"""Glob patterns: their meaning, pinned by examples and by a regular-expression reference."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs.core import InvalidArgument
from ctxfs.core.globs import glob_matcher
from tests.conftest import examples


def reference(pattern: str) -> re.Pattern[str]:
    """The same language as one regular expression: it can run away, so short inputs only."""
    anchored = "/" in pattern.strip("/")
    segments = pattern.strip("/").split("/")
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        out: list[str] = []
        at = 0
        while at < len(segment):
            char = segment[at]
            if char == "*":
                if out[-1:] != ["[^/]*"]:  # "**" in a segment is one "*" (and cannot run away)
                    out.append("[^/]*")
            elif char == "?":
                out.append("[^/]")
            elif char == "[":
                negated = segment[at + 1 : at + 2] in ("!", "^")
                close = segment.find("]", at + (3 if negated else 2))
                body = segment[at + 1 : close]
                body = "^/" + body[1:] if body[:1] in ("!", "^") else body  # never "/"
                out.append("[" + body.replace("\\", "\\\\") + "]")
                at = close
            else:
                out.append(re.escape(char))
            at += 1
        parts.append("".join(out) + ("" if last else "/"))
    body = "".join(parts)
    return re.compile(body if anchored else f"(?:.*/)?{body}", re.DOTALL)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True), ("*.py", "src/deep/a.py", True), ("*.py", "a.pyc", False),
        ("src/*.py", "src/a.py", True), ("src/*.py", "src/b/a.py", False),
        ("src/**/*.py", "src/a.py", True), ("src/**/*.py", "src/b/c/a.py", True),
        ("src/**", "src/a/b", True), ("src/**", "src", False), ("**", "any/thing", True),
        ("**/test_*", "tests/test_a.py", True), ("/docs/", "docs", True),
        ("?.txt", "a.txt", True), ("?.txt", "ab.txt", False), ("[!a]*", "b", True),
        ("[!a]*", "a", False), ("x[!a]y", "x/y", False), ("[a-c]x", "bx", True), ("[]]", "]", True), ("[[]", "[", True), ("[![]", "[", False), ("[!]]", "a", True), ("[!]]", "a]", False), ("a**b", "axyb", True),
        ("*a*a*a*a*a*a*a*a*a*a*b", "a" * 255, False),  # a regular expression takes hours here
        ("**/a/**/a/**/a/**/a/**/b", "/".join(["a"] * 200), False),
    ],
)  # fmt: skip
def test_examples(pattern: str, path: str, matches: bool) -> None:
    assert glob_matcher(pattern).fullmatch(path) is matches


@pytest.mark.parametrize("pattern", ["", "/", "//", "src/[ab"])
def test_bad_patterns_are_invalid_arguments(pattern: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        glob_matcher(pattern)
    assert caught.value.details["field"] == "pattern"


NAMES = st.text(alphabet="ab.", min_size=1, max_size=6)
PATHS = st.lists(NAMES, min_size=1, max_size=4).map("/".join)
PIECES = st.sampled_from(["a", "b", ".", "*", "?", "[ab]", "[!a]", "**"])
SEGMENTS = st.lists(PIECES, min_size=1, max_size=4).map("".join)
PATTERNS = st.lists(SEGMENTS, min_size=1, max_size=3).map("/".join)


@settings(max_examples=examples(1000))
@given(PATTERNS, PATHS)
def test_the_matcher_agrees_with_the_regular_expression(pattern: str, path: str) -> None:
    expected = reference(pattern).fullmatch(path) is not None
    assert glob_matcher(pattern).fullmatch(path) is expected


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        ("**/*.{py,txt}", ["a.py", "d/e/b.txt"], ["c.md", "a.pyc"]),
        ("*.{py,txt}", ["a.py", "d/b.txt"], ["a.md"]),
        ("{src,tests}/**/*.py", ["src/a.py", "tests/x/b.py"], ["lib/a.py", "a.py"]),
        ("{src/*.py,*.md}", ["src/a.py", "README.md", "d/e.md"], ["d/src/a.py", "a.py"]),
        ("v{1..3}.txt", ["v1.txt", "v3.txt"], ["v4.txt", "v{1..3}.txt"]),
        ("*.{py,{pyi,pyx}}", ["a.pyi", "a.pyx", "a.py"], ["a.pyc"]),
        ("{a}.txt", ["{a}.txt"], ["a.txt"]),  # no comma: literal braces, as in bash
    ],
)
def test_braces_give_alternatives(
    pattern: str, matching: list[str], not_matching: list[str]
) -> None:
    matcher = glob_matcher(pattern)
    assert [path for path in matching if not matcher.fullmatch(path)] == []
    assert [path for path in not_matching if matcher.fullmatch(path)] == []


def test_braces_that_expand_too_far_or_to_nothing_are_refused() -> None:
    with pytest.raises(InvalidArgument) as caught:
        glob_matcher("{a,b}" * 11)  # 2048 alternatives
    assert "more than 1000" in caught.value.message
    with pytest.raises(InvalidArgument) as caught:
        glob_matcher("{/,}")
    assert "empty alternative" in caught.value.message
    with pytest.raises(InvalidArgument):
        glob_matcher("{,}")  # no alternative at all


def test_names_narrow_what_a_search_engine_lists_first() -> None:
    assert glob_matcher("**/*.{py,pyi}").names() == ("*.py", "*.pyi")
    assert glob_matcher("src/f?o*.py").names() == ("f*o*.py",)  # an engine's "?" may be a byte
    assert glob_matcher("*.md").names() == ("*.md",)
    for broad in ("src/**", "**", "*.[ch]", "{a/**,*.py}"):
        assert glob_matcher(broad).names() is None, broad


def test_the_outline_widens_what_engines_read_differently() -> None:
    assert glob_matcher("src/**/f?o.{py,[ch]}").outline() == (
        ("src", "**", "f*o.py"),
        ("src", "**", "*"),
    )
    assert glob_matcher("*.py").outline() == (("**", "*.py"),)  # a name at any depth
    assert glob_matcher("/a b/!x/ c/d\\e").outline() == (("a b", "*", "*", "*"),)


@pytest.mark.parametrize(
    ("pattern", "entered", "not_entered"),
    [
        ("pkg3/**/*.py", ["pkg3", "pkg3/a", "pkg3/a/b"], ["pkg1", "pkg30", "a/pkg3"]),
        ("src/*/lib/*.py", ["src", "src/x", "src/x/lib"], ["src/x/y", "src/x/lib/z", "lib"]),
        ("**/mod4/*.py", ["a", "a/mod4", "a/b/c"], []),
        ("*.py", ["a", "a/b"], []),
        ("{a,b/c}/*.py", ["a", "b", "b/c"], ["a/x", "c", "b/d"]),
        ("a/**", ["a", "a/b/c"], ["b"]),
    ],
)
def test_a_walk_enters_only_the_directories_that_may_hold_a_match(
    pattern: str, entered: list[str], not_entered: list[str]
) -> None:
    matcher = glob_matcher(pattern)
    assert [directory for directory in entered if not matcher.may_hold(directory)] == []
    assert [directory for directory in not_entered if matcher.may_hold(directory)] == []


@settings(max_examples=examples(1000))
@given(PATTERNS, PATHS)
def test_outline_and_directories_keep_every_match(pattern: str, path: str) -> None:
    matcher = glob_matcher(pattern)
    if not matcher.fullmatch(path):
        return
    outlines = [glob_matcher("/".join(segments)) for segments in matcher.outline()]
    assert any(outline.fullmatch(path) for outline in outlines)
    parents = path.split("/")[:-1]
    for depth in range(1, len(parents) + 1):
        assert matcher.may_hold("/".join(parents[:depth]))


def test_a_thousand_globstars_match_without_recursing() -> None:
    # Each "**" took a level of recursion: 300 raised RecursionError (backend_error), from a
    # glob argument or from one line of a .gitignore, for every search of the tree.
    many = "/".join(["**"] * 1000)
    assert glob_matcher(f"{many}/x").fullmatch("a/b/x")
    assert not glob_matcher(f"{many}/x").fullmatch("a/b/y")
    alternating = "/".join(["**", "a"] * 500)
    assert glob_matcher(alternating).fullmatch("/".join(["a"] * 500))
    assert not glob_matcher(alternating).fullmatch("/".join(["a"] * 499))


@pytest.mark.parametrize("pattern", ["{" * 300, "{a," * 1000 + "}" * 1000])
def test_braces_nested_too_deeply_are_refused(pattern: str) -> None:
    with pytest.raises(InvalidArgument, match="nest too deeply"):
        glob_matcher(pattern)
