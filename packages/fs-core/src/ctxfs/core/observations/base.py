"""The observation store's port: what a store keeps, and the calls it answers."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from ctxfs.core.errors import InvalidArgument
from ctxfs.core.versions import Version

__all__ = [
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_OBSERVATIONS",
    "DEFAULT_MAX_PER_OWNER",
    "Change",
    "LineRanges",
    "Observation",
    "ObservationStore",
    "shown_url",
    "stored_bytes",
    "stored_owner",
    "stored_text",
    "url_count",
]

DEFAULT_MAX_OBSERVATIONS: Final = 100_000
"""Observations the in-process store keeps in all (about 30 MB)."""
DEFAULT_MAX_PER_OWNER: Final = 10_000
"""Observations the in-process store keeps for one owner: no one owner fills the store."""
DEFAULT_MAX_AGE: Final = 7 * 24 * 3600.0
"""Seconds an observation lasts in a shared store without being renewed."""

LineRanges = tuple[tuple[int, int], ...]
"""Line ranges, 1-based and inclusive, sorted and apart."""

Change = Callable[["Observation | None"], "Observation | None"]
"""What :meth:`ObservationStore.update` applies: the new observation from the current one."""


@dataclass(frozen=True, kw_only=True)
class Observation:
    """What one owner last saw of one file."""

    version: Version
    complete: bool
    """Whether the owner saw the whole file at that version."""
    lines: LineRanges = ()
    """The lines the owner saw uncut at that version, while the observation is incomplete."""
    path: str = ""
    """The canonical path the owner last reached the file by ("" where not told)."""

    def encode(self) -> str:
        """The observation as a short JSON text (what shared stores keep)."""
        return json.dumps([self.version, self.complete, [list(r) for r in self.lines], self.path])

    @classmethod
    def decode(cls, text: str | bytes) -> Observation:
        """The observation :meth:`encode` gave *text* for (one without a path too).

        Raises:
            ValueError: *text* is no encoded observation.

        """
        try:
            version, complete, lines, *path = json.loads(text)
            return cls(
                version=Version(str(version)),
                complete=bool(complete),
                lines=tuple((int(first), int(last)) for first, last in lines),
                path=str(path[0]) if path else "",
            )
        except (TypeError, ValueError) as error:
            raise ValueError(f"not an encoded observation: {text!r:.80}") from error

    @classmethod
    def stored(cls, text: str | bytes | None) -> Observation | None:
        """The observation a shared store holds as *text*: None if absent or damaged."""
        if text is None:
            return None
        try:
            return cls.decode(text)
        except ValueError:
            return None


class ObservationStore(ABC):
    """The port: observations by (owner, file key).

    :meth:`update` is atomic against every other user of the store; no call blocks
    the event loop for long, and a store raises ``Unavailable`` (or ``Busy``) rather
    than guess.
    """

    @abstractmethod
    async def get(self, owner: str, key: str) -> Observation | None:
        """What *owner* last saw of the file *key*, if the store remembers it.

        Raises:
            Unavailable: The store cannot be reached or read.

        """

    @abstractmethod
    async def owned(self, owner: str) -> dict[str, Observation]:
        """Every file key *owner* has an observation of, with it (empty for an unknown owner).

        Entries past a shared store's ``max_age`` and damaged ones are left out. A key
        that is not UTF-8 comes back as :func:`stored_text` gives it (its :meth:`get`
        answers the same). A read, not a snapshot: concurrent updates may or may not show.

        Raises:
            Unavailable: The store cannot be reached or read.

        """

    @abstractmethod
    async def update(self, owner: str, key: str, change: Change) -> None:
        """Replace what *owner* saw of *key* by ``change(current)`` (None forgets it), atomically.

        *change* may run more than once (a store that retries a conflicting
        transaction); it must not have side effects.

        Raises:
            Unavailable: The store cannot be reached or written.
            Busy: Other writers kept the entry busy past the store's timeout.

        """

    async def put(self, owner: str, key: str, observation: Observation | None) -> None:
        """Make *observation* what *owner* saw of *key* (None forgets it), whatever it was.

        An :meth:`update` that needs not read the entry (a store may do it in one write).

        Raises:
            Unavailable: The store cannot be reached or written.
            Busy: Other writers kept the entry busy past the store's timeout.

        """
        await self.update(owner, key, lambda _: observation)

    async def forget_owner(self, owner: str) -> None:  # noqa: B027 - see the docstring
        """Forget everything *owner* saw (an owner that ended: an MCP session, an agent run).

        The default does nothing: the entries expire or are evicted.

        Raises:
            Unavailable: The store cannot be reached or written.

        """

    async def aclose(self) -> None:  # noqa: B027 - a store with nothing to release keeps this
        """Release what the store holds (connections); it may not be used afterwards."""

    def close(self) -> None:  # noqa: B027 - a store that opens nothing before its first call keeps this
        """Release, blocking, what the store took when it was made (a file), for one never used.

        Whoever opened a store and fails before using it calls this; :meth:`aclose` otherwise.
        """


def stored_owner(owner: str) -> bytes:
    """*owner* as the bytes a shared store keeps: one string, one spelling (lone surrogates too)."""
    return owner.encode("utf-8", "surrogatepass")


def stored_bytes(text: str) -> bytes:
    """*text* (a file key, a version) as the bytes a shared store keeps.

    A name's escapes (``os.fsdecode``'s) are the bytes they stand for, as the file system has them.
    """
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # other lone surrogates (an owner can be any string)
        return text.encode("utf-8", "surrogatepass")


def stored_text(raw: bytes) -> str:
    """The text a shared store keeps as *raw*: ``stored_bytes(stored_text(raw)) == raw``.

    Bytes that are not UTF-8 come back as ``os.fsdecode``'s escapes.
    """
    return raw.decode("utf-8", "surrogateescape")


def shown_url(url: str) -> str:
    """*url* without its password, for messages and reprs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def url_count(url: str, query: dict[str, str], name: str, default: int, *, store: str) -> int:
    """Take option *name* out of *query*, of the *store* URL *url*: a positive whole number."""
    text = query.pop(name, None)
    if text is None:
        return default
    if not text.isdecimal() or int(text) < 1:
        raise InvalidArgument(
            f"{name}={text!r} in {shown_url(url)!r} is not a positive whole number",
            details={store: shown_url(url)},
        )
    return int(text)
