"""The session store's port: the contents agents saw and wrote, and the steps they took."""

from __future__ import annotations

import json
import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, TypeVar

from ctxfs.core.backend.files import NO_PERMISSIONS, Permissions
from ctxfs.core.errors import Unavailable
from ctxfs.core.versions import Version

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_BYTES_PER_OWNER",
    "DEFAULT_MAX_IDLE_DAYS",
    "DEFAULT_MAX_STEPS",
    "UNDONE",
    "UNRECORDED",
    "Checkpoint",
    "FileChange",
    "SessionStore",
    "Step",
    "decoded",
    "reference_entry",
    "step_names",
]

T = TypeVar("T")
D = TypeVar("D")

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES: Final = 256 * 1024 * 1024
"""Bytes of file contents a store keeps in all before giving up the least recently used."""
DEFAULT_MAX_BYTES_PER_OWNER: Final = 64 * 1024 * 1024
"""Bytes of file contents kept for one owner; a file larger than this is never kept."""
DEFAULT_MAX_STEPS: Final = 1_000
"""Steps kept per owner; the oldest are given up first (they can no longer be undone)."""
DEFAULT_MAX_IDLE_DAYS: Final = 30
"""Days without a call naming an owner after which a store forgets its contents and history."""
ACTIVITY_LAG: Final = 60.0
"""Seconds by which the last activity a store notes for an owner may trail its newest call."""
SWEEP_SECONDS: Final = 3600.0
"""Seconds between two looks of one store object for owners idle too long."""
SWEEP_CONTENTS: Final = 32
"""Contents one look lets go of at most (the next call looks again while more are due)."""

UNRECORDED: Final = "unrecorded"
"""The kind of the change in a step that stands for steps the store failed to record."""
UNDONE: Final = "undone"
"""The kind of the change in a step that records an undo of steps a checkpoint holds
(:attr:`FileChange.undid`): no rewind to that checkpoint can make them again."""


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """One file's part of a step: the versions it held before and after (None: absent)."""

    path: str
    """The file's canonical path, as the change spelled it."""
    key: str
    """The file's identity (:attr:`Operation.key`)."""
    kind: str
    """What changed it: an :class:`~ctxfs.core.OpKind` value (``write``, ``edit``, ``move``...)."""
    before: Version | None
    after: Version | None
    moved_from: str | None = None
    """For a move's destination: the path the file came from."""
    directory: bool = False
    """Whether the path is a directory the step created."""
    permissions: Permissions = NO_PERMISSIONS
    """The file's permissions before the change, where the store keeps them."""
    undid: int | None = None
    """For an :data:`UNDONE` change: the oldest step the undo undid."""
    resolved: str | None = None
    """Where the path led within the root (:attr:`Operation.resolved`), where known."""
    root: str | None = None
    """The root it was made under (:attr:`Backend.root_identity`), where known."""

    def encode(self) -> dict[str, Any]:
        """The change as plain JSON data (what shared stores keep)."""
        plain = {field.name: getattr(self, field.name) for field in fields(self)}
        del plain["permissions"]
        return plain | {"mode": self.permissions.mode, "ownership": self.permissions.owner}

    @classmethod
    def decode(cls, data: dict[str, Any]) -> FileChange:
        """The change :meth:`encode` gave *data* for."""
        return cls(
            path=str(data["path"]),
            key=str(data["key"]),
            kind=str(data["kind"]),
            before=None if data["before"] is None else Version(data["before"]),
            after=None if data["after"] is None else Version(data["after"]),
            moved_from=data.get("moved_from"),
            directory=bool(data.get("directory", False)),
            permissions=Permissions(
                mode=_mode(data.get("mode")), owner=_ids(data.get("ownership"))
            ),
            undid=data.get("undid"),
            resolved=data.get("resolved"),
            root=data.get("root"),
        )


def _mode(data: Any) -> int | None:
    """The permission bits :meth:`FileChange.encode` gave *data* for, if any.

    Raises:
        ValueError: *data* is no such bits.

    """
    if data is None or (type(data) is int and 0 <= data <= 0o7777):
        return data
    raise ValueError(f"not a file's permission bits: {data!r:.40}")


def _ids(data: Any) -> tuple[int, int] | None:
    """The owner and group ids :meth:`FileChange.encode` gave *data* for (a list), if any.

    Raises:
        ValueError: *data* is no such list.

    """
    if data is None:
        return None
    if not (isinstance(data, list) and len(data) == 2 and all(_an_id(n) for n in data)):
        raise ValueError(f"not an owner and a group id: {data!r:.40}")
    return data[0], data[1]


