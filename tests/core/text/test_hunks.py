"""Where a patch's hunks apply in a file's lines: in order, exactly first, in linear time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxfs.core import AmbiguousMatch, FilePatch, Hunk, NoMatch, PatchAction
from ctxfs.core.text import locate_hunks
from ctxfs.tools.builtin.apply_patch.patches import parse_diff, parse_patch


def test_hunks_apply_in_order_below_their_anchors() -> None:
    lines = ["def a():", "    x = 1", "def b():", "    x = 1", "def c():", "    x = 1"]
    patch = parse_diff(
        PatchAction.UPDATE,
        "f.py",
        "@@ def b():\n-    x = 1\n+    x = 2\n@@\n-    x = 1\n+    x = 3\n",
    )
    assert locate_hunks(lines, patch) == [3, 5]


def test_a_hunk_matching_twice_applies_where_only_one_place_lets_the_next_apply() -> None:
    lines = ["a", "k", "b", "k", "c"]
    pinned = parse_diff(PatchAction.UPDATE, "f", "@@\n-k\n+K\n@@\n b\n-k\n+K2\n")
    assert locate_hunks(lines, pinned) == [1, 2]  # (the second k must follow b)
    later = parse_diff(PatchAction.UPDATE, "f", "@@\n-k\n+K\n@@\n c\n+d\n")
    with pytest.raises(AmbiguousMatch):  # c follows both: either k could be meant
        locate_hunks(lines, later)
    second = ["a", "k", "b", "k", "c", "x"]
    needs_second = parse_diff(PatchAction.UPDATE, "f", "@@\n-k\n+K\n@@\n-c\n+C\n@@\n k\n+y\n")
    with pytest.raises(NoMatch):  # (no placement of the first lets a k follow c)
        locate_hunks(second, needs_second)


def test_whitespace_differences_are_forgiven_only_after_an_exact_search() -> None:
    lines = ["x = 1  ", "x = 1"]
    patch = parse_diff(PatchAction.UPDATE, "f.py", "@@\n-x = 1\n+x = 2\n")
    assert locate_hunks(lines, patch) == [1]  # the exact line, not the first loose one
    loose = parse_diff(PatchAction.UPDATE, "f.py", "@@\n-  y = 1\n+y = 2\n")
    assert locate_hunks(["y = 1"], loose) == [0]


def test_a_hunk_at_the_end_of_file_matches_only_there() -> None:
    lines = ["end", "middle", "end"]
    patch = parse_patch(
        "*** Begin Patch\n*** Update File: f\n@@\n-end\n+END\n*** End of File\n*** End Patch"
    )
    assert locate_hunks(lines, patch[0]) == [2]


def test_a_hunk_that_does_not_apply_is_named() -> None:
    patch = parse_diff(PatchAction.UPDATE, "f.py", "@@\n-a\n+b\n@@\n-missing\n+x\n")
    with pytest.raises(NoMatch) as caught:
        locate_hunks(["a", "c"], patch)
    assert caught.value.details["hunk"] == 1
    assert "hunk 2 of 2" in caught.value.message


def naive_index(lines: list[str], wanted: list[str]) -> int | None:
    for start in range(len(lines) - len(wanted) + 1):
        if lines[start : start + len(wanted)] == wanted:
            return start
    return None


@given(
    lines=st.lists(st.sampled_from(["a", "b", "a "]), max_size=30),
    wanted=st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=5),
)
def test_the_linear_search_finds_what_a_naive_one_finds(
    lines: list[str], wanted: list[str]
) -> None:
    patch = FilePatch(
        action=PatchAction.UPDATE, path="f", hunks=(Hunk(old=tuple(wanted), new=("x",)),)
    )
    exact = naive_index(lines, wanted)
    folded = lines if exact is not None else [line.rstrip() for line in lines]
    start = naive_index(folded, wanted)
    if start is None:
        with pytest.raises(NoMatch):
            locate_hunks(lines, patch)
    elif naive_index(folded[start + 1 :], wanted) is not None:  # (no @@ line: must be one)
        with pytest.raises(AmbiguousMatch):
            locate_hunks(lines, patch)
    else:
        assert locate_hunks(lines, patch) == [start]


def test_a_hunk_matching_twice_is_refused_unless_an_anchor_picks_the_first() -> None:
    lines = ["def a():", "    x = 1", "def b():", "    x = 1"]
    twice = parse_diff(PatchAction.UPDATE, "f.py", "@@\n-    x = 1\n+    x = 2\n")
    with pytest.raises(AmbiguousMatch) as caught:
        locate_hunks(lines, twice)
    assert caught.value.details["lines"] == [2, 4]
    assert "@@ line" in caught.value.hint
    anchored = parse_diff(PatchAction.UPDATE, "f.py", "@@ def a():\n-    x = 1\n+    x = 2\n")
    assert locate_hunks(lines, anchored) == [1]
