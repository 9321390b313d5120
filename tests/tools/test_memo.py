"""The search memo: what it remembers of a file, and when it no longer trusts it."""

from __future__ import annotations

import time

from ctxfs.core import FileKind, Stat, Version
from ctxfs.tools.builtin.grep.memo import SETTLE_SECONDS, Known, ScanMemo, stamp_of


def _file(*, size: int = 3, mtime: float | None = None, version: str | None = "xxh3:1") -> Stat:
    stamp = None if version is None else Version(version)
    return Stat(path="a.txt", kind=FileKind.FILE, size=size, mtime=mtime, version=stamp)


def test_a_count_and_a_reason_come_back_while_the_file_is_unchanged() -> None:
    memo = ScanMemo()
    memo.learn(_file(), count=7)
    assert memo.known(_file()) == Known(count=7)
    memo.learn(_file(), skipped="binary_file")
    assert memo.known(_file()) == Known(skipped="binary_file")


def test_a_changed_file_is_not_known() -> None:
    memo = ScanMemo()
    memo.learn(_file(), count=2)
    assert memo.known(_file(version="xxh3:2")) is None
    assert memo.known(_file(size=4)) is None


def test_a_time_alone_is_trusted_only_once_it_has_settled() -> None:
    fresh = _file(mtime=time.time(), version=None)
    assert stamp_of(fresh) is None
    memo = ScanMemo()
    memo.learn(fresh, count=1)
    assert memo.files == {}
    settled = _file(mtime=time.time() - SETTLE_SECONDS - 1, version=None)
    memo.learn(settled, count=1)
    assert memo.known(settled) == Known(count=1)


def test_what_does_not_fit_is_not_remembered() -> None:
    memo = ScanMemo(max_files=1)
    memo.learn(_file(), count=1 << 24)  # too many matches for the packed count
    assert memo.files == {}
    memo.learn(_file(), count=(1 << 24) - 1)
    assert memo.known(_file()) == Known(count=(1 << 24) - 1)
    other = Stat(path="b.txt", kind=FileKind.FILE, size=3, version=Version("xxh3:1"))
    memo.learn(other, count=1)
    assert memo.known(other) is None  # over max_files