def _an_id(number: object) -> bool:
    return type(number) is int and 0 <= number < 2**32 - 1


@dataclass(frozen=True, kw_only=True)
class Step:
    """What one call of an owner changed (an edit, a patch over several files, a move)."""

    number: int
    """The step's place in its owner's history: 1, 2, ..., never reused."""
    changes: tuple[FileChange, ...]
    at: float
    """When it was recorded (seconds since the epoch)."""

    @property
    def undid(self) -> int | None:
        """For the record of an undo (an :data:`UNDONE` change): the oldest step it undid.

        Such a step changed no file: an undo passes it by.
        """
        return next((c.undid for c in self.changes if c.kind == UNDONE), None)

    def encode(self) -> str:
        """The step as a short JSON text (what shared stores keep)."""
        return json.dumps(
            {"number": self.number, "at": self.at, "changes": [c.encode() for c in self.changes]}
        )

    @classmethod
    def decode(cls, text: str | bytes) -> Step:
        """The step :meth:`encode` gave *text* for.

        Raises:
            ValueError: *text* is no encoded step.

        """
        try:
            data = json.loads(text)
            return cls(
                number=int(data["number"]),
                at=float(data["at"]),
                changes=tuple(FileChange.decode(change) for change in data["changes"]),
            )
        except (TypeError, KeyError, ValueError) as error:
            raise ValueError(f"not an encoded step: {text!r:.80}") from error


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """A point in an owner's history to rewind to: after step :attr:`step`."""

    id: str
    """``cp<n>`` for the owner's n-th checkpoint (:meth:`id_of`), a form no label takes."""
    label: str | None
    step: int
    """The number of the last step before the checkpoint (0: before any)."""
    at: float

    @staticmethod
    def id_of(number: int) -> str:
        """The id of an owner's *number*-th checkpoint."""
        return f"cp{number}"

    @staticmethod
    def is_id(text: str) -> bool:
        """Whether *text* has the form of a checkpoint's id (which no label may have)."""
        return text.startswith("cp") and text[2:].isascii() and text[2:].isdigit()

    def encode(self) -> str:
        """The checkpoint as a short JSON text (what shared stores keep)."""
        return json.dumps({"id": self.id, "label": self.label, "step": self.step, "at": self.at})

    @classmethod
    def decode(cls, text: str | bytes) -> Checkpoint:
        """The checkpoint :meth:`encode` gave *text* for.

        Raises:
            ValueError: *text* is no encoded checkpoint.

        """
        try:
            data = json.loads(text)
            label = data["label"]
            return cls(
                id=str(data["id"]),
                label=None if label is None else str(label),
                step=int(data["step"]),
                at=float(data["at"]),
            )
        except (TypeError, KeyError, ValueError) as error:
            raise ValueError(f"not an encoded checkpoint: {text!r:.80}") from error


