"""The diff between two versions of a file: whole within its bounds, a summary beyond them."""

from __future__ import annotations

import random
import re

from hypothesis import given
from hypothesis import strategies as st

from ctxfs.core.text.diffs import MAX_CHANGE_DIFF_BYTES, version_diff

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def applied(old: list[str], diff: str) -> list[str]:
    """*old* with the unified *diff* applied, every context and removed line checked."""
    lines, out, at = diff.split("\n")[2:] if diff else [], list[str](), 0
    for line in lines:
        hunk = _HUNK.match(line)
        if hunk:
            start, count = int(hunk[1]), 1 if hunk[2] is None else int(hunk[2])
            first = start - 1 if count else start
            out += old[at:first]
            at = first
        elif line.startswith("+"):
            out.append(line[1:])
        else:
            assert old[at] == line[1:], (at, line)
            if line.startswith(" "):
                out.append(line[1:])
            at += 1
    return out + old[at:]


UNHURRIED = 60.0
"""A comparison's time bound that a loaded machine cannot reach: whole diffs here depend on the
work bound and the texts alone, never on the machine's speed."""

lines = st.lists(st.sampled_from(["a", "b", "c", "x = 1", ""]), max_size=40)


@given(old=lines, new=lines)
def test_a_whole_diff_turns_the_old_text_into_the_new(old: list[str], new: list[str]) -> None:
    before, after = "".join(f"{line}\n" for line in old), "".join(f"{n}\n" for n in new)
    diff = version_diff(before, after, path="p", seconds=UNHURRIED)
    assert diff.whole
    assert applied(old, diff.text) == new


def test_the_diff_counts_lines_in_the_files_numbers() -> None:
    old = [f"line {n}" for n in range(1, 1001)]
    new = [*old[:499], "changed", *old[500:]]
    diff = version_diff("\n".join(old) + "\n", "\n".join(new) + "\n", path="p")
    assert diff.text.splitlines()[2] == "@@ -497,7 +497,7 @@"
    assert diff.changed_lines == 2


def test_a_change_of_huge_lines_is_a_summary_not_a_truncated_diff() -> None:
    diff = version_diff("x" * (MAX_CHANGE_DIFF_BYTES * 2) + "\n", "y\n", path="p")
    assert not diff.whole
    assert diff.text == "2 lines changed in 1 region(s) of p (too many to show): lines 1 → 1"


def test_a_comparison_too_long_to_make_is_a_summary_of_the_span_that_differs() -> None:
    # Few distinct lines make difflib's time grow with the square of the lines: a
    # comparison past its time (or too much work from the start) gives the span instead.
    same = ["kept"] * 10
    old = [*same, *(f"a{n % 101}" for n in range(10_000)), *same]
    new = [*same, *(f"a{(n * 7 + 1) % 101}" for n in range(9_999)), *same]
    for seconds in (0.0, UNHURRIED):  # (at once; and by the work bound, whatever the time)
        diff = version_diff("\n".join(old), "\n".join(new), path="p", seconds=seconds)
        assert not diff.whole
        assert diff.text.endswith("(too many to compare): lines 11-10010 → 11-10009")
        assert diff.changed_lines >= 1


def test_lines_moved_within_the_span_are_at_least_one_changed_line() -> None:
    old = [f"line {n}" for n in range(100)]
    new = [*old[1:], old[0]]
    diff = version_diff("\n".join(old), "\n".join(new), path="p", seconds=0.0)
    assert diff.text.startswith("1 or more lines changed in p (too many to compare)")
    unhurried = version_diff("\n".join(old), "\n".join(new), path="p", seconds=UNHURRIED)
    assert unhurried.changed_lines == 2


def test_two_changes_far_apart_in_a_long_file_are_one_whole_diff() -> None:
    old = [f"line {n}" for n in range(12_000)]
    new = ["first", *old[1:-1], "last"]
    diff = version_diff("\n".join(old), "\n".join(new), path="p", seconds=UNHURRIED)
    assert diff.whole
    assert [line for line in diff.text.splitlines() if line.startswith("@@")] == [
        "@@ -1,4 +1,4 @@",
        "@@ -11997,4 +11997,4 @@",
    ]


def test_versions_whose_lines_are_the_same_say_so() -> None:
    for old, new in [("a\nb", "a\nb\n"), ("a\r\nb\r\n", "a\nb\n")]:
        diff = version_diff(old.replace("\r\n", "\n"), new, path="p")
        assert (diff.whole, diff.changed_lines) == (True, 0)
        assert diff.text == "no line of p changed (its line endings, final newline or encoding did)"


def test_the_work_bound_counts_the_lines_the_matcher_compares() -> None:
    # A line in just over 1% of the new text is junk to difflib only if the context
    # lines around the span are counted too: the bound counts what difflib compares.
    length = 99_998
    common = length // 100 + 2  # "x" occurs this often: compared, not junk, within the context
    new_middle = [f"u{n}" for n in range(length - common)] + ["x"] * common
    random.Random(1).shuffle(new_middle)
    old_middle = ["x"] * 20_000
    around = (["c1", "c2", "c3"], ["e1", "e2", "e3"])
    old = "\n".join([*around[0], *old_middle, *around[1]])
    new = "\n".join([*around[0], *new_middle, *around[1]])
    diff = version_diff(old, new, path="p", seconds=UNHURRIED)
    assert "(too many to compare)" in diff.text
