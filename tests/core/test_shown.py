"""What each owner was shown: the windows of the version it saw last of each file, bounded."""

from __future__ import annotations

from ctxfs.core.shown import ShownWindow, ShownWindows
from ctxfs.core.versions import Version

ONE, TWO = Version("xxh3:1"), Version("xxh3:2")


def window(key: str, version: Version = ONE, offset: int = 1) -> ShownWindow:
    return ShownWindow(key=key, version=version, offset=offset, limit=None)


def test_only_the_version_seen_last_counts_and_the_owners_own_change_carries_whole_files() -> None:
    shown = ShownWindows()
    shown.show("a", window("f"), whole_file=True)
    shown.show("a", window("f", offset=5))
    shown.carry("a", "f", ONE, TWO)
    assert shown.was_shown("a", window("f", TWO))
    assert not shown.was_shown("a", window("f", TWO, offset=5))  # a part: its lines may move
    assert not shown.was_shown("a", window("f"))  # what it had before its change
    shown.show("a", window("f"))
    assert not shown.was_shown("a", window("f", TWO))
    shown.carry("a", "f", TWO, ONE)  # it changed a version it did not see last: nothing carries
    assert not shown.was_shown("a", window("f"))
    assert not shown.was_shown("b", window("f"))


def test_the_windows_held_are_bounded_per_owner_and_in_owners() -> None:
    shown = ShownWindows(max_per_owner=3, max_owners=2)
    for key in "abcd":
        shown.show("a", window(key))
    assert [shown.was_shown("a", window(key)) for key in "abcd"] == [False, True, True, True]
    for offset in range(1, 6):
        shown.show("a", window("e", offset=offset))
    assert [shown.was_shown("a", window("e", offset=n)) for n in range(1, 6)] == [
        False,
        False,
        True,
        True,
        True,
    ]
    shown.show("b", window("f"))
    shown.show("c", window("f"))
    assert not shown.was_shown("a", window("e", offset=5))  # the least recent owner went
    assert shown.was_shown("b", window("f"))
    assert shown.was_shown("c", window("f"))