class SessionStore(ABC):
    """The port: file contents by version, and each owner's steps and checkpoints.

    Contents are kept per owner: :meth:`content` answers an owner only for a
    version that owner was given to keep (a read, its own change), so no owner
    reads another's through the store. Contents are bounded per owner and in
    all (:attr:`max_bytes_per_owner`, :attr:`max_bytes`), the least recently
    used given up first, but those an owner's kept steps name (:func:`step_names`:
    what an undo puts back) only after all others: within its bound, after the
    owner's others; in all, after every content no owner keeping it names. Steps are
    bounded per owner (:attr:`max_steps`), the oldest given up first. An owner
    no call has named for :attr:`max_idle_days` (an agent long gone) has its
    contents, steps and checkpoints given up; its numbering goes on, so no step
    number or checkpoint id it was given is given again. What was given up is
    gone: the store never guesses.
    Implementations make each call atomic against every other user of the
    store, never block the event loop for long, and raise ``Unavailable``
    rather than guess.

    Every call naming an owner (but :meth:`forget_owner`) starts with
    :meth:`active`, which notes the owner's activity through :meth:`note_active`
    and gives up idle owners a little at a time through :meth:`forget_idle`.
    """

    def __init__(
        self,
        *,
        max_bytes: int,
        max_bytes_per_owner: int,
        max_steps: int,
        max_idle_days: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if min(max_bytes, max_bytes_per_owner, max_steps, max_idle_days) < 1:
            raise ValueError("the bounds of a session store must be positive")
        self.max_bytes = max_bytes
        self.max_bytes_per_owner = max_bytes_per_owner
        self.max_steps = max_steps
        self.max_idle_days = max_idle_days
        self.clock = clock
        """Seconds since the epoch, what idleness is measured by (a test passes its own)."""
        self._noted: dict[str, float] = {}
        self._looked_at = -math.inf
        self._look_every = 0.0

    @property
    def largest_kept(self) -> int:
        """The most bytes a content may hold to be kept: it is within both bounds."""
        return min(self.max_bytes, self.max_bytes_per_owner)

    def fits(self, data: bytes) -> bool:
        """Whether *data* is within both bounds: a content larger than either is never kept."""
        return len(data) <= self.largest_kept

    async def active(self, owner: str) -> None:
        """Note that *owner* calls, and give up some of the owners idle too long if it is time.

        The activity is noted once per :data:`ACTIVITY_LAG` per owner and store object; a
        look comes every :data:`SWEEP_SECONDS` (at once when the clock went back), and at
        the next call while idle owners remain. Neither fails the call: a store that
        cannot note or look now is logged, and tried again later (a failed look after
        :data:`ACTIVITY_LAG`, so that a store failing for long logs it once a minute; a
        look cancelled with its call at the next call).
        """
        now = self.clock()
        if not 0 <= now - self._noted.get(owner, -math.inf) < ACTIVITY_LAG:
            try:
                await self.note_active(owner, now)
                self._noted[owner] = now
            except Exception as error:  # (a note may fail; the call goes on)
                log.debug("could not note the activity of %r: %s", owner, error)
        if not 0 <= now - self._looked_at < self._look_every:
            self._looked_at, self._look_every = now, SWEEP_SECONDS
            noted = list(self._noted.items())  # (another thread's loop may note meanwhile)
            self._noted = {o: t for o, t in noted if 0 <= now - t < ACTIVITY_LAG}
            more = True  # (until the look says otherwise: it may fail or be cancelled)
            try:
                more = await self.forget_idle(now - self.max_idle_days * 86_400.0)
            except Exception as error:  # (a look may fail; the call goes on)
                more, self._look_every = False, ACTIVITY_LAG
                log.warning("could not give up the owners idle in %r: %s", self, error)
            finally:
                if more:
                    self._look_every = 0.0  # (looked for again at the next call)

    @abstractmethod
    async def note_active(self, owner: str, at: float) -> None:
        """Note that *owner* called at *at* (the last note wins), without waiting for a lock.

        An owner being given up for idleness (:meth:`forget_idle`) keeps what it has not yet
        lost from then on.

        Raises:
            Unavailable: The store cannot be reached or written.
            Busy: Another user of the store holds it now.

        """

    @abstractmethod
    async def forget_idle(self, before: float) -> bool:
        """Give up some of what owners last active before *before* keep; return whether more is due.

        An idle owner's checkpoints go, then its steps, oldest first (:meth:`given_up`
        follows them, and covers every step it had once all went); its numbering stays (the
        next step and checkpoint continue it). Then its contents go, :data:`SWEEP_CONTENTS`
        at most per call. Each call is atomic and deals with one owner, and a store may do
        less per call, so that a call stays short whatever an owner kept; it does not wait
        for another user's lock. An owner active again keeps what it has not yet lost.

        Raises:
            Unavailable: The store cannot be reached or written.
            Busy: Another user of the store holds it now.

        """

    @abstractmethod
    async def keep(self, owner: str, version: Version, data: bytes) -> bool:
        """Keep *data*, the content of *version*, for *owner* (again: it becomes the most recent).

        Returns False when the store gives it up at once: larger than a bound, or a
        bound filled by contents that steps name (the owner's, or the store's by any
        owner's steps).

        Raises:
            Unavailable: The store cannot be reached or written.

        """

    @abstractmethod
    async def content(self, owner: str, version: Version) -> bytes | None:
        """The content of *version*, if it was kept for *owner* and is kept still.

        Raises:
            Unavailable: The store cannot be reached or read.

        """

    async def reference(self, owner: str, version: Version) -> str | None:
        """The path kept for *owner* for *version* (its :func:`reference_entry`), if it is still.

        For a backend that keeps versions itself (``Capabilities.kept_versions``), the
        session memory keeps a reference instead of the bytes: kept like a content (per
        owner, counting its path's bytes against the bounds, given up with the least
        recently used) through :meth:`keep` and :meth:`record`, so a store does not
        override this; :meth:`content` does not answer for *version* then.

        Raises:
            Unavailable: The store cannot be reached or read.

        """
        key, _ = reference_entry(owner, version, "")
        path = await self.content(owner, key)
        return None if path is None else path.decode("utf-8", "surrogateescape")

    @abstractmethod
    async def record(
        self,
        owner: str,
        changes: Sequence[FileChange],
        *,
        at: float,
        contents: Sequence[tuple[Version, bytes]] = (),
    ) -> Step:
        """Append a step of *changes* made at *at* to *owner*'s history; return it.

        Also keeps each ``(version, data)`` of *contents* for *owner* as :meth:`keep`
        does, in order (the last becomes the most recent; one larger than a bound is
        not kept), all in the same atomic call: a committed change costs the store
        one round trip. The bounds hold again once the step names its contents and
        the steps beyond :attr:`max_steps` are given up.

        Raises:
            Unavailable: The store cannot be reached or written.

        """

    @abstractmethod
    async def steps(self, owner: str, *, after: int = 0) -> list[Step]:
        """*owner*'s steps numbered above *after* that are kept, oldest first.

        Raises:
            Unavailable: The store cannot be reached or read, or holds a damaged step.

        """

    @abstractmethod
    async def given_up(self, owner: str) -> int:
        """The highest number of *owner*'s steps given up (:attr:`max_steps`, idleness; 0: none).

        Steps undone (:meth:`drop_steps`) are not given up: a rewind to a checkpoint
        needs every step after it, and is possible while this is not above its step.

        Raises:
            Unavailable: The store cannot be reached or read.

        """

    @abstractmethod
    async def drop_steps(self, owner: str, numbers: Sequence[int]) -> None:
        """Take the steps *numbers* out of *owner*'s history (they were undone).

        Raises:
            Unavailable: The store cannot be reached or written.

        """

    @abstractmethod
    async def mark(self, owner: str, label: str | None, *, at: float) -> Checkpoint:
        """Mark a checkpoint after *owner*'s latest step; its id is new for the owner.

        Raises:
            Unavailable: The store cannot be reached or written.

        """

    @abstractmethod
    async def checkpoints(self, owner: str) -> list[Checkpoint]:
        """*owner*'s checkpoints, oldest first.

        Raises:
            Unavailable: The store cannot be reached or read, or holds a damaged checkpoint.

        """

    @abstractmethod
    async def forget_owner(self, owner: str) -> None:
        """Forget *owner*'s contents, steps and checkpoints.

        Raises:
            Unavailable: The store cannot be reached or written.

        """

    async def aclose(self) -> None:  # noqa: B027 - a store with nothing to release keeps this
        """Release what the store holds (connections); it may not be used afterwards."""

    def close(self) -> None:  # noqa: B027 - a store that opens nothing before its first call keeps this
        """Release, blocking, what the store took when it was made (a file), for one never used.

        Whoever opened a store and fails before using it calls this; :meth:`aclose` otherwise.
        """


def reference_entry(owner: str, version: Version, path: str) -> tuple[Version, bytes]:
    """The entry that keeps *version* as a reference to *path*: a version of its own, and the path.

    No backend's version starts with NUL; the owner in it keeps each owner's
    references apart (two owners may have read one version at two paths).
    """
    key = Version(f"\0ref\0{len(owner)}:{owner}\0{version}")
    return key, path.encode("utf-8", "surrogateescape")


def step_names(owner: str, changes: Iterable[FileChange]) -> tuple[Version, ...]:
    """The contents a step of *owner* with *changes* names, each once, in order.

    Each version a change held before and after, and its :func:`reference_entry`:
    whichever of them is kept, an undo of the step needs it.
    """
    named: dict[Version, None] = {}
    for change in changes:
        for version in (change.before, change.after):
            if version is not None:
                named[version] = named[reference_entry(owner, version, "")[0]] = None
    return tuple(named)


def decoded(decode: Callable[[T], D], texts: Iterable[T], *, store: str, hint: str) -> list[D]:
    """Each of *texts* decoded; one that is damaged makes the *store* ``Unavailable``."""
    try:
        return [decode(text) for text in texts]
    except ValueError as error:
        raise Unavailable(
            f"the session store {store} holds a damaged entry: {error}", retryable=False, hint=hint
        ) from error
