"""The windows of text each owner was shown, so that a tool can answer a re-read in one line.

``ctx.fs.read`` always returns the content; a tool that shows it to a model
records the window here and, asked for the same window of the same version
again, may say that it is unchanged instead. Only the windows of the version an
owner saw last of each file count: once it was shown (or made) another version,
the older one is new to it again. A harness that drops earlier tool results
from the model's context calls :meth:`Context.forget_shown`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final

from ctxfs.core.versions import Version

__all__ = ["DEFAULT_MAX_SHOWN", "ShownWindow", "ShownWindows"]

DEFAULT_MAX_SHOWN: Final = 10_000
"""Windows remembered per owner; those of the least recently shown files are forgotten first."""


@dataclass(frozen=True, kw_only=True)
class ShownWindow:
    """A window of one version of a file, as a tool showed it whole."""

    key: str
    """The file's identity (:attr:`Operation.key`)."""
    version: Version
    offset: int
    limit: int | None
    """The lines asked for (None: the default window)."""


@dataclass(kw_only=True)
class _LastSeen:
    """The version of one file an owner saw last, and its windows (value: the whole file)."""

    version: Version
    windows: dict[tuple[int, int | None], bool] = field(default_factory=dict)


@dataclass(kw_only=True)
class _OwnerShown:
    """One owner's files, least recently shown first, and how many windows they hold."""

    files: OrderedDict[str, _LastSeen] = field(default_factory=OrderedDict)
    windows: int = 0

    def drop(self, key: str) -> _LastSeen | None:
        seen = self.files.pop(key, None)
        if seen is not None:
            self.windows -= len(seen.windows)
        return seen


class ShownWindows:
    """What each owner was shown, in this process, bounded per owner and in owners."""

    def __init__(self, *, max_per_owner: int = DEFAULT_MAX_SHOWN, max_owners: int = 1_000) -> None:
        self.max_per_owner = max_per_owner
        self.max_owners = max_owners
        self._lock = threading.Lock()
        self._owners: OrderedDict[str, _OwnerShown] = OrderedDict()

    def was_shown(self, owner: str, window: ShownWindow) -> bool:
        """Whether *owner* was shown *window* of the version it saw last (and kept it)."""
        with self._lock:
            shown = self._owners.get(owner)
            seen = None if shown is None else shown.files.get(window.key)
            if shown is None or seen is None or seen.version != window.version:
                return False
            if (window.offset, window.limit) not in seen.windows:
                return False
            shown.files.move_to_end(window.key)
            return True

    def show(self, owner: str, window: ShownWindow, *, whole_file: bool = False) -> None:
        """Remember that *owner* was shown *window* whole (with *whole_file*: every line)."""
        with self._lock:
            shown = self._owners.setdefault(owner, _OwnerShown())
            self._owners.move_to_end(owner)
            seen = shown.files.get(window.key)
            if seen is None or seen.version != window.version:
                shown.drop(window.key)
                seen = shown.files[window.key] = _LastSeen(version=window.version)
            place = (window.offset, window.limit)
            if place not in seen.windows:
                shown.windows += 1
            seen.windows[place] = whole_file or seen.windows.get(place, False)
            shown.files.move_to_end(window.key)
            while shown.windows > self.max_per_owner:
                if len(shown.files) > 1:
                    shown.drop(next(iter(shown.files)))
                else:
                    del seen.windows[next(iter(seen.windows))]
                    shown.windows -= 1
            if len(self._owners) > self.max_owners:
                self._owners.popitem(last=False)

    def carry(self, owner: str, key: str, before: Version, after: Version) -> None:
        """*owner* changed the file *key* from *before* to *after* itself.

        The whole-file windows it was shown of *before* count as shown of *after*:
        it knows what it changed. Any other window of the file is forgotten.
        """
        with self._lock:
            shown = self._owners.get(owner)
            seen = None if shown is None else shown.drop(key)
            if shown is None or seen is None or seen.version != before:
                return
            kept = {place: True for place, whole_file in seen.windows.items() if whole_file}
            if kept:
                shown.files[key] = _LastSeen(version=after, windows=kept)
                shown.windows += len(kept)

    def forget(self, owner: str) -> None:
        """Forget what *owner* was shown: its next read of any window shows the text."""
        with self._lock:
            self._owners.pop(owner, None)
