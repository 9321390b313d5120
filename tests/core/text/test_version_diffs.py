"""The diff between two versions of a file: whole within its bounds, a summary beyond them."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ctxfs.core.text.diffs import (
    MAX_CHANGE_DIFF_BYTES,
    MAX_COMPARED_LINES,
    version_diff,
)

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


lines = st.lists(st.sampled_from(["a", "b", "c", "x = 1", ""]), max_size=40)


@given(old=lines, new=lines)
def test_a_whole_diff_turns_the_old_text_into_the_new(old: list[str], new: list[str]) -> None:
    diff = version_diff(
        "".join(f"{line}\n" for line in old), "".join(f"{n}\n" for n in new), path="p"
    )
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


def test_beyond_the_lines_compared_a_summary_names_the_span_that_differs() -> None:
    # Few distinct lines make difflib's time grow with the square of the lines: only the
    # span between the common start and end is compared, and only up to a bound.
    same = ["kept"] * 10
    old = [*same, *(f"a{n % 7}" for n in range(MAX_COMPARED_LINES)), *same]
    new = [*same, *(f"b{n % 5}" for n in range(MAX_COMPARED_LINES)), *same]
    diff = version_diff("\n".join(old) + "\n", "\n".join(new) + "\n", path="p")
    assert not diff.whole
    last = 10 + MAX_COMPARED_LINES
    assert diff.text.endswith(f"(too many to show or compare): lines 11-{last} → 11-{last}")
    assert diff.changed_lines > 0


def test_versions_whose_lines_are_the_same_say_so() -> None:
    for old, new in [("a\nb", "a\nb\n"), ("a\r\nb\r\n", "a\nb\n")]:
        diff = version_diff(old.replace("\r\n", "\n"), new, path="p")
        assert (diff.whole, diff.changed_lines) == (True, 0)
        assert diff.text == "no line of p changed (its line endings, final newline or encoding did)"
