"""Parsing Codex patches and V4A diffs."""

from __future__ import annotations

import pytest

from ctxfs.core import FilePatch, Hunk, InvalidArgument, PatchAction
from ctxfs.tools.builtin.apply_patch.patches import parse_diff, parse_patch

PATCH = """*** Begin Patch
*** Add File: docs/new.md
+# New
+
+text
*** Update File: src/app.py
*** Move to: src/main.py
@@ def main():
-    print("hi")
+    print("hello")
 {blank}
@@
 def other():
-    return 1
+    return 2
*** End of File
*** Delete File: old.txt
*** End Patch
""".format(blank="")


def test_a_codex_patch_parses_into_its_files() -> None:
    added, updated, deleted = parse_patch(PATCH)
    assert added == FilePatch(action=PatchAction.ADD, path="docs/new.md", content="# New\n\ntext\n")
    assert deleted == FilePatch(action=PatchAction.DELETE, path="old.txt")
    assert updated.action is PatchAction.UPDATE
    assert (updated.path, updated.move_to) == ("src/app.py", "src/main.py")
    assert updated.hunks == (
        Hunk(
            anchors=("def main():",),
            old=('    print("hi")', ""),
            new=('    print("hello")', ""),
            edits=((0, 1, 0, 1),),  # (each run of - and + lines, as marked)
        ),
        Hunk(
            old=("def other():", "    return 1"),
            new=("def other():", "    return 2"),
            at_end=True,
            edits=((1, 2, 1, 2),),
        ),
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("*** Update File: a\n@@\n-x\n+y\n*** End Patch", 1),
        ("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n", 5),
        ("*** Begin Patch\n*** End Patch", 1),
        ("*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch", 3),
        ("*** Begin Patch\n*** Update File: a\n@@\n x\n*** End Patch", 4),
        ("*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch", 4),
        ("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch", 2),
    ],
)
def test_a_patch_that_does_not_parse_says_which_line(text: str, line: int) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_patch(text)
    assert caught.value.details["line"] == line


def test_a_v4a_diff_parses_as_the_responses_api_sends_it() -> None:
    created = parse_diff(PatchAction.ADD, "a.txt", "+one\n+two\n")
    assert created.content == "one\ntwo\n"
    updated = parse_diff(PatchAction.UPDATE, "a.txt", "@@\n-one\n+uno\n two\n")
    assert updated.hunks == (Hunk(old=("one", "two"), new=("uno", "two"), edits=((0, 1, 0, 1),)),)
