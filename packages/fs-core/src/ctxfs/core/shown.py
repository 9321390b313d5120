"""The windows of text each owner was shown, so that a tool can answer a re-read in one line.

``ctx.fs.read`` always returns the content; a tool that shows it to a model
records the window here and, asked for the same window of the same version
again, may say that it is unchanged instead. A harness that drops earlier tool
results from the model's context calls :meth:`Context.forget_shown`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Final

from ctxfs.core.versions import Version

__all__ = ["DEFAULT_MAX_SHOWN", "ShownWindow", "ShownWindows"]

DEFAULT_MAX_SHOWN: Final = 10_000
"""Windows remembered per owner; the least recently shown are forgotten first."""


@dataclass(frozen=True, kw_only=True)
class ShownWindow:
    """A window of one version of a file, as a tool showed it whole."""

    key: str
    """The file's identity (:attr:`Operation.key`)."""
    version: Version
    offset: int
    limit: int | None
    """The lines asked for (None: the default window)."""


class ShownWindows:
    """What each owner was shown, in this process, bounded per owner and in owners."""

    def __init__(self, *, max_per_owner: int = DEFAULT_MAX_SHOWN, max_owners: int = 1_000) -> None:
        self.max_per_owner = max_per_owner
        self.max_owners = max_owners
        self._lock = threading.Lock()
        # each owner's windows, least recently shown first, and whether each was the whole file
        self._owners: OrderedDict[str, OrderedDict[ShownWindow, bool]] = OrderedDict()

    def was_shown(self, owner: str, window: ShownWindow) -> bool:
        """Whether *owner* was shown *window* (and has not forgotten it since)."""
        with self._lock:
            shown = self._owners.get(owner)
            if shown is None or window not in shown:
                return False
            shown.move_to_end(window)
            return True

    def show(self, owner: str, window: ShownWindow, *, whole_file: bool = False) -> None:
        """Remember that *owner* was shown *window* whole (with *whole_file*: every line)."""
        with self._lock:
            shown = self._owners.setdefault(owner, OrderedDict())
            self._owners.move_to_end(owner)
            shown[window] = whole_file or shown.get(window, False)
            shown.move_to_end(window)
            if len(shown) > self.max_per_owner:
                shown.popitem(last=False)
            if len(self._owners) > self.max_owners:
                self._owners.popitem(last=False)

    def carry(self, owner: str, key: str, before: Version, after: Version) -> None:
        """*owner* changed the file *key* from *before* to *after* itself.

        The whole-file windows it was shown of *before* count as shown of *after*:
        it knows what it changed.
        """
        with self._lock:
            shown = self._owners.get(owner)
            if shown is None:
                return
            carried = [
                replace(window, version=after)
                for window, whole_file in shown.items()
                if whole_file and window.key == key and window.version == before
            ]
            for window in carried:
                shown[window] = True
                shown.move_to_end(window)

    def forget(self, owner: str) -> None:
        """Forget what *owner* was shown: its next read of any window shows the text."""
        with self._lock:
            self._owners.pop(owner, None)
