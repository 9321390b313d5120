"""Which grep patterns search under a time limit, and that the rest cannot run away."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs.core import InvalidArgument
from ctxfs.tools.builtin.grep.patterns import LinePattern, OutOfTime
from tests.conftest import examples


def limited(pattern: str) -> bool:
    return (
        LinePattern.compile(pattern, ignore_case=False, line_seconds=1.0).line_seconds is not None
    )


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        # linear, or at most the square of the (short) line: searched without a limit
        ("TODO", False), (r"def \w+", False), ("foo.*bar", False), (r"^\s*#", False),
        ("[a-z]{3}", False), ("import (os|sys)", False), ("(TODO|FIXME):", False),
        (r"\w+ =", False), ("(foo)?bar", False), (r"\p{L}+", False),
        (r"[(|+]+\(", False), (r"a\(b\)+", False), ("x{2}", False), ("{}+", False),
        ("a?b?c?d?", False), ("x{1,32}", False),
        # can backtrack without bound: every line gets a time limit
        ("(a+)+$", True), ("(a|aa)+$", True), ("((ab)?c)*", True), ("(a?b?){2,}", True),
        ("(?:x|y)*z", True), (r"(x)\1", True), ("(?P<q>x)(?P=q)", True), (r"(?P<q>x)\g<q>", True),
        (r"\w+\s*=\s*\w+", True), ("a*b*c*d*", True), (r"\w+\s*=\s*", True),
        # more than one unbounded repeat is quadratic or worse per start (issue 19)
        ("a*a*a*[bc]", True), ("(?=a*a*a*b)", True), ("(a|aa)+c", True), ("foo.*bar.*baz", True),
        # stacked optional parts multiply the ways to try
        ("a?a?a?a?a?a?b", True), ("a{1,9}a{1,9}b", True),
    ],
)  # fmt: skip
def test_only_a_pattern_that_can_backtrack_without_bound_gets_a_time_limit(
    pattern: str, expected: bool
) -> None:
    assert limited(pattern) is expected


LINE_CHARS = 1024
"""A long line, as lines in source files go."""

ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "\\w", "a\\b"])
QUANTIFIERS = st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,3}", "{2,}", "*?", "++"])


def patterns() -> st.SearchStrategy[str]:
    def pieces(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        piece = st.tuples(st.one_of(ATOMS, inner.map(lambda p: f"({p})")), QUANTIFIERS).map("".join)
        branch = st.lists(piece, min_size=1, max_size=4).map("".join)
        return st.lists(branch, min_size=1, max_size=3).map("|".join)

    return st.recursive(ATOMS, pieces, max_leaves=12)


@settings(max_examples=examples(200), deadline=None)
@given(patterns())
def test_a_pattern_searched_without_a_limit_cannot_run_away(pattern: str) -> None:
    # Inputs built to make backtracking explode; a pattern let off the line limit (only the
    # call's deadline stops it) must still finish a long line well within a second.
    compiled = LinePattern.compile(pattern, ignore_case=False, line_seconds=1.0)
    if compiled.line_seconds is None:
        for unit in ("a", "ab", "a b "):
            line = (unit * LINE_CHARS)[: LINE_CHARS - 1] + "!"
            compiled.compiled.search(line, timeout=1.0)


@pytest.mark.parametrize(
    "pattern",
    ["(a|a)" * 24 + "x", "(?x)(a #)\n|a)+$"],
    ids=["stacked alternatives", "a verbose comment hides a parenthesis"],
)
def test_a_pattern_the_check_cannot_judge_is_still_stopped(pattern: str) -> None:
    compiled = LinePattern.compile(pattern, ignore_case=False, line_seconds=0.2)
    assert not compiled.literal
    with pytest.raises(OutOfTime):
        compiled.first_match("a" * 40 + "!", deadline=time.monotonic() + 0.5)


@pytest.mark.parametrize(("pattern", "literal"), [("TODO", True), (r"def \(self\)", True),
                                                  ("a|b", False), ("a+", False), (r"(x)\1", False)])  # fmt: skip
def test_only_a_literal_pattern_is_searched_with_no_timeout(pattern: str, literal: bool) -> None:
    assert LinePattern.compile(pattern, ignore_case=False, line_seconds=1.0).literal is literal


@pytest.mark.parametrize(
    "pattern",
    [
        "(?:(?:a{200}){200}){100}",
        "(?:(?:a{1000}){1000}){1000}",
        "a{1000000}",
        "(" * 600 + "a" + ")" * 600,
        r"(?:a{1000}[\])]){1000}",
        "(?x)(?:a{1000} # )\n){1000}",
        "a{" + "9" * 5000 + "}",
    ],
    ids=["40k-times-100", "1e9", "1e6", "600-deep", "escaped-bracket", "verbose", "5000-digits"],
)
def test_a_pattern_too_large_to_compile_is_refused_before_it_is(pattern: str) -> None:
    # The first took 1.1 GB to compile, the second past 2.5 GB (MemoryError, backend_error);
    # the last raised RecursionError.
    with pytest.raises(InvalidArgument) as refused:
        LinePattern.compile(pattern, ignore_case=False, line_seconds=1.0)
    assert refused.value.details == {"field": "pattern"}


@pytest.mark.parametrize(
    "pattern",
    [
        r"\d{4}-\d{2}-\d{2}",
        "x{0,65535}",
        "(?:ab){50000}",
        "[{]{3}",
        "(?P<longname>x){10000}",
        "(?:a|b|c|d|e|f|g|h){12000}",
        r"\{3\}",
    ],
)
def test_counted_repeats_of_a_usual_size_compile(pattern: str) -> None:
    assert LinePattern.compile(pattern, ignore_case=False, line_seconds=1.0).compiled.pattern
