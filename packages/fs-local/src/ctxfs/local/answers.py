"""Search answers given again (the next page) while nothing below the searched directory changed.

Unchanged means no entry below the directory, nor the directory or a parent up to the root, has a
status change time (``ctime``, which every change moves on and no call sets back) at or after the
search began, less :data:`~ctxfs.local.listing.SETTLE_SECONDS` for the kernel's coarse clock.
Directories ripgrep never enters are not looked at (but ``.git/info/exclude`` is). A check that
would ``stat`` more entries than the search read files, plus a margin, says "changed": searching
again is then as cheap.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Final

from ctxfs.core import FileMatches, FileSearch
from ctxfs.local.listing import SETTLE_SECONDS

__all__ = ["RecentAnswers", "changed_since"]

_DIRECTORY: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MARGIN: Final = 10_000
"""Entries a check may stat beyond the files the search read."""


@dataclass(frozen=True, kw_only=True)
class _Answer:
    since_ns: int
    found: FileMatches


class RecentAnswers:
    """The last *max_answers* complete answers, holding *max_files* files in all at most.

    A change within *settle_seconds* before a search began counts as made after it.
    """

    def __init__(
        self,
        *,
        max_answers: int = 16,
        max_files: int = 500_000,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        self.max_answers, self.max_files = max_answers, max_files
        self.settle_ns = int(settle_seconds * 1e9)
        self._answers: OrderedDict[FileSearch, _Answer] = OrderedDict()
        self._lock = threading.Lock()

    def started(self) -> int:
        """The time to pass to :meth:`remember`: taken before the search starts."""
        return time.time_ns() - self.settle_ns

    def remember(self, search: FileSearch, found: FileMatches, *, since_ns: int) -> None:
        """Keep *found*, the complete answer to *search* started at *since_ns*.

        Not a listing: checking one would cost more than listing again.
        """
        if search.pattern is None or not found.complete or len(found.counts) > self.max_files:
            return
        question = _question(search)
        with self._lock:
            self._answers[question] = _Answer(since_ns=since_ns, found=found)
            self._answers.move_to_end(question)
            held = sum(len(answer.found.counts) for answer in self._answers.values())
            while len(self._answers) > self.max_answers or held > self.max_files:
                _, oldest = self._answers.popitem(last=False)
                held -= len(oldest.found.counts)

    def clear(self) -> None:
        """Forget every answer."""
        with self._lock:
            self._answers.clear()

    def holds(self, search: FileSearch) -> bool:
        """Whether an answer to *search* is kept (it may be out of date: see :meth:`recall`)."""
        with self._lock:
            return _question(search) in self._answers

    def recall(self, root_fd: int, search: FileSearch) -> FileMatches | None:
        """The answer to *search*, if one is kept and nothing it covers has changed since."""
        question = _question(search)
        with self._lock:
            answer = self._answers.get(question)
        if answer is None:
            return None
        budget = (answer.found.searched or 0) + _MARGIN
        if changed_since(root_fd, search, answer.since_ns, budget=budget):
            with self._lock:
                if self._answers.get(question) is answer:  # not a newer one, kept meanwhile
                    del self._answers[question]
            return None
        return answer.found


def _question(search: FileSearch) -> FileSearch:
    """*search* without what does not change its answer."""
    return replace(search, seconds=None, found_so_far=None)


def changed_since(root_fd: int, search: FileSearch, since_ns: int, *, budget: int) -> bool:
    """Whether anything *search* covers changed status at or after *since_ns* (see above).

    True also when the directory is gone, or more than *budget* entries would be looked at.
    """
    try:
        fd = _descend(root_fd, search.path, since_ns)
    except OSError:
        return True
    return fd is None or _tree_changed(fd, search, since_ns, budget)


def _descend(root_fd: int, path: str, since_ns: int) -> int | None:
    """The directory *path* opened, None if it or a parent on the way changed status."""
    names = [part for part in path.split("/") if part]
    fd = os.open(".", _DIRECTORY, dir_fd=root_fd)
    while os.fstat(fd).st_ctime_ns < since_ns:
        if not names:
            return fd
        try:
            child = os.open(names.pop(0), _DIRECTORY, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    os.close(fd)
    return None


class _Changed(Exception):
    """Something below the directory changed, or the check ran out of budget."""


def _tree_changed(top: int, search: FileSearch, since_ns: int, budget: int) -> bool:
    """Whether an entry below the directory *top* (closed here) changed, depth first."""
    sweep = _Sweep(search=search, since_ns=since_ns, budget=budget)
    held: list[tuple[int, list[str]]] = [(top, [])]  # open directories, subdirectories left
    try:
        held[-1] = (top, sweep.subdirectories(top))
        while held:
            fd, left = held[-1]
            if not left:
                os.close(held.pop()[0])
                continue
            held.append((os.open(left.pop(), _DIRECTORY, dir_fd=fd), []))
            held[-1] = (held[-1][0], sweep.subdirectories(held[-1][0]))
    except (_Changed, OSError):  # OSError: an entry went away meanwhile, or became a link
        return True
    finally:
        for fd, _ in held:
            os.close(fd)
    return False


@dataclass(kw_only=True)
class _Sweep:
    search: FileSearch
    since_ns: int
    budget: int

    def subdirectories(self, fd: int) -> list[str]:
        """The subdirectories of *fd* to look into; raises :class:`_Changed`."""
        found: list[str] = []
        with os.scandir(fd) as entries:
            for entry in entries:
                self.budget -= 1
                info = entry.stat(follow_symlinks=False)
                if self.budget < 0:
                    raise _Changed
                if stat.S_ISDIR(info.st_mode) and self._never_entered(entry.name):
                    if entry.name == ".git" and _exclude_changed(fd, self.since_ns):
                        raise _Changed
                    continue  # its own time moves with its entries: not looked at either
                if info.st_ctime_ns >= self.since_ns:
                    raise _Changed
                if stat.S_ISDIR(info.st_mode):
                    found.append(entry.name)
        return found

    def _never_entered(self, name: str) -> bool:
        """Whether ripgrep skips the directory *name* (hidden, or skipped by name)."""
        return name in self.search.skip_dirs or (name.startswith(".") and not self.search.hidden)


def _exclude_changed(dir_fd: int, since_ns: int) -> bool:
    """Whether ``.git/info/exclude`` (an ignore file ripgrep reads) changed, or is new."""
    for path in (".git/info", ".git/info/exclude"):
        try:
            if os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_ctime_ns >= since_ns:
                return True
        except FileNotFoundError:
            return False
    return False
